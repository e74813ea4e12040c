"""Where policy files live, whether they can be trusted, and the effective policy they make.

The administrator's layer is ``policy.toml`` and then ``policy.d/*.toml`` (in name
order) in one directory that nothing but code can move: ``/etc/skillward`` on Linux
and other Unix systems, ``/Library/Application Support/skillward`` on macOS,
``C:\\ProgramData\\skillward`` on Windows. No environment variable or flag changes
it; a host (and the tests) may pass another directory in code.

On Unix that directory, ``policy.d`` and every file must be owned by root (the
``admin_owner``) and writable by no one else, and none may be a symbolic link. If
any is not, the effective policy is in lockdown: the strictest there is. So is it
when an administrator file cannot be read, is not TOML, or is of another version.

Then comes the user's file (``policy.toml`` in the user config directory), then the
host's mapping. A user file that cannot be read also locks down: it was written to
narrow, so ignoring it would widen.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from skillward.core.config import Limits
from skillward.edge._dirs import user_policy_file
from skillward.edge._tree import (
    DIR_FLAGS,
    READ_FLAGS,
    FileTooLarge,
    NotRegularFile,
    read_open_file,
    read_regular_file,
)
from skillward.trust._policyfile import (
    UNUSABLE,
    ParsedPolicy,
    PolicyFile,
    PolicyProblem,
    parse_policy,
    parse_policy_data,
)
from skillward.trust.policy import EffectivePolicy, Lockdown, PolicyLayer

__all__ = ["HOST_SOURCE", "admin_policy_dir", "load_policy", "read_policy_file"]

logger = logging.getLogger("skillward")

#: The source named for values a host passes in code.
HOST_SOURCE = "host code"

_POSIX = sys.platform != "win32"
_FIX = "Make it owned by root and writable only by root: chown root PATH; chmod go-w PATH."


def admin_policy_dir() -> Path:
    """The administrator's policy directory on this system (fixed; see the module doc)."""
    if sys.platform == "win32":
        return Path("C:/ProgramData/skillward")
    if sys.platform == "darwin":
        return Path("/Library/Application Support/skillward")
    return Path("/etc/skillward")


class _Unsafe(Exception):  # internal signal: the layer cannot be trusted
    def __init__(self, path: Path, reason: str, hint: str = _FIX) -> None:
        self.lockdown = Lockdown(str(path), reason, hint.replace("PATH", str(path)))


def _check_owner(info: os.stat_result, path: Path, owner: int, what: str) -> None:
    kind = stat.S_ISDIR if what == "directory" else stat.S_ISREG
    if not kind(info.st_mode):
        raise _Unsafe(path, f"is not a {what}")
    if info.st_uid != owner:
        raise _Unsafe(path, f"is owned by uid {info.st_uid}, not {owner} (root)")
    writable = [who for who, bit in (("group", 0o020), ("others", 0o002)) if info.st_mode & bit]
    if writable:
        mode = stat.S_IMODE(info.st_mode)
        raise _Unsafe(path, f"is {'- and '.join(writable)}-writable (mode {mode:o})")


def _open(path: Path, flags: int, parent: int | None, owner: int, what: str) -> int | None:
    """A descriptor for ``path`` once it passed the checks; None if it does not exist."""
    try:
        fd = os.open(path.name if parent is not None else path, flags, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.EMLINK):
            raise _Unsafe(path, "is a symbolic link") from None
        if error.errno == errno.ENOTDIR:
            raise _Unsafe(path, f"is not a {what}") from None
        raise _Unsafe(path, f"cannot be read ({error.strerror})", "Make it readable.") from None
    try:
        _check_owner(os.fstat(fd), path, owner, what)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read(path: Path, limit: int, fd: int | None = None) -> str | None:
    """A policy file's text: from ``fd`` (open, and checked), or else from ``path``,
    following links; None if there is no file there."""
    try:
        if fd is not None:
            data = read_open_file(fd, limit, path)
        else:
            data = read_regular_file(path, limit, follow_symlinks=True)
    except FileNotFoundError:
        return None
    except FileTooLarge:
        hint = "A policy file is small; check it."
        raise _Unsafe(path, f"is larger than {limit} bytes", hint) from None
    except NotRegularFile:
        raise _Unsafe(path, "is not a regular file", "Fix or remove it.") from None
    except OSError as error:
        hint = "Make it readable." if fd is not None else "Fix or remove it."
        raise _Unsafe(path, f"cannot be read ({error.strerror})", hint) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _Unsafe(path, "is not UTF-8 text", "Save it as UTF-8.") from None


def _parsed(text: str, path: Path) -> ParsedPolicy:
    return _checked(parse_policy(text, str(path)))


def _checked(parsed: ParsedPolicy) -> ParsedPolicy:
    """``parsed``, unless a fatal problem means it cannot be used at all."""
    fatal = parsed.fatal
    if fatal is not None:
        where = f" at line {fatal.line}" if fatal.line else ""
        hint = f"Fix it, then run `skillward policy check {parsed.source}`."
        why = fatal.message.removesuffix(UNUSABLE)
        raise _Unsafe(Path(parsed.source), f"cannot be used{where}: {why}", hint)
    return parsed


