"""Key providers for store tests: the store's ``KeyProvider`` interface, without a keyring.

``MemoryKeys`` serves one process. ``FileKeys`` keeps the key and counter in a JSON
file so several processes share them (as they share the OS keyring); the store only
changes it while holding its lock, as it does the keyring.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class MemoryKeys:
    secret: bytes | None = None
    counter: int = 0
    refuse: str | None = None
    description: str = "the test keyring"
    writes: list[int] = field(default_factory=list)

    def unavailable(self) -> str | None:
        return self.refuse

    def key(self, *, create: bool, fresh: bool = False) -> bytes | None:
        if self.secret is None and create:
            return self.rotate()
        return self.secret

    def rotate(self) -> bytes:
        self.secret = secrets.token_bytes(32)
        return self.secret

    def generation(self) -> int:
        return self.counter

    def set_generation(self, value: int) -> None:
        self.writes.append(value)
        self.counter = value


@dataclass
class FileKeys:
    path: Path
    description: str = "the test keyring file"

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
