"""The approval store: one file of remembered approvals, tamper-evident and shared safely.

Layout: the first line is the HMAC-SHA256 (lowercase hex) of the rest of the file,
keyed with 32 random bytes kept in the OS keyring (``_keys.py``); the rest is
the canonical JSON of the records and a **generation** number. The keyring
keeps the generation too, and it rises on every write, so an older authentic
copy of the file cannot be put back to bring back a revoked approval.

* Reads check the code over the exact bytes on disk, then the generation. A file
  that fails either grants nothing: it is moved aside (never deleted), reported,
  and the store starts empty.
* Writes happen under a ``filelock`` lock: read, verify, change, write a temp
  file in the same directory, fsync, ``os.replace``, fsync the directory, then
  raise the keyring's counter. A writer killed at any point leaves either the old
  file or the new one; a new file whose counter was not raised yet is accepted
  (generation = counter + 1) and the counter is repaired.
* A parsed store is kept per process and re-read only when the file changes
  (inode, size, mtime or ctime), so a lookup costs a ``stat`` and a dict lookup.

What this defends: files written by tools, the model, skill output or anything
else that can write the data directory but not read the keyring. What it does
not: code running as the user can read the key from the keyring and sign
anything. See SECURITY.md (T18).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

import filelock
from pydantic import BaseModel, ConfigDict, ValidationError

from skillward._dirs import approvals_file
from skillward._keys import OsKeyring
from skillward.approvals import ApprovalRecord, Scope
from skillward.config import Limits
from skillward.errors import RememberUnavailable, StoreTampered
from skillward.origins import SkillKey

__all__ = ["FORMAT", "FileApprovalStore", "KeyProvider"]

logger = logging.getLogger("skillward")

FORMAT = "skillward-approvals"
_MAC_DOMAIN = FORMAT.encode() + b"/1\n"
_MAC_HEX = 64


class KeyProvider(Protocol):
    """The store's secret key and generation counter (the OS keyring by default)."""

    @property
    def description(self) -> str:
        """Names the keyring, for messages."""

    def unavailable(self) -> str | None:
        """Why the key cannot be kept (naming the keyring), or None when it can."""

    def key(self, *, create: bool, fresh: bool = False) -> bytes | None:
        """The key; made when ``create`` and there is none; re-read when ``fresh``."""

    def rotate(self) -> bytes:
        """A new key, replacing the old one."""

    def generation(self) -> int:
        """The generation the newest store carries (0 when none was written; < 0 if unreadable)."""

    def set_generation(self, value: int) -> None: ...


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    format: Literal["skillward-approvals"]
    version: Literal[1]
    generation: int
    records: tuple[ApprovalRecord, ...]


Signature = tuple[int, int, int, int, int]


@dataclass(frozen=True)
class _Loaded:
    signature: Signature | None
    generation: int
    records: dict[SkillKey, ApprovalRecord] = field(default_factory=dict)


class _Untrusted(Exception):  # internal signal; never escapes this module
    def __init__(self, reason: str) -> None:
        self.reason = reason


def _signature(stat: os.stat_result) -> Signature:
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def encode(records: list[ApprovalRecord], generation: int, key: bytes) -> bytes:
    """The store file's bytes: the code line, then the canonical payload."""
    payload = {
        "format": FORMAT,
        "version": 1,
        "generation": generation,
        "records": [
            r.model_dump(mode="json") for r in sorted(records, key=lambda r: (r.label, r.uri))
        ],
    }
    body = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()
    body += b"\n"
    return _mac(key, body) + b"\n" + body


def _mac(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, _MAC_DOMAIN + body, hashlib.sha256).hexdigest().encode()


