"""The gateway's bearer token over HTTP: read from ``--token-file`` (refused unless only
its owner can read it), or made fresh into a 0600 file in the user state directory whose
path, never the token, is printed. Imports no ``mcp``, so a bad token file is reported
before any server is started."""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from skillward.core.errors import ConfigError
from skillward.edge._dirs import gateway_token_file
from skillward.edge._tree import CLOEXEC, NONBLOCK, read_open_file, write_private

__all__ = ["MIN_TOKEN_LENGTH", "load_or_create_token"]

#: Characters of a token from ``--token-file``, at least: guessing must stay out of reach.
MIN_TOKEN_LENGTH = 16
#: Bytes of a token file read at most.
_MAX_TOKEN_FILE = 4096


def load_or_create_token(token_file: Path | None) -> tuple[str, Path]:
    """The bearer token and the file holding it.

    ``token_file`` (``--token-file``) is read: it must be a regular file of the user's,
    readable by no one else, holding one token of at least :data:`MIN_TOKEN_LENGTH`
    printable characters. ``None``: a new token is written to a fresh 0600 file that
    replaces :func:`~skillward.edge._dirs.gateway_token_file`. Print the path, never
    the token. Raises :class:`ConfigError` naming the path.
    """
    if token_file is not None:
        return _read_token(token_file), token_file
    path = gateway_token_file()
    token = secrets.token_urlsafe(32)
    _write_private(path, token)
    return token, path


def _read_token(path: Path) -> str:
    hint = f"Put one token in {path}, readable by you alone (chmod 600)."
    try:
        fd = os.open(path, os.O_RDONLY | NONBLOCK | CLOEXEC)
    except OSError as exc:
        raise ConfigError(f"cannot read the token file {path}: {exc.strerror}", hint=hint) from None
    try:
        _check_private(os.fstat(fd), path, hint)
    except BaseException:
        os.close(fd)
        raise
    try:
        data = read_open_file(fd, _MAX_TOKEN_FILE, path)
    except OSError as exc:
        raise ConfigError(f"cannot read the token file {path}: {exc}", hint=hint) from None
    token = data.decode("latin-1").strip()
    if not token:
        raise ConfigError(f"the token file {path} is empty", hint=hint)
    if not all("!" <= c <= "~" for c in token):
        raise ConfigError(
            f"the token file {path} holds more than one printable ASCII word", hint=hint
        )
    if len(token) < MIN_TOKEN_LENGTH:
        raise ConfigError(
            f"the token in {path} is shorter than {MIN_TOKEN_LENGTH} characters",
            hint=f"{hint} A long random one: python -c 'import secrets; "
            "print(secrets.token_urlsafe(32))'",
        )
    return token


def _check_private(info: os.stat_result, path: Path, hint: str) -> None:
    """Refuse a token file others may read or change: they could use or set the token."""
    if stat.S_ISREG(info.st_mode) and info.st_mode & 0o077:
        raise ConfigError(
            f"the token file {path} is open to group or others "
            f"(mode {stat.S_IMODE(info.st_mode):04o}); anyone who reads it can use the gateway",
            hint=f"chmod 600 {path}",
        )
    getuid = getattr(os, "getuid", None)
    if getuid is not None and info.st_uid != getuid():
        raise ConfigError(f"the token file {path} belongs to another user", hint=hint)


def _write_private(path: Path, token: str) -> None:
    """Write ``token`` to a new 0600 file beside ``path``, then move it over ``path``."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_private(path, f"{token}\n".encode("ascii"))
    except OSError as exc:
        raise ConfigError(
            f"cannot write the gateway token file {path}: {exc.strerror or exc}",
            hint="Pass --token-file FILE with a token of your own.",
        ) from None
