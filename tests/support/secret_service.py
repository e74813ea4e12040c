"""The session's Secret Service for keyring tests, or a skip that says how to get one.

``.ci/run`` starts one (``dbus-run-session`` and ``gnome-keyring-daemon --unlock``);
in CI a skip fails the run.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import keyring.errors
import pytest
from keyring.backends import SecretService

from skillward.trust._keys import SERVICE, OsKeyring

# keyring's backends are untyped.
SECRET_SERVICE: Any = SecretService.Keyring
#: What the store's processes are pointed at (``PYTHON_KEYRING_BACKEND``).
BACKEND_NAME = "keyring.backends.SecretService.Keyring"


def secret_service_or_skip() -> Any:
    backend = SECRET_SERVICE()
    why = OsKeyring("probe", backend=backend).unavailable()
    if why is not None:
        pytest.skip(
            f"no usable Secret Service ({why}); run under dbus-run-session with an unlocked "
            "gnome-keyring-daemon, as .ci/run does"
        )
    return backend


def forget(backend: Any, store: Path) -> None:
    """Delete the keyring items of the store at ``store``."""
    keys = OsKeyring(str(store.absolute()), backend=backend)
    for what in ("key", "generation", "probe"):
        with contextlib.suppress(keyring.errors.PasswordDeleteError):
            backend.delete_password(SERVICE, keys._account(what))
