"""The approval store's key and rollback counter, in the OS keyring.

This is the only module importing ``keyring``. Everything is kept under one
service name, ``skillward``; the account names carry a short hash of the store's
path, so two stores (two users' data directories, or test runs) never share a
counter.

The audit trail keeps a key and a checkpoint counter of its own the same way, under
the prefix ``audit`` (``audit-key-<hash>``) where the approval store's are under
``approvals``.

Only backends that ``keyring`` rates as recommended (priority >= 1) are used,
and only after a write-then-read shows they work: the ``fail`` and null
backends, plaintext files and a locked keyring all mean that approvals cannot be
remembered, never that a host crashes.

Each item is read and written by one process at a time (the store calls in here
under its lock), but the keyring is a shared service: a D-Bus error, such as an
item that vanished between being found and being read, is retried a few times
before the keyring is called unusable. The keyring's own verdicts (locked, no
collection, refused) are not retried: asking again would not change them, and
could raise another unlock prompt.

keyring's Secret Service backend opens a D-Bus connection for every call and closes it
straight after; gnome-keyring-daemon aborts when an item's property is read just after
the connection that found it has gone (a race in its records of clients), and the next
call then starts a daemon with no unlocked collection. So the Secret Service is reached
through one connection per process, used by one call at a time and opened again only
after a D-Bus error or a fork.
"""

from __future__ import annotations

import atexit
import base64
import binascii
import contextlib
import functools
import hashlib
import os
import secrets
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from skillward.core.errors import RememberUnavailable

if TYPE_CHECKING:
    from keyring.backend import KeyringBackend

__all__ = [
    "ATTEMPTS",
    "KEY_BYTES",
    "SERVICE",
    "KeyItems",
    "OsKeyring",
    "decode_key",
    "encode_key",
    "item_name",
]

SERVICE = "skillward"
KEY_BYTES = 32
#: Tries of one keyring call before a D-Bus error counts (the pauses between them add up
#: to 70 ms).
ATTEMPTS = 4
_FIRST_PAUSE = 0.01

_T = TypeVar("_T")


#: What a key store that cannot be used means, by whose keys it holds.
_UNKEPT = {
    "approvals": "approvals cannot be remembered",
    "audit": "the audit trail's checkpoints cannot be authenticated",
}


def item_name(scope: str, what: str, prefix: str = "approvals") -> str:
    """The name of the store's ``what`` (``key``, ``generation``) for the store at path
    ``scope``: a short hash of the path, so two stores never share an item. ``prefix``
    says whose it is (``approvals``; ``audit`` for the audit trail's)."""
    return f"{prefix}-{what}-{hashlib.sha256(scope.encode()).hexdigest()[:16]}"


def encode_key(key: bytes) -> str:
    return base64.b64encode(key).decode()


def decode_key(text: str) -> bytes | None:
    """The key ``text`` holds; None when it holds none (not base64, or not 32 bytes)."""
    try:
        key = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return key if len(key) == KEY_BYTES else None


def _keyring_errors() -> ModuleType:
    # Imported on use: a process that never touches the keyring never loads it.
    import keyring.errors  # noqa: PLC0415

    return keyring.errors


def _no_collection(exc: Exception) -> bool:
    """The Secret Service has no default collection and could not make one (keyring wraps
    secretstorage's dismissed creation prompt in an InitError)."""
    return isinstance(exc, _keyring_errors().InitError) and "collection" in str(exc).lower()


#: One keyring call at a time in this process: the kept D-Bus connection is a blocking
#: one, which threads must not share at once.
_CALLS = threading.RLock()


class _KeptBus:
    """The process's one D-Bus connection, as a collection holds it: keyring closes a
    collection's connection after each call, and closing this does nothing."""

    def __init__(self, bus: Any) -> None:
        self._bus = bus

    def __getattr__(self, name: str) -> Any:
        return getattr(self._bus, name)

    def close(self) -> None:
        """Kept open for the process's life (see the module)."""


