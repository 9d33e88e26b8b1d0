#!/usr/bin/env python3
"""Writes an OCI image archive from root filesystem directories, reproducibly (Python 3 standard library only).

Each --layer DIR becomes one layer, in order: a tar of DIR's tree (paths relative to DIR, sorted byte-wise,
mtimes set to --created, owner 0:0 unless --owners says otherwise, modes as on disk), gzip-compressed or plain.
The archive is an OCI image layout in a tar (oci-layout, index.json naming the image with
org.opencontainers.image.ref.name and io.containerd.image.name, blobs/sha256/...), plus a manifest.json for tools
that load Docker archives. Same inputs, same bytes: every digest is a function of the trees and the options.

Load it with `ctr images import FILE`, `podman load -i FILE`, `docker load -i FILE`, or copy it to a registry
with `skopeo copy oci-archive:FILE docker://REGISTRY/NAME:TAG`.

Example (the controller's image, as image/build runs it):
  python3 image/oci.py --layer ROOTFS --layer BINDIR --owners image/ownership.txt \\
      --ref aws-lb-controller:0.1.0 --user 65532:65532 --entrypoint '["/usr/local/bin/aws-lb-controller"]' \\
      --env PATH=/usr/local/bin:/usr/bin:/bin --label org.opencontainers.image.version=0.1.0 \\
      --created 2026-11-28T07:00:00Z --out aws-lb-controller-0.1.0.tar
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import io
import json
import os
import re
import stat
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = {"gzip": "application/vnd.oci.image.layer.v1.tar+gzip", "none": "application/vnd.oci.image.layer.v1.tar"}
# Go's GOARCH names, as OCI configs use them, from Go's, uname's or Debian's.
ARCHITECTURES = {"amd64": "amd64", "x86_64": "amd64", "arm64": "arm64", "aarch64": "arm64", "ppc64le": "ppc64le",
                 "ppc64el": "ppc64le", "s390x": "s390x", "arm": "arm", "armv7l": "arm", "armhf": "arm",
                 "riscv64": "riscv64"}
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
# [HOST[:PORT]/]PATH:TAG, the distribution reference grammar with the tag required.
REF_NAME = re.compile(rf"^(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?{_COMPONENT}(?:/{_COMPONENT})*:[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}}$")


class UsageError(Exception):
    """Bad input: the message names the option, the value seen and what is expected."""


@dataclass(frozen=True)
class Owner:
    uid: int
    gid: int
    mode: int | None


@dataclass(frozen=True)
class Blob:
    digest: str
    size: int
    data: bytes


def blob(data: bytes) -> Blob:
    return Blob("sha256:" + hashlib.sha256(data).hexdigest(), len(data), data)


def parse_owners(path: Path) -> dict[str, Owner]:
    """`PATH UID GID [MODE]` lines (octal mode; `#` comments) → {relative path: owner}."""
    owners: dict[str, Owner] = {}
    try:
        text = path.read_text()
    except OSError as e:
        raise UsageError(f"--owners {path}: cannot read it ({e.strerror})") from None
    for n, line in enumerate(text.splitlines(), 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        ok = len(fields) in (3, 4) and fields[1].isdigit() and fields[2].isdigit()
        ok = ok and (len(fields) == 3 or re.fullmatch(r"[0-7]{3,4}", fields[3]) is not None)
        if not ok:
            raise UsageError(f"--owners {path} line {n}: {line.strip()!r}: expected PATH UID GID [MODE] "
                             "(numbers, mode in octal), e.g. /home/nonroot 65532 65532 0700")
        mode = int(fields[3], 8) if len(fields) == 4 else None
        owners[fields[0].strip("/")] = Owner(int(fields[1]), int(fields[2]), mode)
    return owners


def walk(root: Path) -> list[tuple[str, Path]]:
    """(relative name, path) of every entry under root, parents before children, names in byte order."""
    out: list[tuple[str, Path]] = []

    def visit(dir_path: Path, prefix: str) -> None:
        entries = sorted(os.scandir(dir_path), key=lambda e: os.fsencode(e.name))
        for e in entries:
            name = prefix + e.name
            out.append((name, Path(e.path)))
            if e.is_dir(follow_symlinks=False):
                visit(Path(e.path), name + "/")

    visit(root, "")
    return out


def layer_tar(root: Path, owners: dict[str, Owner], mtime: int, used: set[str]) -> bytes:
    """The uncompressed tar of root's tree. `used`: owner entries applied (to report the ones that match nothing)."""
    buf = io.BytesIO()
    links: dict[tuple[int, int], str] = {}
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, path in walk(root):
            st = path.lstat()
            info = tarfile.TarInfo(name)
            owner = owners.get(name)
            if owner is not None:
                used.add(name)
            info.uid, info.gid = (owner.uid, owner.gid) if owner else (0, 0)
            info.uname = info.gname = ""
            info.mode = owner.mode if owner and owner.mode is not None else stat.S_IMODE(st.st_mode)
            info.mtime = mtime
            data = None
            if stat.S_ISDIR(st.st_mode):
                info.type = tarfile.DIRTYPE
            elif stat.S_ISLNK(st.st_mode):
                info.type = tarfile.SYMTYPE
                info.linkname = os.readlink(path)
            elif stat.S_ISREG(st.st_mode):
                key = (st.st_dev, st.st_ino)
                if st.st_nlink > 1 and key in links:
                    info.type = tarfile.LNKTYPE
                    info.linkname = links[key]
                else:
                    links[key] = name
                    info.type = tarfile.REGTYPE
                    info.size = st.st_size
                    data = path.open("rb")
            else:
                raise UsageError(f"--layer {root}: {name} is a device, FIFO or socket; a layer holds only "
                                 "directories, regular files and links")
            try:
                tar.addfile(info, data)
            finally:
                if data is not None:
                    data.close()
    return buf.getvalue()


