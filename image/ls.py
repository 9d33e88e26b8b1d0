#!/usr/bin/env python3
"""image/ls.py ARCHIVE: what an OCI image archive (image/oci.py's, or any single-image OCI layout in a tar) holds,
without a container runtime. Python 3 standard library only.

  image/ls.py ARCHIVE            the image's files, its layers applied in order (whiteouts honoured): one JSON
                                 object per line, {"path", "type" (dir|file|symlink|hardlink), "uid", "gid",
                                 "mode" (octal string), "size", "link"}, sorted by path
  image/ls.py --config ARCHIVE   the image's configuration (User, Entrypoint, Env, Labels, ...) as JSON
  image/ls.py --ref ARCHIVE      the name the archive gives the image (org.opencontainers.image.ref.name)
"""

from __future__ import annotations

import gzip
import io
import json
import sys
import tarfile
from pathlib import PurePosixPath

TYPES = {tarfile.DIRTYPE: "dir", tarfile.REGTYPE: "file", tarfile.AREGTYPE: "file", tarfile.SYMTYPE: "symlink",
         tarfile.LNKTYPE: "hardlink"}


class BadArchive(Exception):
    pass


def blob(archive: tarfile.TarFile, digest: str) -> bytes:
    algorithm, _, hexdigest = digest.partition(":")
    member = archive.extractfile(f"blobs/{algorithm}/{hexdigest}")
    if member is None:
        raise BadArchive(f"blob {digest} is missing")
    return member.read()


def manifest(archive: tarfile.TarFile) -> tuple[dict, dict]:
    """(index entry, manifest) of the archive's one image."""
    try:
        index = json.load(archive.extractfile("index.json"))
    except KeyError:
        raise BadArchive("no index.json: not an OCI image layout") from None
    entries = index.get("manifests", [])
    if len(entries) != 1:
        raise BadArchive(f"index.json names {len(entries)} manifests; this tool reads single-image archives")
    return entries[0], json.loads(blob(archive, entries[0]["digest"]))


def absolute(name: str) -> str:
    """A tar member name (`etc/passwd`, `./etc/passwd`, `/etc/passwd`) as an absolute path."""
    while name.startswith("./"):
        name = name[2:]
    return str(PurePosixPath("/", name))


def files(archive: tarfile.TarFile) -> dict[str, dict]:
    """The image's filesystem: path → entry, layers applied bottom to top."""
    _, m = manifest(archive)
    tree: dict[str, dict] = {}
    for layer in m["layers"]:
        data = blob(archive, layer["digest"])
        if layer["mediaType"].endswith("+gzip"):
            data = gzip.decompress(data)
        # A layer's whiteouts hide what the layers below it hold, then its own entries apply.
        entries = []
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for info in tar:
                path = absolute(info.name)
                name, parent = PurePosixPath(path).name, PurePosixPath(path).parent
                if name == ".wh..wh..opq":  # opaque directory: the lower layers' children are gone
                    gone = [p for p in tree if p.startswith(str(parent).rstrip("/") + "/")]
                elif name.startswith(".wh."):
                    hidden = str(parent / name[4:])
                    gone = [p for p in tree if p == hidden or p.startswith(hidden + "/")]
                else:
                    entries.append((path, info))
                    continue
                for p in gone:
                    tree.pop(p, None)
        for path, info in entries:
            if info.type not in TYPES:
                raise BadArchive(f"layer {layer['digest']}: {info.name} has tar type {info.type!r}")
            link = info.linkname if info.type in (tarfile.SYMTYPE, tarfile.LNKTYPE) else ""
            if info.type == tarfile.LNKTYPE:
                link = absolute(link)
            tree[path] = {"path": path, "type": TYPES[info.type], "uid": info.uid, "gid": info.gid,
                          "mode": f"{info.mode:04o}", "size": info.size if info.isreg() else 0, "link": link}
    tree.pop("/", None)
    return tree


def main(argv: list[str]) -> int:
    mode = "files"
    if argv and argv[0] in ("--config", "--ref"):
        mode, argv = argv[0][2:], argv[1:]
    if len(argv) != 1 or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        with tarfile.open(argv[0]) as archive:
            if mode == "files":
                tree = files(archive)
                for path in sorted(tree):
                    print(json.dumps(tree[path]))
            elif mode == "config":
                _, m = manifest(archive)
                print(json.dumps(json.loads(blob(archive, m["config"]["digest"])), indent=2, sort_keys=True))
            else:
                entry, _ = manifest(archive)
                print(entry.get("annotations", {}).get("org.opencontainers.image.ref.name", ""))
    except (OSError, tarfile.TarError, BadArchive, KeyError, ValueError) as e:
        print(f"image/ls.py: {argv[0]}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
