"""Append the last layer of one OCI layout's image to another's, as ``umoci raw add-layer``
would, but with the compressed blob hard-linked from the first layout instead of made again.

deploy/images/build.sh compresses the dependency layer (half a gigabyte) once per lock and
takes it from there for every kind and every Debian layer. Only the manifest, the
configuration's ``rootfs.diff_ids`` and ``history``, and the index change; the next umoci
command rewrites them in its own form. Runs on any Python 3.11, standard library only:

    python3 deploy/images/append_layer.py LAYOUT TAG FROM_LAYOUT FROM_TAG
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

_REF_NAME = "org.opencontainers.image.ref.name"


def blob_path(layout: Path, digest: str) -> Path:
    algorithm, _, hexdigest = digest.partition(":")
    return layout / "blobs" / algorithm / hexdigest


def read_blob(layout: Path, digest: str) -> Any:
    return json.loads(blob_path(layout, digest).read_bytes())


def write_blob(layout: Path, value: Any) -> dict[str, Any]:
    """``value`` as a JSON blob of ``layout``: its digest and size."""
    data = json.dumps(value, separators=(",", ":")).encode()
    digest = f"sha256:{hashlib.sha256(data).hexdigest()}"
    blob_path(layout, digest).write_bytes(data)
    return {"digest": digest, "size": len(data)}


def manifest_entry(index: dict[str, Any], tag: str) -> dict[str, Any]:
    for entry in index["manifests"]:
        if entry.get("annotations", {}).get(_REF_NAME) == tag:
            return dict(entry)
    raise SystemExit(f"append_layer.py: no image tagged {tag!r}")


def append_layer(layout: Path, tag: str, source: Path, source_tag: str) -> None:
    """Append ``source_tag``'s last layer (in ``source``) to ``tag``'s image (in ``layout``)."""
    source_entry = manifest_entry(json.loads((source / "index.json").read_text()), source_tag)
    source_manifest = read_blob(source, source_entry["digest"])
    source_config = read_blob(source, source_manifest["config"]["digest"])
    layer = source_manifest["layers"][-1]
    target = blob_path(layout, layer["digest"])
    if not target.exists():
        try:
            os.link(blob_path(source, layer["digest"]), target)
        except OSError:  # another file system
            shutil.copyfile(blob_path(source, layer["digest"]), target)

    index = json.loads((layout / "index.json").read_text())
    entry = manifest_entry(index, tag)
    manifest = read_blob(layout, entry["digest"])
    config = read_blob(layout, manifest["config"]["digest"])
    config.setdefault("rootfs", {"type": "layers", "diff_ids": []})
    config["rootfs"].setdefault("diff_ids", []).append(source_config["rootfs"]["diff_ids"][-1])
    config.setdefault("history", []).append(source_config["history"][-1])
    manifest["config"].update(write_blob(layout, config))
    manifest["layers"] = [*manifest.get("layers", []), layer]
    entry.update(write_blob(layout, manifest))
    index["manifests"] = [
        entry if e.get("annotations", {}).get(_REF_NAME) == tag else e for e in index["manifests"]
    ]
    (layout / "index.json").write_text(json.dumps(index, separators=(",", ":")))


if __name__ == "__main__":
    if len(sys.argv) != 5:
        raise SystemExit("usage: append_layer.py LAYOUT TAG FROM_LAYOUT FROM_TAG")
    append_layer(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4])