def compress(tar: bytes, compression: str) -> bytes:
    if compression == "none":
        return tar
    out = io.BytesIO()
    # No file name and a zero mtime in the gzip header: the bytes depend on the content only.
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=6) as gz:
        gz.write(tar)
    return out.getvalue()


def parse_created(value: str | None) -> tuple[str, int]:
    """RFC 3339 time (or SOURCE_DATE_EPOCH, or the epoch) → (canonical RFC 3339 UTC, Unix seconds)."""
    if value is None:
        epoch_text = os.environ.get("SOURCE_DATE_EPOCH", "0")
        if not epoch_text.isdigit():
            raise UsageError(f"SOURCE_DATE_EPOCH={epoch_text!r}: expected Unix seconds, e.g. 1767225600")
        when = dt.datetime.fromtimestamp(int(epoch_text), dt.timezone.utc)
    else:
        try:
            when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise UsageError(f"--created {value!r}: expected an RFC 3339 time, e.g. 2026-11-28T07:00:00Z") from None
        if when.tzinfo is None:
            raise UsageError(f"--created {value!r}: give a time zone (Z or +00:00), e.g. 2026-11-28T07:00:00Z")
    when = when.astimezone(dt.timezone.utc).replace(microsecond=0)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ"), int(when.timestamp())


def json_list(option: str, value: str | None) -> list[str] | None:
    if value is None:
        return None
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, list) or not all(isinstance(v, str) for v in parsed):
        raise UsageError(f"{option} {value!r}: expected a JSON list of strings, e.g. '[\"/usr/local/bin/app\"]'")
    return parsed