class _Connection:
    """The process's one connection to the session bus, opened on first use, again after
    :meth:`drop` or in a forked child, and closed when the process exits."""

    def __init__(self) -> None:
        self._bus: Any = None
        self._pid = 0

    def get(self) -> _KeptBus:
        if self._bus is None or self._pid != os.getpid():
            import secretstorage  # noqa: PLC0415

            # A forked child never shares its parent's connection.
            self._bus, self._pid = secretstorage.dbus_init(), os.getpid()
        return _KeptBus(self._bus)

    def drop(self) -> None:
        bus, self._bus = self._bus, None
        if bus is not None and self._pid == os.getpid():
            with contextlib.suppress(Exception):  # a broken connection may not close
                bus.close()


_BUS = _Connection()
atexit.register(_BUS.drop)


@functools.cache
def _one_connection_backend() -> type:
    """keyring's Secret Service backend on the process's one connection (built on first
    use)."""
    # Imported on use: a process that never touches the keyring never loads them.
    import secretstorage  # noqa: PLC0415
    from keyring.backends import SecretService  # noqa: PLC0415

    class OneConnection(SecretService.Keyring):
        def drop(self) -> None:
            """Forget the connection (after a D-Bus error): the next call opens another."""
            _BUS.drop()

        def get_preferred_collection(self) -> Any:
            # As keyring's own, but on the kept connection.
            bus = _BUS.get()
            try:
                if hasattr(self, "preferred_collection"):
                    collection = secretstorage.Collection(bus, self.preferred_collection)
                else:
                    collection = secretstorage.get_default_collection(bus)
            except secretstorage.exceptions.SecretStorageException as e:
                raise _keyring_errors().InitError(f"Failed to create the collection: {e}.") from e
            if collection.is_locked():
                collection.unlock()
                if collection.is_locked():  # the person dismissed the prompt
                    raise _keyring_errors().KeyringLocked("Failed to unlock the collection!")
            return collection

    return OneConnection


def _kept_connection(backend: Any) -> Any:
    """``backend``, on one kept D-Bus connection if it is keyring's Secret Service one."""
    from keyring.backends import SecretService  # noqa: PLC0415

    if type(backend) is not SecretService.Keyring:
        return backend
    kept = _one_connection_backend()()
    for name in ("preferred_collection", "appid", "scheme"):
        if name in vars(backend):
            setattr(kept, name, getattr(backend, name))
    return kept


class KeyItems:
    """The store's key and rollback counter as two text items, ``key`` (base64) and
    ``generation``, each read with ``_get`` and written with ``_set``: what the OS keyring
    and the file key store share. The key is read once per process and kept; the counter
    is read whenever the store is loaded, because other processes move it."""

    _key: bytes | None = None

    def _get(self, what: str) -> str | None:
        raise NotImplementedError

    def _set(self, what: str, value: str) -> None:
        raise NotImplementedError

    def _kept(self) -> None:
        """Raise RememberUnavailable if the key this process kept may no longer be used."""

    def key(self, *, create: bool, fresh: bool = False) -> bytes | None:
        """The store's key. ``create`` makes one when there is none; ``fresh`` skips the
        copy this process keeps (after another process may have reset the store)."""
        if self._key is not None and not fresh:
            self._kept()
            return self._key
        text = self._get("key")
        key = decode_key(text) if text is not None else None
        if key is None and create:
            return self.rotate()
        self._key = key
        return key

    def rotate(self) -> bytes:
        """Replace the key with 32 new random bytes: everything signed before is untrusted."""
        key = secrets.token_bytes(KEY_BYTES)
        self._set("key", encode_key(key))
        self._key = key
        return key

    def counter(self) -> str | None:
        """The store's rollback counter as last set (None when there is none)."""
        return self._get("generation")

    def set_counter(self, value: str) -> None:
        self._set("generation", value)