class FileApprovalStore:
    """Remembered approvals in one authenticated file (an ``ApprovalStorage``).

    ``path`` defaults to ``approvals.json`` in the user data directory, ``keys`` to
    the OS keyring, ``clock`` to ``time.time`` (it stamps the names of files moved
    aside). ``report`` is told about every untrusted store, once, as a
    :class:`~skillward.errors.StoreTampered`; by default it is logged.
    """

    def __init__(
        self,
        path: Path | None = None,
        *,
        keys: KeyProvider | None = None,
        clock: Callable[[], float] = time.time,
        limits: Limits | None = None,
        report: Callable[[StoreTampered], None] | None = None,
    ) -> None:
        self.path = path or approvals_file()
        self.keys: KeyProvider = keys or OsKeyring(str(self.path.absolute()))
        self.clock = clock
        self.limits = limits or Limits()
        self.problems: list[StoreTampered] = []
        self._report = report or (lambda error: logger.warning("%s", error.diagnostics()))
        self._cache: _Loaded | None = None
        self._mutex = threading.Lock()

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    # --- ApprovalStorage --------------------------------------------------------------

    def unavailable(self) -> str | None:
        return self.keys.unavailable()

    def get(self, key: SkillKey) -> ApprovalRecord | None:
        return self._current().records.get(key)

    def records(self) -> list[ApprovalRecord]:
        return sorted(self._current().records.values(), key=lambda r: (r.label, r.uri))

    def put(self, record: ApprovalRecord) -> None:
        if record.files is None or record.scope is not Scope.REMEMBER:
            raise RememberUnavailable(
                "only content-bound approvals of skills with a resources list are remembered",
                server=record.label,
                uri=record.uri,
            )

        def change(records: dict[SkillKey, ApprovalRecord]) -> bool:
            records[record.key] = record
            return True

        self._update(change)

    def revoke(self, key: SkillKey, *, reason: str) -> bool:
        found = False

        def change(records: dict[SkillKey, ApprovalRecord]) -> bool:
            nonlocal found
            held = records.get(key)
            if held is None or held.revoked is not None:
                return False
            found = True
            records[key] = held.model_copy(update={"revoked": reason})
            return True

        if self.unavailable() is not None:
            return False  # nothing stored can be trusted or changed without the keyring
        self._update(change)
        return found

    def reset(self) -> None:
        """Forget every approval and use a new key from now on."""

        def forget(records: dict[SkillKey, ApprovalRecord]) -> bool:
            records.clear()
            return True

        self._update(forget, rotate=True)

    # --- reading ----------------------------------------------------------------------

    def _stat(self) -> Signature | None:
        try:
            return _signature(os.stat(self.path, follow_symlinks=False))
        except FileNotFoundError:
            return None
        except OSError:
            return None

    def _current(self) -> _Loaded:
        """The trusted records (none when the keyring is unusable), re-read on change."""
        if self.keys.unavailable() is not None:
            return _Loaded(None, 0)
        with self._mutex:
            cached = self._cache
            if cached is not None and cached.signature == self._stat():
                return cached
            try:
                loaded = self._load()
            except _Untrusted:
                loaded = self._locked(lambda: self._load(quarantine=True))
            except _Interrupted:
                # A writer's counter update is missing: repair it under the lock.
                loaded = self._locked(lambda: self._load(quarantine=True))
            self._cache = loaded
            return loaded

    def _locked(self, body: Callable[[], _Loaded]) -> _Loaded:
        try:
            with self._lock():
                return body()
        except RememberUnavailable:
            return _Loaded(None, 0)  # busy: trust nothing now, decide again next time

    def _read(self) -> tuple[Signature, bytes] | None:
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.path, flags)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _Untrusted(f"cannot be opened as a plain file ({exc.strerror})") from None
        with os.fdopen(fd, "rb") as handle:
            signature = _signature(os.fstat(handle.fileno()))
            data = handle.read(self.limits.max_store_bytes + 1)
        if len(data) > self.limits.max_store_bytes:
            raise _Untrusted(f"is larger than {self.limits.max_store_bytes} bytes")
        return signature, data

    def _load(self, *, quarantine: bool = False) -> _Loaded:
        """The store on disk, verified. With ``quarantine`` (lock held): an untrusted file
        is moved aside and reported, and a missing counter update is repaired."""
        try:
            return self._verified(quarantine=quarantine)
        except _Untrusted as untrusted:
            if not quarantine:
                raise
            self._move_aside(untrusted.reason)
            return _Loaded(self._stat(), max(self.keys.generation(), 0))

    def _verified(self, *, quarantine: bool) -> _Loaded:
        counter = self.keys.generation()
        read = self._read()
        if read is None:
            return _Loaded(None, max(counter, 0))
        signature, data = read
        generation, records = self._parse(data)
        if counter < 0:
            raise _Untrusted("cannot be checked: the keyring's generation counter is unreadable")
        if generation < counter:
            raise _Untrusted(
                f"is an older copy (generation {generation}; the keyring expects {counter}): "
                "a stored approval may have been brought back after it was revoked"
            )
        if generation > counter + 1:
            raise _Untrusted(
                f"is ahead of the keyring's counter (generation {generation}, counter {counter})"
            )
        if generation == counter + 1:
            if not quarantine:
                raise _Interrupted
            self.keys.set_generation(generation)
        return _Loaded(signature, generation, records)

    def _parse(self, data: bytes) -> tuple[int, dict[SkillKey, ApprovalRecord]]:
        if not data:
            raise _Untrusted("is empty")
        head, newline, body = data.partition(b"\n")
        if not newline or len(head) != _MAC_HEX:
            raise _Untrusted("is truncated or is not an approval store")
        if not self._authentic(head, body):
            raise _Untrusted(
                "does not match its authentication code: it was changed outside skillward, "
                "or the key in the keyring is missing or changed"
            )
        try:
            payload = _Payload.model_validate_json(body)
        except ValidationError:
            raise _Untrusted("is authentic but cannot be read by this version") from None
        records: dict[SkillKey, ApprovalRecord] = {}
        for record in payload.records:
            if record.key in records or record.files is None:
                raise _Untrusted("holds a record twice, or a record that cannot be remembered")
            records[record.key] = record
        return payload.generation, records

    def _authentic(self, head: bytes, body: bytes) -> bool:
        key = self.keys.key(create=False)
        if key is None:
            return False
        if hmac.compare_digest(head, _mac(key, body)):
            return True
        # Another process may have reset the store with a new key since this one read it.
        fresh = self.keys.key(create=False, fresh=True)
        return fresh is not None and fresh != key and hmac.compare_digest(head, _mac(fresh, body))

    def _move_aside(self, reason: str) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(self.clock()))
        aside = self.path.with_name(f"{self.path.name}.untrusted-{stamp}-{secrets.token_hex(4)}")
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return
        except OSError as exc:
            where = f"it could not be moved aside ({exc.strerror}); remove it by hand"
        else:
            where = f"it was moved to {aside}"
        error = StoreTampered(
            f"the approval store {self.path} {reason}; {where}. It grants nothing: "
            "every skill will be asked about again"
        )
        self.problems.append(error)
        self._report(error)

    # --- writing ----------------------------------------------------------------------

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock = filelock.FileLock(self.lock_path, timeout=self.limits.store_lock_timeout, mode=0o600)
        try:
            with lock:
                yield
        except filelock.Timeout:
            raise RememberUnavailable(
                f"another skillward process has held {self.lock_path} for more than "
                f"{self.limits.store_lock_timeout:g} s"
            ) from None

    def _update(
        self, change: Callable[[dict[SkillKey, ApprovalRecord]], bool], *, rotate: bool = False
    ) -> None:
        why = self.unavailable()
        if why is not None:
            raise RememberUnavailable(why)
        with self._mutex, self._lock():
            self._sweep()
            loaded = self._load(quarantine=True)
            records = dict(loaded.records)
            if not change(records) and not rotate:
                return
            key = self.keys.rotate() if rotate else self.keys.key(create=True)
            assert key is not None
            generation = max(loaded.generation, self.keys.generation()) + 1
            try:
                self._write(encode(list(records.values()), generation, key))
            except OSError as exc:
                raise RememberUnavailable(
                    f"cannot write the approval store {self.path}: {exc.strerror}"
                ) from None
            self.keys.set_generation(generation)
            self._cache = None

    def _sweep(self) -> None:
        """Remove temp files of writers that died (only writers holding the lock make them)."""
        for leftover in self.path.parent.glob(f".{self.path.name}.*.tmp"):
            with contextlib.suppress(OSError):
                leftover.unlink()

    def _write(self, data: bytes) -> None:
        directory = self.path.parent
        fd, temp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        _fsync_directory(directory)


class _Interrupted(Exception):  # internal signal
    """A new store whose counter update is still missing (a writer died, or is mid-write)."""


def _fsync_directory(directory: Path) -> None:
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    try:
        fd = os.open(directory, flags)
    except OSError:
        return  # not supported here (Windows): os.replace is still atomic
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
