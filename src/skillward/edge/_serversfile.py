"""The servers file changed one entry at a time (``skillward servers add``, ``remove``),
and its entries as written (``servers list``).

It is the ``mcpServers`` JSON file every command reads (:mod:`skillward.edge.servers`):
``servers.json`` in the user config directory, or the file ``--config`` names. A change
is read, made and written while holding the file's lock (``.NAME.lock`` beside it), so
that of two commands changing it at once neither loses the other's entry. It is written
to a new file in the same directory, mode 0600 (headers and ``env`` may hold secrets),
fsynced and moved over the old one: a reader sees the old file or the new one, never a
part. Entries and keys a change does not touch keep their values and their order (the
file is indented anew). Values are stored as given: ``${VAR}`` is expanded when the file
is read, never here, and no header or ``env`` value is ever shown.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from skillward.core.errors import ConfigError
from skillward.core.labels import normalise_label
from skillward.core.registry import unknown_label
from skillward.edge._tree import CLOEXEC, NOFOLLOW, write_private
from skillward.edge.servers import (
    StdioTransport,
    _first_error,
    _read_json,
    parse_mcp_servers,
    parse_server_option,
)

if sys.platform != "win32":
    import fcntl

__all__ = ["Entry", "add_server", "new_entry", "read_entries", "remove_server"]

#: What ``servers list`` shows in place of a header or ``env`` value.
MASK = "***"


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of the servers file as written (nothing expanded), for people: the
    names of its headers and ``env`` variables, never their values."""

    #: The name the file gives it, and its label (None for a name no label can be made of).
    name: str
    label: str | None
    #: "stdio" or "http"; None when it has neither a command nor a URL.
    transport: str | None
    #: The URL, or the command line (shell-quoted).
    target: str
    headers: tuple[str, ...]
    env: tuple[str, ...]
    disabled: bool
    #: Why the commands skip it when they read the file (in this environment), if they do.
    problem: str | None

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "label": self.label,
            "transport": self.transport,
            "target": self.target,
            "headers": dict.fromkeys(self.headers, MASK),
            "env": dict.fromkeys(self.env, MASK),
            "disabled": self.disabled,
            "problem": self.problem,
        }


# --- an entry made from the command line ---------------------------------------------------


class _EveryVariableSet(Mapping[str, str]):
    """The environment, with every variable it lacks set: an entry is checked as it will
    load once its ``${VAR}`` are set where the commands run."""

    def __getitem__(self, name: str) -> str:
        return os.environ.get(name, "set")

    def __iter__(self) -> Iterator[str]:
        return iter(os.environ)

    def __len__(self) -> int:
        return len(os.environ)


