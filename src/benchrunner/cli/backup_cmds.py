"""``benchrunner admin backup`` and ``benchrunner admin restore``: a server's database, its blob
store's manifest (and a directory store's bytes) and its key, to a directory and back."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from benchrunner.cli import output
from benchrunner.cli.server_cmds import settings_from
from benchrunner.server.blobs.blob_store import BlobStoreUnavailable

Db = Annotated[
    str | None,
    typer.Option(
        metavar="URL",
        help="Database URL [default: sqlite:///<data-dir>/benchrunner.db].",
        show_default=False,
    ),
]
DataDir = Annotated[
    Path | None,
    typer.Option(help="The server's data directory [default: .benchrunner].", show_default=False),
]
BlobStoreOption = Annotated[
    str | None,
    typer.Option(
        metavar="LOCATION",
        help="s3://BUCKET/PREFIX or a directory [default: DATA_DIR/blobs].",
        show_default=False,
    ),
]


def backup(
    out: Annotated[Path, typer.Option(metavar="DIR", help="A new directory for the backup.")],
    db: Db = None,
    data_dir: DataDir = None,
    blob_store: BlobStoreOption = None,
) -> None:
    """Copy the database (SQLite's online backup, or pg_dump), the blob store's manifest (and
    the blobs themselves when they live in a directory) and the JWT key into DIR.

    Reads BENCHRUNNER_DB, BENCHRUNNER_DATA_DIR and BENCHRUNNER_BLOB_STORE like the server does;
    safe while the server runs.
    """
    from benchrunner.server.admin.backup import backup as run_backup

    settings = settings_from({"db": db, "data_dir": data_dir, "blob_store": blob_store})
    try:
        count = run_backup(settings.database_url(), settings.data_dir, settings.blob_store, out)
    except BlobStoreUnavailable as exc:
        raise ValueError(str(exc)) from None
    output.note(f"backed up the database and {count} blobs to {out}")


def restore(
    source: Annotated[
        Path, typer.Option("--from", metavar="DIR", help="A directory written by backup.")
    ],
    db: Db = None,
    data_dir: DataDir = None,
    blob_store: BlobStoreOption = None,
) -> None:
    """Restore a backup into an empty database and data directory (and blob store), then check
    that every blob of its manifest is there. Exits 1 naming the blobs that are not."""
    from benchrunner.server.admin.backup import restore as run_restore

    settings = settings_from({"db": db, "data_dir": data_dir, "blob_store": blob_store})
    try:
        restored = run_restore(
            source, settings.database_url(), settings.data_dir, settings.blob_store
        )
    except BlobStoreUnavailable as exc:
        raise ValueError(str(exc)) from None
    if restored.missing:
        shown = ", ".join(restored.missing[:10])
        raise ValueError(
            f"restored, but {len(restored.missing)} of {restored.blobs} blobs of the backup are "
            f"missing from the blob store or have another size: {shown}"
        )
    output.note(f"restored the database and checked {restored.blobs} blobs")
