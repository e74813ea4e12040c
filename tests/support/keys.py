"""Key providers for store tests: the store's ``KeyProvider`` interface, without a keyring.

``MemoryKeys`` is one process's view of an in-memory ``Keyring``: like ``OsKeyring``
it keeps the key it read until asked for a fresh one, so two ``MemoryKeys`` over one
``Keyring`` behave as two processes sharing the OS keyring. ``FileKeys`` keeps the key
and counter in a JSON file so several real processes share them; the store only
changes it while holding its lock, as it does the keyring.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Keyring:
    """What the keyring holds, shared by every process using it."""

    secret: bytes | None = None
    counter: int = 0
    #: Why the keyring cannot be used (locked, not recommended), or None.
    refuse: str | None = None
    #: How often the counter was read (each read of the OS keyring is a D-Bus round trip).
    generation_reads: int = 0


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
    def counter(self) -> int:
        return self.keyring.counter

    @counter.setter
    def counter(self, value: int) -> None:
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

    def generation(self) -> int:
        self.keyring.generation_reads += 1
        return self.keyring.counter

    def set_generation(self, value: int) -> None:
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

    def generation(self) -> int:
        value = self._state().get("generation", 0)
        assert isinstance(value, int)
        return value

    def set_generation(self, value: int) -> None:
        self._save({**self._state(), "generation": value})