def new_entry(
    label: str,
    target: str,
    *,
    headers: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The entry for ``target``, read as ``--server`` reads it: a URL is streamable HTTP
    (``url``, with ``headers``), anything else a shell-quoted command line for stdio
    (``command`` and ``args``, with ``env``). Values are kept as given, ``${VAR}`` and all;
    the entry is checked as the commands will read it. Errors never quote a value."""
    try:
        spec = parse_server_option(f"{label}={target}")
    except ValidationError as exc:  # an empty command; its error quotes nothing
        raise ConfigError(f"server {label!r}: {_first_error(exc)}") from None
    entry: dict[str, Any]
    command = spec.transport
    if isinstance(command, StdioTransport):
        if headers:
            raise ConfigError(
                f"server {label!r}: --header is for servers reached by URL; this is a command"
            )
        entry = {"command": command.command, "args": list(command.args)}
        if env:
            entry["env"] = dict(env)
    else:
        if env:
            raise ConfigError(f"server {label!r}: --env is for stdio servers; this is a URL")
        entry = {"url": target.strip()}
        if headers:
            entry["headers"] = dict(headers)
    checked = parse_mcp_servers({label: entry}, environ=_EveryVariableSet())
    if checked.problems:
        raise checked.problems[0]
    return entry


# --- the file ------------------------------------------------------------------------------


def _label(name: str) -> str | None:
    try:
        return normalise_label(name)
    except ConfigError:
        return None


def _read(path: Path) -> dict[str, Any]:
    """The file's JSON object; an empty one if there is no file."""
    if not os.path.lexists(path):
        return {}
    data = _read_json(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected an object mapping server names to server configs")
    return data


def _servers(document: dict[str, Any], path: Path) -> dict[str, Any]:
    """The object whose keys are the servers' names, as the commands read it: the
    ``mcpServers`` key, or the whole object when it has none (an empty file gets one)."""
    if not document:
        document["mcpServers"] = {}
    servers = document.get("mcpServers", document)
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: 'mcpServers' is not an object")
    return servers


def _write(path: Path, document: dict[str, Any]) -> None:
    """Replace the file with ``document``: a new 0600 file beside it, fsynced, moved over."""
    try:
        text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        data = text.encode("utf-8")
    except ValueError:  # a float JSON cannot hold, or text no UTF-8 can (argv's lone surrogates)
        raise ConfigError(f"{path}: cannot be written back as UTF-8 JSON") from None
    write_private(path, data)


@contextlib.contextmanager
def _changing(path: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The file (a link followed to it) and its JSON object, under its lock; what the
    body leaves in the object is written back when it ends without an error."""
    path = Path(os.path.realpath(path))
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock = os.open(
            path.with_name(f".{path.name}.lock"),
            os.O_RDWR | os.O_CREAT | NOFOLLOW | CLOEXEC,
            0o600,
        )
    except OSError as exc:
        raise ConfigError(f"cannot change server config {path}: {exc.strerror or exc}") from None
    try:
        if sys.platform != "win32":  # Windows has no such lock: one writer at a time there
            fcntl.flock(lock, fcntl.LOCK_EX)
        document = _read(path)
        yield path, document
        try:
            _write(path, document)
        except OSError as exc:
            raise ConfigError(f"cannot write server config {path}: {exc.strerror}") from None
    finally:
        os.close(lock)  # releases the lock


def add_server(path: Path, label: str, entry: dict[str, Any], *, replace: bool = False) -> bool:
    """Add ``entry`` (:func:`new_entry`) under ``label``; True if it replaced an entry.

    A label is taken by any entry whose name makes the same label (``Acme_Docs`` takes
    ``acme-docs``), a disabled one too: that is a ConfigError unless ``replace``, which
    puts the new entry where the old one was.
    """
    with _changing(path) as (real, document):
        servers = _servers(document, real)
        taken = [name for name in servers if _label(name) == label]
        if taken and not replace:
            raise ConfigError(
                f"server label {label!r} is taken in {real} by the entry {taken[0]!r}",
                hint="Choose another label, or pass --replace to replace that entry.",
            )
        kept = {name: value for name, value in servers.items() if name not in taken[1:]}
        servers.clear()
        for name, value in kept.items():
            if taken and name == taken[0]:
                servers[label] = entry
            else:
                servers[name] = value
        servers.setdefault(label, entry)
    return bool(taken)


def remove_server(path: Path, label: str) -> list[str]:
    """Remove the entries labelled ``label``; the names they had. None is UnknownServer."""
    with _changing(path) as (real, document):
        servers = _servers(document, real)
        names = [name for name in servers if _label(name) == label]
        if not names:
            labels = (found for found in map(_label, servers) if found is not None)
            raise unknown_label(label, labels, f"no server is labelled {label!r} in {real}")
        for name in names:
            del servers[name]
    return names


def read_entries(path: Path, *, must_exist: bool = False) -> list[Entry]:
    """Every entry of the file, in order, as written; none if there is no file (an error
    if ``must_exist``). ``problem`` says why the commands would skip an entry here."""
    if must_exist and not path.exists():
        raise ConfigError(f"cannot read server config {path}: No such file or directory")
    document = _read(path)
    servers = _servers(document, path) if document else {}
    entries: list[Entry] = []
    first: dict[str, str] = {}
    for name, raw in servers.items():
        body = raw if isinstance(raw, dict) else {}
        disabled = body.get("disabled") is True
        label = _label(name)
        problems = parse_mcp_servers({name: raw}).problems
        problem = problems[0].message if problems else None
        if label is not None and not disabled:
            if problem is None and label in first:
                problem = f"its label {label!r} is already taken by {first[label]!r}"
            first.setdefault(label, name)
        entries.append(
            Entry(
                name=name,
                label=label,
                transport=_kind(body),
                target=_target(body),
                headers=_names(body.get("headers")),
                env=_names(body.get("env")),
                disabled=disabled,
                problem=None if disabled else problem,
            )
        )
    return entries


def _kind(body: Mapping[str, Any]) -> str | None:
    if "url" in body:
        return "http"
    return "stdio" if "command" in body else None


def _target(body: Mapping[str, Any]) -> str:
    """The URL or the command line as written (``${VAR}`` shown, never its value)."""
    if "url" in body:
        return str(body["url"])
    if "command" not in body:
        return ""
    args = body.get("args")
    words = [body["command"], *(args if isinstance(args, list) else [])]
    return shlex.join(str(word) for word in words)


def _names(values: object) -> tuple[str, ...]:
    return tuple(str(name) for name in values) if isinstance(values, dict) else ()
