"""What a disk cache holds on disk, read the way a person inspecting it would: from the
index's lines and the packs' bytes, never through the cache itself."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import NamedTuple


class Placed(NamedTuple):
    pack: Path
    at: int
    size: int


def index_records(root: Path, label: str) -> list[dict[str, object]]:
    """The index's record lines that parse (the header left out)."""
    index = root / label / "index.jsonl"
    if not index.exists():
        return []
    found = []
    for line in index.read_bytes().splitlines()[1:]:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "pack" in record:
            found.append(record)
    return found


def placed(root: Path, label: str, data: bytes) -> Placed | None:
    """Where the index's latest line for ``data``'s digest says it is."""
    digest = hashlib.sha256(data).hexdigest()
    found = None
    for record in index_records(root, label):
        if record["blob"] == digest:
            at, size = record["at"], record["size"]
            assert isinstance(at, int)
            assert isinstance(size, int)
            found = Placed(root / label / "blobs" / str(record["pack"]), at, size)
    return found


def stored(root: Path, label: str, data: bytes) -> bytes | None:
    """The bytes at ``data``'s place, if the index places it and its pack is there."""
    where = placed(root, label, data)
    if where is None or not where.pack.is_file():
        return None
    return where.pack.read_bytes()[where.at : where.at + where.size]


def packs(root: Path, label: str) -> list[Path]:
    directory = root / label / "blobs"
    return sorted(directory.iterdir()) if directory.exists() else []


def packed_bytes(root: Path, label: str) -> bytes:
    """Every byte in every pack of ``label``."""
    return b"".join(p.read_bytes() for p in packs(root, label) if p.is_file())


def cached_blobs(root: Path, label: str) -> set[str]:
    """The digests the index places in a pack that is there."""
    return {
        str(r["blob"])
        for r in index_records(root, label)
        if (root / label / "blobs" / str(r["pack"])).is_file()
    }


def plant(path: Path, planted: str, target: Path) -> None:
    """Put something other than a pack at ``path``: a symlink to ``target``, a FIFO or a
    directory."""
    path.unlink()
    if planted == "symlink":
        path.symlink_to(target)
    elif planted == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
