"""image/build (the offline image) and the Dockerfile (the image for users' CI): reproducible, and equivalent.

The Dockerfile cannot be built here (no base image can be pulled), so it is checked statically against what
image/build writes: the same package list and assembly script, the same user, entrypoint, binary path, working
directory, environment and labels, and the crate's version. The offline build is built for real, twice, around a
stand-in binary (a C program that answers --version like the controller; the controller itself is packaged and run
by e2e/tests/e2e/image.rs): the two archives must be byte-identical.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from image_support import IMAGE, ROOT, layer_file, layer_members, read_archive

VERSION = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["version"]
TAG = "aws-lb-controller:pytest"
REVISION = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout.strip()


def stand_in(path: Path, version: str, revision: str = "") -> Path:
    """A dynamically linked ELF binary that prints `aws-lb-controller VERSION (rev REVISION, clean)`, HEAD's
    revision by default."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("a C compiler (cc) is needed to build the stand-in binary; Rust's linker needs one too")
    src = path.with_suffix(".c")
    src.write_text('#include <stdio.h>\nint main(void) { puts("aws-lb-controller %s (rev %s, clean)"); return 0; }\n'
                   % (version, revision or git("rev-parse", "--short=12", "HEAD")))
    subprocess.run([cc, "-O1", "-o", str(path), str(src)], check=True)
    return path


def image_build(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(IMAGE / "build"), *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """Two builds of the same stand-in into fresh directories: (archive, archive, the stand-in, stderr)."""
    tmp = tmp_path_factory.mktemp("image-build")
    # A commit that stays put while other work lands on the branch.
    binary = stand_in(tmp / "aws-lb-controller", VERSION, REVISION[:12])
    archives, logs = [], []
    for n in (1, 2):
        run = image_build("--binary", str(binary), "--tag", TAG, "--out-dir", str(tmp / f"out{n}"))
        assert run.returncode == 0, f"image/build failed:\n{run.stderr}"
        archives.append(Path(run.stdout.strip().splitlines()[-1]))
        logs.append(run.stderr)
    return archives[0], archives[1], binary, logs[0]


def test_two_builds_of_the_same_inputs_are_byte_identical(builds):
    first, second, _, _ = builds
    assert first != second
    a, b = read_archive(first), read_archive(second)
    assert a["manifest"]["layers"] == b["manifest"]["layers"]
    assert first.read_bytes() == second.read_bytes()


def test_a_second_run_with_nothing_changed_reuses_the_archive(builds):
    first, _, binary, _ = builds
    before = first.stat().st_mtime_ns
    run = image_build("--binary", str(binary), "--tag", TAG, "--out-dir", str(first.parent))
    assert run.returncode == 0, run.stderr
    assert "is up to date" in run.stderr
    assert run.stdout.strip().splitlines()[-1] == str(first)
    assert first.stat().st_mtime_ns == before


def test_the_archive_is_named_and_labelled_from_the_binary_and_its_commit(builds):
    first, _, _, log = builds
    a = read_archive(first)
    assert a["index"]["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"] == TAG
    labels = a["config"]["config"]["Labels"]
    assert labels["org.opencontainers.image.revision"] == REVISION
    assert labels["org.opencontainers.image.version"] == VERSION
    assert labels["org.opencontainers.image.created"] == a["config"]["created"]
    # The creation time is the commit's, in UTC.
    committed = int(git("show", "-s", "--format=%ct", REVISION))
    assert {m.mtime for m in layer_members(a["layers"][0])} == {committed}
    assert re.search(r"layers [0-9.]+ MiB compressed, [0-9.]+ MiB uncompressed", log), log


def test_a_binary_of_another_version_is_refused(tmp_path):
    binary = stand_in(tmp_path / "aws-lb-controller", "9.9.9")
    run = image_build("--binary", str(binary), "--out-dir", str(tmp_path / "out"))
    assert run.returncode != 0
    assert f"is version 9.9.9, Cargo.toml says {VERSION}: rebuild it" in run.stderr


def test_the_runtime_is_a_distroless_style_debian_12(builds):
    a = read_archive(builds[0])
    runtime, app = a["layers"]
    members = {"/" + m.name: m for m in layer_members(runtime)}
    text = lambda name: layer_file(runtime, name.lstrip("/")).decode()  # noqa: E731
    # No shell, no package manager, no documentation but the copyright files, no iconv modules.
    for absent in ["/bin/sh", "/bin/bash", "/usr/bin/dpkg", "/usr/bin/apt-get", "/usr/share/man", "/usr/sbin/update-ca-certificates"]:
        assert absent not in members, absent
    assert not [n for n in members if "/gconv/" in n]
    docs = [n for n, m in members.items() if n.startswith("/usr/share/doc/") and not m.isdir()]
    assert docs and all(n.endswith("/copyright") or members[n].issym() for n in docs), docs
    # Users: nonroot is 65532, its home is its own; /tmp is sticky and world-writable.
    assert "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin" in text("/etc/passwd").splitlines()
    assert "nonroot:x:65532:" in text("/etc/group").splitlines()
    assert (members["/home/nonroot"].uid, members["/home/nonroot"].gid, members["/home/nonroot"].mode) == (65532, 65532, 0o700)
    assert members["/tmp"].mode == 0o1777 and members["/root"].mode == 0o700
    assert all((m.uid, m.gid) == (0, 0) for n, m in members.items() if n != "/home/nonroot")
    # Name lookups, services, time zones, CA certificates (every certificate of the package, sorted).
    assert "hosts:     files dns" in text("/etc/nsswitch.conf")
    assert "https\t\t443/tcp" in text("/etc/services")
    assert text("/usr/share/zoneinfo/UTC").startswith("TZif")
    bundle = text("/etc/ssl/certs/ca-certificates.crt")
    assert bundle.count("-----BEGIN CERTIFICATE-----") == bundle.count("-----END CERTIFICATE-----") > 100
    assert 'VERSION_ID="12"' in text("/usr/lib/os-release")
    # Every package of the list is recorded for image scanners, with its version.
    packages = [line.split("#")[0].strip().split("=")[0] for line in (IMAGE / "packages.txt").read_text().splitlines()]
    for name in filter(None, packages):
        status = text(f"/var/lib/dpkg/status.d/{name}")
        assert f"Package: {name}\nStatus: install ok installed\n" in status and "\nVersion: " in status
    # The binary layer: the binary alone, root-owned, executable.
    binary = [m for m in layer_members(app) if m.isfile()]
    assert [(m.name, m.mode, m.uid) for m in binary] == [("usr/local/bin/aws-lb-controller", 0o755, 0)]


# --- The Dockerfile against image/build -------------------------------------------------------------------------


def dockerfile() -> list[tuple[int, str, str]]:
    """(stage, instruction, arguments): stage -1 before the first FROM; continuation lines joined."""
    lines, current = [], ""
    for raw in (ROOT / "Dockerfile").read_text().splitlines():
        if raw.lstrip().startswith("#") and not current:
            continue
        if raw.rstrip().endswith("\\"):
            current += raw.rstrip()[:-1] + " "
            continue
        current += raw
        if current.strip():
            lines.append(current.strip())
        current = ""
    out, stage = [], -1
    for line in lines:
        instruction, _, args = line.partition(" ")
        if instruction.upper() == "FROM":
            stage += 1
        out.append((stage, instruction.upper(), args.strip()))
    return out


def instructions(name: str, stage: int | None = None) -> list[str]:
    return [a for s, i, a in dockerfile() if i == name and (stage is None or s == stage)]


def key_values(args: str) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in shlex.split(args))


