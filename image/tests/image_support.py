"""Shared helpers of the image tests: the image/ scripts as modules, and archive readers."""

from __future__ import annotations

import gzip
import importlib.util
import io
import json
import sys
import tarfile
from pathlib import Path

IMAGE = Path(__file__).resolve().parents[1]
ROOT = IMAGE.parent


def load(name: str):
    """image/<name>.py as a module."""
    spec = importlib.util.spec_from_file_location(f"image_{name}", IMAGE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def read_archive(path: Path) -> dict:
    """index, manifest, config and the layers (uncompressed tar bytes) of a single-image archive."""
    with tarfile.open(path) as t:
        def blob(digest: str) -> bytes:
            return t.extractfile("blobs/sha256/" + digest.split(":", 1)[1]).read()

        index = json.loads(t.extractfile("index.json").read())
        manifest = json.loads(blob(index["manifests"][0]["digest"]))
        config = json.loads(blob(manifest["config"]["digest"]))
        layers = []
        for layer in manifest["layers"]:
            data = blob(layer["digest"])
            layers.append(gzip.decompress(data) if layer["mediaType"].endswith("+gzip") else data)
        return {"index": index, "manifest": manifest, "config": config, "layers": layers,
                "names": sorted(t.getnames())}


def layer_members(layer: bytes) -> list[tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(layer)) as t:
        return t.getmembers()


def layer_file(layer: bytes, name: str) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(layer)) as t:
        return t.extractfile(name).read()
