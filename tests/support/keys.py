"""Key providers for store tests: the store's ``KeyProvider`` interface, without a keyring.

``MemoryKeys`` is one process's view of an in-memory ``Keyring``: like ``OsKeyring``
it keeps the key it read until asked for a fresh one, so two ``MemoryKeys`` over one
``Keyring`` behave as two processes sharing the OS keyring. ``FileKeys`` keeps the key
and counter in a JSON file so several real processes share them; the store only
changes it while holding its lock, as it does the keyring. ``FailingCounter`` is either
of them with a counter update that fails on demand.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from skillward.core.errors import RememberUnavailable
from skillward.trust._store import KeyProvider


@dataclass
class Keyring:
    """What the keyring holds, shared by every process using it."""

    secret: bytes | None = None
    #: The rollback counter as the store set it (None: never set, or deleted).
    counter: str | None = None
    #: Why the keyring cannot be used (locked, not recommended), or None.
    refuse: str | None = None
    #: How often the counter was read (each read of the OS keyring is a D-Bus round trip).
    counter_reads: int = 0


class MemoryKeys:
    """One process's view of ``keyring``; the properties reach the shared state."""

    def __init__(self, keyring: Keyring | None = None, *, refuse: str | None = None) -> None:
        self.keyring = keyring or Keyring(refuse=refuse)
        self._key: bytes | None = None  # this process's copy, as OsKeyring keeps one

    def another_process(self) -> MemoryKeys:
        """The same keyring as another process sees it: nothing read yet."""
        return MemoryKeys(self.keyring)

    @property
    def secret(self) -> bytes | None:
        return self.keyring.secret

    @secret.setter
    def secret(self, value: bytes | None) -> None:
        self.keyring.secret = value

    @property
    def stored_counter(self) -> str | None:
        return self.keyring.counter

    @stored_counter.setter
    def stored_counter(self, value: str | None) -> None:
        self.keyring.counter = value

    @property
    def refuse(self) -> str | None:
        return self.keyring.refuse

    @refuse.setter
    def refuse(self, value: str | None) -> None:
        self.keyring.refuse = value

    def unavailable(self) -> str | None:
        return self.keyring.refuse

    def key(self, *, create: bool, fresh: bool = False) -> bytes | None:
        if self._key is None or fresh:
            self._key = self.keyring.secret
        if self._key is None and create:
            return self.rotate()
        return self._key

    def rotate(self) -> bytes:
        self._key = self.keyring.secret = secrets.token_bytes(32)
        return self._key

    def counter(self) -> str | None:
        self.keyring.counter_reads += 1
        return self.keyring.counter

    def set_counter(self, value: str) -> None:
        self.keyring.counter = value


@dataclass
class FileKeys:
    path: Path

    def _state(self) -> dict[str, object]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        assert isinstance(data, dict)
        return data

    def _save(self, state: dict[str, object]) -> None:
        temp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        temp.write_text(json.dumps(state))
        os.replace(temp, self.path)

    def unavailable(self) -> str | None:
        return None

    def key(self, *, create: bool, fresh: bool = False) -> bytes | None:
        text = self._state().get("key")
        if text is None:
            return self.rotate() if create else None
        assert isinstance(text, str)
        return bytes.fromhex(text)

    def rotate(self) -> bytes:
        key = secrets.token_bytes(32)
        self._save({**self._state(), "key": key.hex()})
        return key

    def counter(self) -> str | None:
        value = self._state().get("counter")
        assert value is None or isinstance(value, str)
        return value

    def set_counter(self, value: str) -> None:
        self._save({**self._state(), "counter": value})


@dataclass
class FailingCounter:
    """A key provider whose counter update fails on demand, over a real one: with
    ``fail="before"`` the counter is left as it was, with ``"after"`` it was raised but the
    call still fails (the keyring's answer was lost; or the writer died just then)."""

    keys: KeyProvider
    fail: Literal["before", "after"] | None = None

    def unavailable(self) -> str | None:
        return self.keys.unavailable()

    def key(self, *, create: bool, fresh: bool = False) -> bytes | None:
        return self.keys.key(create=create, fresh=fresh)

    def rotate(self) -> bytes:
        return self.keys.rotate()

    def counter(self) -> str | None:
        return self.keys.counter()

    def set_counter(self, value: str) -> None:
        if self.fail == "after":
            self.keys.set_counter(value)
        if self.fail is not None:
            raise RememberUnavailable(f"the keyring failed ({self.fail} raising the counter)")
        self.keys.set_counter(value)
