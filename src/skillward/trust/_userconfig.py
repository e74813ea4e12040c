"""The user's own settings file, ``config.toml`` in the user config directory: for now,
which key store keeps the approval store's key and rollback counter.

```toml
[approvals]
key_store = "file"      # "keyring" (the default) or "file"
```

Pure: text in, the settings and the problems found out; no I/O. Unlike a policy file it
restricts nothing, so nothing in it can lock anything down: a mistake (text that is not
TOML, an unknown key, a bad value) is a problem naming the file and line, and the
setting it spoils keeps its default, the OS keyring, the stronger of the two stores.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from typing import Literal

from skillward.core.errors import printable
from skillward.trust._policylines import TOML_ERROR_LINE, locate, nearest

__all__ = ["KEY_STORES", "KeyStore", "UserConfig", "parse_user_config"]

KeyStore = Literal["keyring", "file"]
#: The key stores there are; the first is the default.
KEY_STORES: tuple[KeyStore, ...] = ("keyring", "file")
_KEYS = {"approvals": ("key_store",)}


@dataclass(frozen=True, slots=True)
class UserConfig:
    """The user's settings as read from ``source``, and every problem found there."""

    source: str
    key_store: KeyStore = "keyring"
    #: The line ``approvals.key_store`` is set on (None: it is not set).
    line: int | None = None
    #: Each problem, one line: ``FILE:LINE: what is wrong; what is used instead``.
    problems: tuple[str, ...] = ()

    @property
    def chosen(self) -> str:
        """Where the key store was chosen, as a message names it."""
        where = f"{self.source}:{self.line}" if self.line else self.source
        return f"approvals.key_store = {self.key_store!r} in {where}"


def parse_user_config(text: str, source: str) -> UserConfig:
    """The settings ``text`` (the file ``source``) holds; never raises."""
    problems: list[str] = []

    def problem(line: int | None, message: str) -> None:
        where = f"{source}:{line}" if line else source
        problems.append(f"{where}: {printable(message, limit=300)}")

    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = TOML_ERROR_LINE.search(str(error))
        problem(int(found.group(1)) if found else None, f"is not TOML ({error}); it is ignored")
        return UserConfig(source, problems=tuple(problems))
    lines = locate(text)
    key_store: KeyStore = "keyring"
    line = None
    for table, value in document.items():
        if table not in _KEYS:
            problem(nearest(lines, (table,)), f"unknown key {table!r} is ignored")
            continue
        if not isinstance(value, dict):
            problem(nearest(lines, (table,)), f"{table!r} is not a table; it is ignored")
            continue
        for key, setting in value.items():
            where = nearest(lines, (table, key))
            if key not in _KEYS[table]:
                problem(where, f"unknown key {f'{table}.{key}'!r} is ignored")
            elif setting in ("keyring", "file"):
                key_store, line = setting, where
            else:
                problem(
                    where,
                    f"approvals.key_store = {setting!r} is not 'keyring' or 'file'; "
                    "the OS keyring is used",
                )
    return UserConfig(source, key_store, line, tuple(problems))