def key_values(option: str, values: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values:
        key, sep, val = v.partition("=")
        if not sep or not key:
            raise UsageError(f"{option} {v!r}: expected KEY=VALUE, e.g. {option} org.opencontainers.image.version=1.0")
        if key in out:
            raise UsageError(f"{option} {key} is given twice ({out[key]!r} and {val!r}): give it once")
        out[key] = val
    return out


def canonical(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def build(args: argparse.Namespace) -> dict:
    """Writes the archive; returns what it holds (digests, sizes) for the caller to print."""
    if not REF_NAME.match(args.ref):
        raise UsageError(f"--ref {args.ref!r}: expected NAME:TAG in lower case, e.g. aws-lb-controller:0.1.0 "
                         "or registry.example/team/app:1.2")
    user = args.user
    if user is not None and not re.fullmatch(r"[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)?", user):
        raise UsageError(f"--user {user!r}: expected UID[:GID] or NAME[:GROUP], e.g. 65532:65532")
    arch = ARCHITECTURES.get(args.architecture)
    if arch is None:
        raise UsageError(f"--architecture {args.architecture!r}: expected one of {sorted(set(ARCHITECTURES))}")
    created, mtime = parse_created(args.created)
    entrypoint = json_list("--entrypoint", args.entrypoint)
    cmd = json_list("--cmd", args.cmd)
    env = key_values("--env", args.env)
    labels = key_values("--label", args.label)
    owners = parse_owners(Path(args.owners)) if args.owners else {}
    roots = [Path(d) for d in args.layer]
    for d in roots:
        if not d.is_dir():
            raise UsageError(f"--layer {d}: not a directory (give the root of a tree to pack)")

    used: set[str] = set()
    layers: list[tuple[Blob, str]] = []
    for root in roots:
        tar = layer_tar(root, owners, mtime, used)
        layers.append((blob(compress(tar, args.compression)), "sha256:" + hashlib.sha256(tar).hexdigest()))
    unused = sorted(set(owners) - used)
    if unused:
        raise UsageError(f"--owners {args.owners}: {', '.join('/' + u for u in unused)} is in no layer "
                         "(a path that moved? fix the file or the tree)")

    container: dict = {"Env": [f"{k}={v}" for k, v in env.items()]}
    if user is not None:
        container["User"] = user
    if entrypoint is not None:
        container["Entrypoint"] = entrypoint
    if cmd is not None:
        container["Cmd"] = cmd
    if args.workdir:
        container["WorkingDir"] = args.workdir
    if labels:
        container["Labels"] = labels
    config = {
        "created": created,
        "architecture": arch,
        "os": "linux",
        "config": container,
        "rootfs": {"type": "layers", "diff_ids": [diff_id for _, diff_id in layers]},
        "history": [{"created": created, "created_by": f"image/oci.py layer {n}"} for n in range(1, len(roots) + 1)],
    }
    config_blob = blob(canonical(config))
    manifest = {
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "config": {"mediaType": MEDIA_CONFIG, "digest": config_blob.digest, "size": config_blob.size},
        "layers": [{"mediaType": MEDIA_LAYER[args.compression], "digest": b.digest, "size": b.size} for b, _ in layers],
    }
    manifest_blob = blob(canonical(manifest))
    index = {
        "schemaVersion": 2,
        "mediaType": MEDIA_INDEX,
        "manifests": [{
            "mediaType": MEDIA_MANIFEST,
            "digest": manifest_blob.digest,
            "size": manifest_blob.size,
            "platform": {"architecture": arch, "os": "linux"},
            "annotations": {"org.opencontainers.image.ref.name": args.ref, "io.containerd.image.name": args.ref},
        }],
    }
    docker_manifest = [{
        "Config": "blobs/sha256/" + config_blob.digest.split(":", 1)[1],
        "RepoTags": [args.ref],
        "Layers": ["blobs/sha256/" + b.digest.split(":", 1)[1] for b, _ in layers],
    }]

    files: list[tuple[str, bytes]] = [
        ("oci-layout", canonical({"imageLayoutVersion": "1.0.0"})),
        ("index.json", canonical(index)),
        ("manifest.json", canonical(docker_manifest)),
    ]
    seen: set[str] = set()
    for b in [config_blob, manifest_blob] + [b for b, _ in layers]:
        if b.digest not in seen:  # two identical layers are one blob
            seen.add(b.digest)
            files.append(("blobs/sha256/" + b.digest.split(":", 1)[1], b.data))
    out = Path(args.out)
    tmp = out.with_name(out.name + ".partial")
    with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for directory in ("blobs", "blobs/sha256"):
            info = tarfile.TarInfo(directory)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, mtime
            archive.addfile(info)
        for name, data in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, mtime
            archive.addfile(info, io.BytesIO(data))
    tmp.replace(out)
    return {
        "archive": str(out),
        "ref": args.ref,
        "manifest": manifest_blob.digest,
        "config": config_blob.digest,
        "layers": [{"digest": b.digest, "diff_id": d, "size": b.size} for b, d in layers],
    }


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="image/oci.py",
        description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--layer", action="append", required=True, metavar="DIR",
                   help="a directory whose tree becomes the next layer (repeatable; first is the bottom layer)")
    p.add_argument("--ref", required=True, metavar="NAME:TAG", help="the image's name, e.g. aws-lb-controller:0.1.0")
    p.add_argument("--out", required=True, metavar="FILE.tar", help="the archive to write (replaced atomically)")
    p.add_argument("--owners", metavar="FILE",
                   help="owners and modes: lines 'PATH UID GID [MODE]' (octal); other paths are 0:0 with their mode")
    p.add_argument("--user", metavar="UID:GID", help="the user the container runs as, e.g. 65532:65532")
    p.add_argument("--entrypoint", metavar="JSON", help='JSON list, e.g. \'["/usr/local/bin/app"]\'')
    p.add_argument("--cmd", metavar="JSON", help="JSON list of default arguments")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="environment (repeatable)")
    p.add_argument("--workdir", metavar="DIR", help="working directory")
    p.add_argument("--label", action="append", default=[], metavar="KEY=VALUE", help="config label (repeatable)")
    p.add_argument("--created", metavar="RFC3339",
                   help="creation time, also every file's mtime (default: $SOURCE_DATE_EPOCH, else 1970-01-01)")
    p.add_argument("--compression", choices=sorted(MEDIA_LAYER), default="gzip", help="layer compression")
    p.add_argument("--architecture", default=os.uname().machine,
                   help="CPU architecture (default: this machine's; Go names or uname's)")
    p.add_argument("--json", action="store_true", help="print what was written as JSON (default: one line per blob)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        summary = build(args)
    except UsageError as e:
        print(f"image/oci.py: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"manifest {summary['manifest']}  config {summary['config']}")
        for layer in summary["layers"]:
            print(f"layer {layer['digest']}  {layer['size']} bytes  diff_id {layer['diff_id']}")
        print(summary["archive"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