def test_the_dockerfile_builds_the_same_runtime_from_the_same_package_list_and_script():
    froms = instructions("FROM")
    args = {k: v for a in instructions("ARG", -1) for k, v in [a.split("=", 1)]}
    assert froms == ["${RUST_IMAGE} AS build", "${DEBIAN_IMAGE} AS rootfs", "scratch"], froms
    assert re.fullmatch(r"rust:1\.\d+-bookworm", args["RUST_IMAGE"]), args
    assert args["DEBIAN_IMAGE"] == "debian:bookworm-slim"
    # Image names without a registry host: the user's mirror or Docker's default resolves them.
    assert all("." not in v.split("/")[0] for v in args.values() if "/" in v)
    assert instructions("COPY", 1) == ["image/packages.txt image/ownership.txt image/rootfs.sh /image/"]
    assert [r for r in instructions("RUN", 1) if "/image/rootfs.sh /rootfs" in r], instructions("RUN", 1)
    assert instructions("COPY", 2) == ["--from=rootfs /rootfs/ /", "--from=build /out/ /"]
    build_run = " ".join(instructions("RUN", 0))
    assert 'LBC_GIT_REVISION="${REVISION}" cargo build --release --locked -p aws-lb-controller' in build_run


def test_the_dockerfile_image_has_image_builds_user_entrypoint_binary_env_and_labels(builds):
    config = read_archive(builds[0])["config"]["config"]
    runtime = 2
    assert instructions("USER", runtime) == [config["User"]] == ["65532:65532"]
    assert [json.loads(e) for e in instructions("ENTRYPOINT", runtime)] == [config["Entrypoint"]]
    assert instructions("WORKDIR", runtime) == [config["WorkingDir"]]
    assert "Cmd" not in config and not instructions("CMD", runtime)
    env = {k: v for a in instructions("ENV", runtime) for k, v in key_values(a).items()}
    assert env == dict(e.split("=", 1) for e in config["Env"])
    # The binary lands where the entrypoint points.
    build_run = " ".join(instructions("RUN", 0))
    assert f"/out{config['Entrypoint'][0]}" in build_run
    labels = {k: v for a in instructions("LABEL", runtime) for k, v in key_values(a).items()}
    assert labels.keys() == config["Labels"].keys()
    for key, value in labels.items():
        if value.startswith("${"):  # build arguments, given per build as image/build computes them
            arg = value[2:-1]
            assert any(a.split("=")[0] == arg for a in instructions("ARG", runtime)), f"{key}: no ARG {arg}"
        else:
            assert value == config["Labels"][key], key
    version_arg = [a for a in instructions("ARG", runtime) if a.startswith("VERSION=")]
    assert version_arg == [f"VERSION={VERSION}"], "the Dockerfile's ARG VERSION must be the workspace's version"
    assert labels["org.opencontainers.image.version"] == "${VERSION}"


def test_dockerignore_keeps_the_build_context_to_the_sources():
    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    for must in [".git", "target", "e2e/.run"]:
        assert must in ignored, must
    for needed in ["Cargo.toml", "Cargo.lock", "controller", "model", "aws", "webhook", "e2e", "image", "docs"]:
        assert needed not in ignored, needed