def _admin_layers(directory: Path, owner: int, limit: int) -> list[PolicyLayer]:
    if not _POSIX:
        return _plain_layers(directory, limit)
    top = _open(directory, DIR_FLAGS, None, owner, "directory")
    if top is None:
        return []
    layers: list[PolicyLayer] = []
    try:
        path = directory / "policy.toml"
        main = _open(path, READ_FLAGS, top, owner, "regular file")
        if main is not None:
            layers.append(_admin_layer(path, limit, main))
        drop_ins = directory / "policy.d"
        sub = _open(drop_ins, DIR_FLAGS, top, owner, "directory")
        if sub is None:
            return layers
        try:
            names = sorted(n for n in os.listdir(sub) if n.endswith(".toml") and n[0] != ".")
            for name in names:
                path = drop_ins / name
                fd = _open(path, READ_FLAGS, sub, owner, "regular file")
                if fd is not None:
                    layers.append(_admin_layer(path, limit, fd))
        finally:
            os.close(sub)
    finally:
        os.close(top)
    return layers


def _admin_layer(path: Path, limit: int, fd: int) -> PolicyLayer:
    text = _read(path, limit, fd)
    assert text is not None  # read from an open descriptor: it exists
    return PolicyLayer("admin", _parsed(text, path))


def _plain_layers(directory: Path, limit: int) -> list[PolicyLayer]:
    """Windows: no owner or mode checks (ACLs are not read; see docs/admin-guide.md)."""
    paths = [directory / "policy.toml", *sorted((directory / "policy.d").glob("*.toml"))]
    texts = [(path, _read(path, limit)) for path in paths]
    return [PolicyLayer("admin", _parsed(text, path)) for path, text in texts if text is not None]


def _user_layer(path: Path, limit: int) -> PolicyLayer | None:
    # A user's file may be a link (dotfile managers make them): it can only narrow.
    text = _read(path, limit)
    return PolicyLayer("user", _parsed(text, path)) if text is not None else None


def read_policy_file(path: Path) -> ParsedPolicy:
    """Read one policy file as ``skillward policy check`` does: no ownership checks.
    A file that is missing or cannot be read comes back with a fatal problem."""
    try:
        text = _read(path, Limits().max_policy_bytes)
    except _Unsafe as unsafe:
        text, reason = None, unsafe.lockdown.reason
    else:
        reason = "cannot be read (No such file or directory)"
    if text is None:
        problem = PolicyProblem(str(path), None, reason, True)
        return ParsedPolicy(str(path), None, (problem,), {})
    return parse_policy(text, str(path))


def load_policy(
    *,
    headless: bool = False,
    host: PolicyFile | Mapping[str, Any] | None = None,
    admin_dir: Path | None = None,
    admin_owner: int = 0,
    user_file: Path | None = None,
    limits: Limits | None = None,
    report: Callable[[str], None] | None = None,
) -> EffectivePolicy:
    """The policy in force: the administrator's files, the user's, then ``host``.

    ``headless``: no person can be asked here, so every ``"prompt"`` means deny.
    ``host``: the host's own policy, a :class:`PolicyFile` or a mapping of the same keys;
    it narrows the files, and may add pins. ``admin_dir`` and ``admin_owner`` (the uid
    that must own it) exist for tests and embedding hosts; nothing else moves them.
    ``user_file`` defaults to ``policy.toml`` in the user config directory. ``report``
    is told each problem found (by default they are logged as warnings).
    """
    limit = (limits or Limits()).max_policy_bytes
    directory = admin_dir if admin_dir is not None else admin_policy_dir()
    layers: list[PolicyLayer] = []
    lockdown = None
    try:
        layers.extend(_admin_layers(directory, admin_owner, limit))
        user = _user_layer(user_file if user_file is not None else user_policy_file(), limit)
        if user is not None:
            layers.append(user)
    except _Unsafe as unsafe:
        layers, lockdown = [], unsafe.lockdown
    if host is not None:
        parsed = (
            ParsedPolicy(HOST_SOURCE, host, (), {})
            if isinstance(host, PolicyFile)
            else parse_policy_data(host, HOST_SOURCE)
        )
        if parsed.fatal is None:
            layers.append(PolicyLayer("host", parsed))
        elif lockdown is None:
            fatal = parsed.fatal
            lockdown = Lockdown(
                HOST_SOURCE, f"cannot be used: {fatal.message.removesuffix(UNUSABLE)}"
            )
    policy = EffectivePolicy(layers, headless=headless, lockdown=lockdown)
    say = report or (lambda text: logger.warning("policy: %s", text))
    for problem in policy.problems:
        say(str(problem))
    if lockdown is not None:
        say(lockdown.message)
    return policy
