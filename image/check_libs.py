#!/usr/bin/env python3
"""image/check_libs.py BINARY ROOTFS: checks that ROOTFS holds what BINARY needs to start: its ELF interpreter
(PT_INTERP) and every shared library it names (DT_NEEDED), and theirs in turn, found the way the dynamic loader
looks (the ROOTFS's /etc/ld.so.conf.d directories, then /lib and /usr/lib). Prints one line per library with where
it was found; exits 1 naming each missing one. Python 3 standard library only (no ldd: it would run the
binary's loader on the build machine, not the image's)."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

PT_INTERP, PT_DYNAMIC, DT_NEEDED, DT_STRTAB = 3, 2, 1, 5


class NotElf(Exception):
    pass


def read_elf(data: bytes) -> tuple[str | None, list[str]]:
    """(interpreter, needed libraries) of a 64- or 32-bit little- or big-endian ELF file."""
    if data[:4] != b"\x7fELF":
        raise NotElf("not an ELF file")
    bits = {1: 32, 2: 64}.get(data[4])
    order = {1: "<", 2: ">"}.get(data[5])
    if bits is None or order is None:
        raise NotElf(f"unknown ELF class {data[4]} or byte order {data[5]}")
    if bits == 64:
        phoff, phentsize, phnum = struct.unpack_from(order + "Q", data, 0x20)[0], *struct.unpack_from(order + "HH", data, 0x36)
        ph_fmt, dyn_fmt = order + "IIQQQQQQ", order + "qQ"
    else:
        phoff, phentsize, phnum = struct.unpack_from(order + "I", data, 0x1C)[0], *struct.unpack_from(order + "HH", data, 0x2A)
        ph_fmt, dyn_fmt = order + "IIIIIIII", order + "iI"
    segments = []
    for i in range(phnum):
        fields = struct.unpack_from(ph_fmt, data, phoff + i * phentsize)
        if bits == 64:
            p_type, _flags, offset, vaddr, _paddr, filesz = fields[:6]
        else:
            p_type, offset, vaddr, _paddr, filesz = fields[:5]
        segments.append((p_type, offset, vaddr, filesz))
    interp = None
    for p_type, offset, _vaddr, filesz in segments:
        if p_type == PT_INTERP:
            interp = data[offset:offset + filesz].rstrip(b"\0").decode()
    dynamic = [s for s in segments if s[0] == PT_DYNAMIC]
    if not dynamic:
        return interp, []  # statically linked
    _t, dyn_off, _va, dyn_size = dynamic[0]
    entries = []
    step = struct.calcsize(dyn_fmt)
    for pos in range(dyn_off, dyn_off + dyn_size, step):
        tag, val = struct.unpack_from(dyn_fmt, data, pos)
        if tag == 0:
            break
        entries.append((tag, val))
    strtab_vaddr = next((v for t, v in entries if t == DT_STRTAB), None)
    if strtab_vaddr is None:
        raise NotElf("dynamic section without a string table")
    # The string table's file offset: the loadable segment holding its address.
    strtab = next((off + strtab_vaddr - va for t, off, va, sz in segments if t == 1 and va <= strtab_vaddr < va + sz),
                  None)
    if strtab is None:
        raise NotElf("string table outside every loadable segment")
    needed = []
    for tag, val in entries:
        if tag == DT_NEEDED:
            end = data.index(b"\0", strtab + val)
            needed.append(data[strtab + val:end].decode())
    return interp, needed


def search_dirs(rootfs: Path) -> list[str]:
    dirs = []
    conf = rootfs / "etc/ld.so.conf.d"
    for f in sorted(conf.glob("*.conf")) if conf.is_dir() else []:
        for line in f.read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("/"):
                dirs.append(line)
    return dirs + ["/lib", "/usr/lib"]


def resolve(rootfs: Path, path: str) -> Path | None:
    """`path` inside rootfs, following symlinks inside it (absolute ones relative to rootfs)."""
    current = rootfs
    parts = [p for p in path.split("/") if p]
    hops = 0
    while parts:
        part = parts.pop(0)
        candidate = current / part
        if candidate.is_symlink():
            hops += 1
            if hops > 40:
                return None
            target = str(candidate.readlink())
            parts = [p for p in target.split("/") if p] + parts
            if target.startswith("/"):
                current = rootfs
            continue
        if part == "..":
            current = current.parent if current != rootfs else rootfs
            continue
        current = candidate
    return current if current.exists() else None


def check(binary: Path, rootfs: Path) -> tuple[list[str], list[str]]:
    """(found lines, problems)."""
    found, problems = [], []
    interp, needed = read_elf(binary.read_bytes())
    if interp is not None:
        if resolve(rootfs, interp) is None:
            problems.append(f"interpreter {interp}: not in {rootfs}")
        else:
            found.append(f"interpreter {interp}")
    dirs = search_dirs(rootfs)
    queue, seen = [(n, binary.name) for n in needed], set()
    while queue:
        lib, wanted_by = queue.pop(0)
        if lib in seen:
            continue
        seen.add(lib)
        hit = next((f"{d}/{lib}" for d in dirs if resolve(rootfs, f"{d}/{lib}") is not None), None)
        if hit is None:
            problems.append(f"{lib} (needed by {wanted_by}): in none of {', '.join(dirs)} of {rootfs}; add the "
                            "Debian package that ships it to image/packages.txt")
            continue
        found.append(f"{lib} at {hit}")
        _, more = read_elf(resolve(rootfs, hit).read_bytes())
        queue.extend((m, lib) for m in more)
    return found, problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: image/check_libs.py BINARY ROOTFS", file=sys.stderr)
        return 2
    binary, rootfs = Path(argv[0]), Path(argv[1])
    try:
        found, problems = check(binary, rootfs)
    except (OSError, NotElf) as e:
        print(f"image/check_libs.py: {binary}: {e}", file=sys.stderr)
        return 2
    for line in found:
        print(line)
    for p in problems:
        print(f"image/check_libs.py: {binary}: missing {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
