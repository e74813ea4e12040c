"""The file key store: the approval store's key and rollback counter in two files, for
machines with no usable OS keyring (containers, SSH sessions, WSL, CI runners); and the
choice between it and the keyring, from the user's ``config.toml``.

It is used only when the user opts in (``approvals.key_store = "file"``), and an
administrator's ``keyring.require_recommended = true`` refuses it (``policy.py``). The
files are ``keys/approvals-key-<hash>`` and ``keys/approvals-generation-<hash>`` in the
user state directory (``~/.local/state/skillward`` on Linux), named as the keyring's
items are (``_keys.item_name``), and checked before anything is read or written:

* the directory lies in no skill discovery path and holds none, nor lies in the
  workspace (the current directory, unless that holds the home directory: from ``~`` or
  ``/`` no writer is confined to anything narrower), compared as given and with every
  symlink resolved, as the disk cache is (``edge/_local.overlap``); it is the user's own
  directory, never a link, with no access for group or others, and made 0700;
* each file, on every read, is opened with ``O_NOFOLLOW`` and must be a regular file of
  the user's that no one else may read or write.

Anything else refuses to remember, saying what is wrong and the fix (``chmod 600 ...``).
A file is replaced whole (``edge/_tree.write_private``: a new 0600 file, fsynced, moved
over the old one, then the directory fsynced), so a crash leaves the old value or the
new one.

What it defends: a writer confined to the workspace (an agent's tool, the model through a
file-writing tool, a skill's output) and anything that changes the store without the
key. What it does not: any process of the same user can read the key and sign approvals.
The keyring does better where there is one. See SECURITY.md (T58).
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from skillward.core.config import Limits
from skillward.core.errors import RememberUnavailable
from skillward.edge._dirs import key_dir, user_config_file
from skillward.edge._local import default_local_dirs, overlap
from skillward.edge._tree import (
    DIR_FLAGS,
    READ_FLAGS,
    read_open_file,
    read_regular_file,
    write_private,
)
from skillward.trust._keys import KeyItems, OsKeyring, item_name
from skillward.trust._userconfig import UserConfig, parse_user_config

__all__ = ["SUPPORTED", "FileKeyring", "read_user_config", "user_keys"]

logger = logging.getLogger("skillward")

#: Where file modes, owners and ``O_NOFOLLOW`` can be relied on.
SUPPORTED = sys.platform != "win32" and hasattr(os, "O_NOFOLLOW")
#: Bytes of a key or counter file read at most (each holds one short line).
_MAX_ITEM = 4096
_PRIVATE = 0o077  # group's and others' bits
_DOCTOR = "`skillward doctor` says which key store is in use, what works here, and each fix."


class _Refused(Exception):  # internal signal: why the files cannot be used, and the fix
    def __init__(self, reason: str, fix: str) -> None:
        self.reason = reason
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.reason}; to fix it: {self.fix}"

    def error(self) -> RememberUnavailable:
        return RememberUnavailable(str(self), hint=_DOCTOR)


def _holds(outer: Path, inner: Path) -> bool:
    """Whether ``outer`` is ``inner`` or above it, as given or with links resolved."""
    for a in (os.path.abspath(outer), os.path.realpath(outer)):
        for b in (os.path.abspath(inner), os.path.realpath(inner)):
            if os.path.commonpath([a, b]) == a:
                return True
    return False


@dataclass(frozen=True)
class _Words:
    """What the refusals say of a key: what removing it costs, what reading it allows,
    and what to do once someone else may have read it."""

    lost: str
    power: str
    exposed: str


_WORDS = {
    "approvals": _Words(
        lost="every remembered approval is then asked again",
        power="sign approvals",
        exposed="then `skillward approvals reset` if anyone else may have read it",
    ),
    "audit": _Words(
        lost="the audit trail's checkpoints made before can then no longer be checked "
        "(`skillward audit verify` stops at the first of them)",
        power="forge the audit trail's checkpoints",
        exposed="if anyone else may have read it, the trail's checkpoints made before "
        "vouch for nothing: say so to whoever collects the trail",
    ),
}


class FileKeyring(KeyItems):
    """A key provider keeping the store's key and rollback counter in files (see the
    module docstring): ``scope`` is the store's path, ``directory`` defaults to ``keys``
    in the user state directory, ``prefix`` names whose files these are (``approvals``,
    or ``audit`` for the audit trail's key and checkpoint counter). ``discovery``
    (default: the ``.agents/skills`` conventions), ``workspace`` (default: the current
    directory) and ``home`` are where the directory may not be. ``chosen`` says where
    the user chose it, for messages.
    """

    def __init__(
        self,
        scope: str,
        directory: Path | None = None,
        *,
        discovery: Iterable[Path] | None = None,
        workspace: Path | None = None,
        home: Path | None = None,
        chosen: str = "",
        prefix: str = "approvals",
    ) -> None:
        self.directory = Path(os.path.abspath(directory if directory is not None else key_dir()))
        self.key_path = self.directory / item_name(scope, "key", prefix)
        self.counter_path = self.directory / item_name(scope, "generation", prefix)
        self.chosen = chosen
        self._words = _WORDS.get(prefix, _WORDS["approvals"])
        self._discovery = (
            tuple(discovery)
            if discovery is not None
            else tuple(d.path for d in default_local_dirs())
        )
        self._workspace = workspace if workspace is not None else Path.cwd()
        self._home = home if home is not None else Path.home()
        self._checked = False
        #: Why the files cannot be used, and the fix (set by the first check).
        self.refusal: tuple[str, str] | None = None
        self._lock = threading.Lock()

    @property
    def description(self) -> str:
        return f"the file key store in {self.directory}"

    # --- the checks ---------------------------------------------------------------------

    def isolate_from(self, directory: Path) -> None:
        """Refuse the files, too, where they overlap ``directory``, a skill discovery path
        a host added (``--skills-dir``): checked again on the next use."""
        with self._lock:
            if directory not in self._discovery:
                self._discovery = (*self._discovery, directory)
                if self.refusal is None:
                    self._checked = False

    def unavailable(self) -> str | None:
        """Why the files cannot hold the key (checked once), or None when they can."""
        with self._lock:
            if not self._checked:
                try:
                    self._check()
                except _Refused as refused:
                    self.refusal = (refused.reason, refused.fix)
                self._checked = True
            return None if self.refusal is None else str(_Refused(*self.refusal))

    def _check(self) -> None:
        if not SUPPORTED:
            raise _Refused(
                "the file key store needs POSIX file modes and O_NOFOLLOW, which this "
                "platform lacks",
                f"use the OS keyring: remove approvals.key_store from {user_config_file()}",
            )
        self._placement()
        self._make_directory()
        self._check_path(self.key_path)
        self._check_path(self.counter_path)

    def _placement(self) -> None:
        ours = {str(self.directory), os.path.realpath(self.directory)}
        move = (
            "keep the user state directory outside it (on Linux, set XDG_STATE_HOME to a "
            "directory of your own elsewhere)"
        )
        for path in self._discovery:
            found = overlap(ours, path)
            if found is not None:
                raise _Refused(
                    f"the key directory {self.directory} overlaps the skill discovery path "
                    f"{path} ({found[0]} and {found[1]}): whatever can write skills there "
                    "could replace the key",
                    move,
                )
        if _holds(self._workspace, self._home):
            return  # from ~ or above it, a writer is confined to nothing narrower
        found = overlap(ours, self._workspace)
        if found is not None:
            raise _Refused(
                f"the key directory {self.directory} overlaps the workspace "
                f"{self._workspace} ({found[0]} and {found[1]}): a writer confined to the "
                "workspace could replace the key",
                f"run skillward from another directory, or {move}",
            )

    def _make_directory(self) -> None:
        directory = self.directory
        try:
            directory.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.mkdir(directory, 0o700)
            except FileExistsError:
                pass
            else:
                os.chmod(directory, 0o700)  # the umask may have taken the owner's bits too
            fd = os.open(directory, DIR_FLAGS)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                raise self._link(directory, "the key directory") from None
            raise _Refused(
                f"the key directory {directory} cannot be made or opened ({exc.strerror})",
                f"make it yourself: mkdir -p {directory} && chmod 700 {directory}",
            ) from None
        try:
            info = os.fstat(fd)
        finally:
            os.close(fd)
        if info.st_uid != os.geteuid():
            raise _Refused(
                f"the key directory {directory} belongs to uid {info.st_uid}, not to you "
                f"(uid {os.geteuid()})",
                f"remove it (rm -r {directory}); skillward makes it anew",
            )
        if info.st_mode & _PRIVATE:
            raise _Refused(
                f"the key directory {directory} is open to group or others (mode "
                f"{stat.S_IMODE(info.st_mode):04o})",
                f"chmod 700 {directory}",
            )

    def _check_path(self, path: Path) -> None:
        """The file at ``path``, if there is one, checked without opening it."""
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise self._unreadable(path, exc) from None
        if stat.S_ISLNK(info.st_mode):
            raise self._link(path, self._name(path))
        self._check_file(info, path)

    def _name(self, path: Path) -> str:
        return "the key file" if path == self.key_path else "the counter file"

    def _check_file(self, info: os.stat_result, path: Path) -> None:
        name = self._name(path)
        if not stat.S_ISREG(info.st_mode):
            raise _Refused(
                f"{name} {path} is not a regular file",
                f"remove it (rm -r {path}); {self._words.lost}",
            )
        if info.st_uid != os.geteuid():
            raise _Refused(
                f"{name} {path} belongs to uid {info.st_uid}, not to you (uid {os.geteuid()})",
                f"remove it (rm {path}); {self._words.lost}",
            )
        if info.st_mode & _PRIVATE:
            raise _Refused(
                f"{name} {path} is open to group or others (mode "
                f"{stat.S_IMODE(info.st_mode):04o}), so whoever read it could "
                f"{self._words.power}",
                f"chmod 600 {path}; {self._words.exposed}",
            )

    def _link(self, path: Path, name: str) -> _Refused:
        return _Refused(
            f"{name} {path} is a symbolic link, which skillward never follows",
            f"remove the link (rm {path}); skillward makes a new one, and {self._words.lost}",
        )

    def _unreadable(self, path: Path, exc: OSError) -> _Refused:
        return _Refused(
            f"{self._name(path)} {path} cannot be read ({exc.strerror or exc})",
            f"make it yours and private (chmod 600 {path}), or remove it",
        )

    def _require(self) -> None:
        if self.unavailable() is not None and self.refusal is not None:
            raise _Refused(*self.refusal).error()

    # --- reading and writing ------------------------------------------------------------

    def _path(self, what: str) -> Path:
        return self.key_path if what == "key" else self.counter_path

    def _get(self, what: str) -> str | None:
        self._require()
        path = self._path(what)
        try:
            fd = os.open(path, READ_FLAGS)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise self._link(path, self._name(path)).error() from None
            raise self._unreadable(path, exc).error() from None
        try:
            self._check_file(os.fstat(fd), path)
        except _Refused as refused:
            os.close(fd)
            raise refused.error() from None
        try:
            data = read_open_file(fd, _MAX_ITEM, path)
        except OSError as exc:
            raise self._unreadable(path, exc).error() from None
        return data.decode("ascii", errors="replace").strip()

    def _set(self, what: str, value: str) -> None:
        self._require()
        path = self._path(what)
        try:
            write_private(path, f"{value}\n".encode("ascii"))
        except OSError as exc:
            raise RememberUnavailable(
                f"cannot write {self._name(path)} {path} ({exc.strerror or exc})",
                hint=_DOCTOR,
            ) from None

    def _kept(self) -> None:
        try:  # the key kept is used only while its file stays private
            self._check_path(self.key_path)
        except _Refused as refused:
            raise refused.error() from None


# --- the user's choice ---------------------------------------------------------------------


def read_user_config(path: Path | None = None) -> UserConfig:
    """The user's settings, from ``path`` (default: ``config.toml`` in the user config
    directory, which may be a link: dotfile managers make them). A file that cannot be
    read is a problem, and the defaults apply."""
    path = path if path is not None else user_config_file()
    source = str(path)
    try:
        # Held to the policy files' bound: both are small files a person writes.
        data = read_regular_file(path, Limits().max_policy_bytes, follow_symlinks=True)
    except FileNotFoundError:
        return UserConfig(source)
    except OSError as exc:
        why = f"{source}: cannot be read ({exc.strerror or exc}); the OS keyring is used"
        return UserConfig(source, problems=(why,))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return UserConfig(source, problems=(f"{source}: is not UTF-8 text; it is ignored",))
    return parse_user_config(text, source)


def user_keys(
    store: Path, config: UserConfig | None = None, *, prefix: str = "approvals"
) -> OsKeyring | FileKeyring:
    """The key provider the user's settings choose for the store at ``store``: the OS
    keyring, or the file key store where ``approvals.key_store = "file"``. ``config``
    defaults to the user's file, whose problems are then logged. ``prefix``: whose
    items (``audit`` for the audit trail at ``store``)."""
    if config is None:
        config = read_user_config()
        for problem in config.problems:
            logger.warning("config: %s", problem)
    scope = str(store.absolute())
    if config.key_store == "file":
        return FileKeyring(scope, chosen=config.chosen, prefix=prefix)
    return OsKeyring(scope, prefix=prefix)
