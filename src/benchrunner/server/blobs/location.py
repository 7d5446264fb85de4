"""Which blob store a server uses: ``--blob-store`` (``BENCHRUNNER_BLOB_STORE``).

Unset, the blobs live in ``DATA_DIR/blobs``; a path names another directory; ``s3://BUCKET/PREFIX``
puts them in S3-compatible object storage (``s3_blobs``), whose endpoint, region and credentials
come from the standard ``AWS_*`` variables or the AWS config files.
"""

from __future__ import annotations

from pathlib import Path

from benchrunner.server.blobs.blob_store import BlobStore, LocalBlobStore


def check_location(location: str | None) -> None:
    """``ValueError`` naming the problem when ``location`` names no store we can open."""
    if location is None or not location.startswith("s3://"):
        if location is not None and "://" in location:
            raise ValueError(f"blob store {location!r}: only s3:// URLs or a directory")
        return
    from benchrunner.server.blobs.s3 import S3Location

    S3Location.parse(location)


def open_blob_store(location: str | None, data_dir: Path) -> BlobStore:
    """The store ``location`` names (see the module docstring). An object store's bucket is
    checked now: ``BlobStoreUnavailable`` when it cannot be reached, is missing, or the
    credentials are refused, so a misconfigured server stops at its start."""
    if not location:
        return LocalBlobStore(data_dir / "blobs")
    check_location(location)
    if not location.startswith("s3://"):
        return LocalBlobStore(Path(location))
    from benchrunner.server.blobs.s3 import S3BlobStore, S3Location

    store = S3BlobStore(S3Location.parse(location))
    store.check()
    return store
