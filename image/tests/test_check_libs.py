"""image/check_libs.py: a binary's loader and libraries, looked up in a root filesystem the way ld.so would."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from image_support import load

check_libs = load("check_libs")
TRUE = Path("/bin/true")


def host_lib(name: str) -> Path:
    for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu"):
        if (Path(d) / name).exists():
            return Path(d) / name
    pytest.fail(f"{name} not found on this machine (Debian's libc6)")


def rootfs(tmp_path: Path, libs=("libc.so.6",)) -> Path:
    """A root filesystem with the host's dynamic loader (behind a /lib64-style symlink) and `libs`."""
    interp, _ = check_libs.read_elf(TRUE.read_bytes())
    root = tmp_path / "rootfs"
    (root / "opt/libs").mkdir(parents=True)
    (root / "etc/ld.so.conf.d").mkdir(parents=True)
    (root / "etc/ld.so.conf.d/libs.conf").write_text("# where the libraries are\n/opt/libs\n")
    loader = Path(interp).resolve()
    shutil.copy(loader, root / "opt/libs" / loader.name)
    (root / Path(interp).parent.relative_to("/")).mkdir(parents=True, exist_ok=True)
    (root / interp.lstrip("/")).symlink_to(f"/opt/libs/{loader.name}")
    for lib in libs:
        shutil.copy(host_lib(lib), root / "opt/libs" / lib)
    return root


def test_reads_the_interpreter_and_needed_libraries_of_an_elf_file():
    interp, needed = check_libs.read_elf(TRUE.read_bytes())
    assert interp and interp.startswith("/lib")
    assert "libc.so.6" in needed


def test_a_root_filesystem_with_the_loader_and_libc_serves_bin_true(tmp_path, capsys):
    root = rootfs(tmp_path)
    assert check_libs.main([str(TRUE), str(root)]) == 0
    out = capsys.readouterr().out
    assert "libc.so.6 at /opt/libs/libc.so.6" in out
    assert "interpreter /lib" in out


def test_a_missing_library_is_named_with_what_needs_it_and_the_fix(tmp_path, capsys):
    root = rootfs(tmp_path, libs=())
    assert check_libs.main([str(TRUE), str(root)]) == 1
    err = capsys.readouterr().err
    assert "missing libc.so.6 (needed by true): in none of /opt/libs, /lib, /usr/lib" in err
    assert "add the Debian package that ships it to image/packages.txt" in err


def test_a_missing_interpreter_is_named(tmp_path, capsys):
    root = rootfs(tmp_path)
    interp, _ = check_libs.read_elf(TRUE.read_bytes())
    (root / interp.lstrip("/")).unlink()
    assert check_libs.main([str(TRUE), str(root)]) == 1
    assert f"missing interpreter {interp}: not in {root}" in capsys.readouterr().err


def test_a_statically_linked_binary_needs_nothing(tmp_path):
    # A minimal 64-bit little-endian ELF header with no program headers: no interpreter, no dynamic section.
    elf = b"\x7fELF\x02\x01\x01" + b"\0" * 9 + struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0, 64, 0, 0, 64, 56, 0, 64, 0, 0)
    assert check_libs.read_elf(elf) == (None, [])


def test_not_an_elf_file_is_refused(tmp_path, capsys):
    text = tmp_path / "script"
    text.write_text("#!/bin/sh\n")
    assert check_libs.main([str(text), str(tmp_path)]) == 2
    assert "not an ELF file" in capsys.readouterr().err