class OsKeyring(KeyItems):
    """A key provider backed by the OS keyring (``keyring.get_keyring()`` by default).

    ``pause`` waits between the tries of a call that failed with a D-Bus error;
    ``prefix`` names whose items these are (``item_name``).
    """

    def __init__(
        self,
        scope: str,
        *,
        backend: Any = None,
        pause: Callable[[float], None] = time.sleep,
        prefix: str = "approvals",
    ) -> None:
        self._scope = scope
        self._prefix = prefix
        self._backend: KeyringBackend | None = (
            _kept_connection(backend) if backend is not None else None
        )
        self._pause = pause
        self._checked: str | None = None
        self._usable = False
        self._lock = threading.Lock()

    @property
    def backend(self) -> KeyringBackend:
        if self._backend is None:
            # Imported here: a process that never touches the keyring never loads it.
            import keyring  # noqa: PLC0415

            self._backend = _kept_connection(keyring.get_keyring())
        return self._backend

    @property
    def name(self) -> str:
        """The backend's name, as keyring gives it (``"fail Keyring"``)."""
        backend = self.backend
        return getattr(backend, "name", None) or type(backend).__qualname__

    @property
    def description(self) -> str:
        return f"the keyring backend {self.name!r}"

    def _account(self, what: str) -> str:
        return item_name(self._scope, what, self._prefix)

    def _call(self, action: Callable[[], _T]) -> _T:
        """``action`` (one backend call), tried again after a D-Bus error, a bounded number
        of times; the keyring's own errors are raised at once."""
        delay = _FIRST_PAUSE
        keyring_error = _keyring_errors().KeyringError
        drop = getattr(self._backend, "drop", None)
        with _CALLS:
            for _ in range(ATTEMPTS - 1):
                try:
                    return action()
                except keyring_error:
                    raise
                except Exception:  # D-Bus errors (secretstorage, jeepney) have no common base
                    if drop is not None:
                        drop()  # the connection may be what broke
                    self._pause(delay)
                    delay *= 2
            return action()

    def _failure(self, exc: Exception, what: str) -> str:
        if _no_collection(exc):
            return (
                f"{self.description} has no default keyring and could not create one (its "
                "prompt was dismissed or cannot be shown): create one in Passwords and Keys "
                "(seahorse), or without a desktop run `gnome-keyring-daemon --replace "
                "--unlock` with a password on its standard input, then try again"
            )
        return f"{self.description} {what} ({type(exc).__name__}: {exc})"

    def unavailable(self) -> str | None:
        """Why this keyring cannot hold the key (checked once), or None when it can.

        The check writes, reads back and deletes an item of its own: the store asks
        while holding its lock, so processes sharing a store never check at once."""
        with self._lock:
            if self._checked is None:
                self._checked = self._check()
                self._usable = self._checked == ""
            return None if self._usable else self._checked

    @property
    def priority(self) -> float:
        """The backend's priority as keyring rates it (1 or more: recommended)."""
        try:
            return float(self.backend.priority)
        except Exception:  # a backend's priority may raise when it is unusable
            return 0.0

    def _check(self) -> str:
        backend = self.backend
        priority = self.priority
        if priority < 1:
            return (
                f"{self.description} is not a recommended one (priority {priority:g} < 1), "
                f"so {_UNKEPT.get(self._prefix, _UNKEPT['approvals'])}"
            )
        probe = secrets.token_hex(8)
        account = self._account("probe")
        try:
            self._call(lambda: backend.set_password(SERVICE, account, probe))
            read = self._call(lambda: backend.get_password(SERVICE, account))
            self._call(lambda: backend.delete_password(SERVICE, account))
        except Exception as exc:  # locked, absent or broken: all mean unusable
            return self._failure(exc, "cannot be used")
        if read != probe:
            return f"{self.description} did not return what was written to it"
        return ""

    def _require(self) -> None:
        why = self.unavailable()
        if why is not None:
            raise RememberUnavailable(why)

    def _get(self, what: str) -> str | None:
        self._require()
        backend, account = self.backend, self._account(what)
        try:
            return self._call(lambda: backend.get_password(SERVICE, account))
        except Exception as exc:  # D-Bus and backend errors are not all KeyringErrors
            raise RememberUnavailable(self._failure(exc, "failed")) from None

    def _set(self, what: str, value: str) -> None:
        self._require()
        backend, account = self.backend, self._account(what)
        try:
            self._call(lambda: backend.set_password(SERVICE, account, value))
        except Exception as exc:  # D-Bus and backend errors are not all KeyringErrors
            raise RememberUnavailable(self._failure(exc, "failed")) from None
