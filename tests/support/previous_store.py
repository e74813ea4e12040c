"""The approval store as the previous release wrote it (skillward before 2848990, whose
keyring counter held the store's generation alone), for the tests that upgrade from it.

Written out here from that release's ``trust/_store.py`` (``encode`` and ``_write``, then
``set_generation``), never imported from today's store, so that what the tests read stays
what that release wrote whatever the store's code becomes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from skillward.trust._store import KeyProvider
from skillward.trust.approvals import ApprovalRecord


def previous_store_bytes(records: Sequence[ApprovalRecord], generation: int, key: bytes) -> bytes:
    """The file: the HMAC line, then the header, one record per line sorted by (label,
    URI), and the footer."""
    head = {"format": "skillward-approvals", "generation": generation, "version": 1}
    header = json.dumps(head, sort_keys=True, separators=(",", ":")).encode()[:-1]
    lines = [
        json.dumps(
            [r.label, r.uri, r.model_dump(mode="json")],
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=True,
        ).encode()
        for r in sorted(records, key=lambda r: (r.label, r.uri))
    ]
    joined = b",\n".join(lines)
    body = header + b',"records":[\n' + joined + (b"\n" if joined else b"") + b"]}\n"
    code = hmac.new(key, b"skillward-approvals/1\n" + body, hashlib.sha256).hexdigest()
    return code.encode() + b"\n" + body


def write_previous_store(
    path: Path, keys: KeyProvider, records: Sequence[ApprovalRecord], generation: int
) -> bytes:
    """Write ``records`` at ``generation`` as that release did (a temp file replacing the
    store, then the counter set to the generation); the bytes written."""
    key = keys.key(create=True)
    assert key is not None
    data = previous_store_bytes(records, generation, key)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(temp, path)
    keys.set_counter(str(generation))
    return data
