"""Per-user directories, computed in one place (the only module importing platformdirs)."""

from __future__ import annotations

import warnings
from pathlib import Path

import platformdirs

__all__ = [
    "approvals_file",
    "audit_file",
    "default_servers_file",
    "gateway_token_file",
    "key_dir",
    "runtime_dir",
    "server_log_dir",
    "user_cache_dir",
    "user_config_dir",
    "user_config_file",
    "user_data_dir",
    "user_policy_file",
    "user_state_dir",
]

_APP = "skillward"


def user_config_dir() -> Path:
    """Where a person's skillward configuration lives (``~/.config/skillward`` on Linux)."""
    return platformdirs.user_config_path(_APP, appauthor=False)


def default_servers_file() -> Path:
    """The ``mcpServers`` JSON file the command line reads when ``--config`` is not given."""
    return user_config_dir() / "servers.json"


def user_policy_file() -> Path:
    """A person's own policy file: it can only narrow the administrator's."""
    return user_config_dir() / "policy.toml"


def user_config_file() -> Path:
    """A person's own settings (``config.toml``): which key store the approval store uses."""
    return user_config_dir() / "config.toml"


def user_state_dir() -> Path:
    """Where skillward keeps what it writes as it runs (``~/.local/state/skillward`` on
    Linux): server logs, the audit trail, the gateway's token, the file key store."""
    return platformdirs.user_state_path(_APP, appauthor=False)


def server_log_dir() -> Path:
    """Where stdio servers' stderr is kept, one file per label.

    The user state directory (``~/.local/state/skillward/server-logs`` on Linux): never
    a skills directory, so nothing a server writes there can be discovered as a skill.
    """
    return user_state_dir() / "server-logs"


def user_cache_dir() -> Path:
    """Where skillward keeps its disk cache (``~/.cache/skillward`` on Linux)."""
    return platformdirs.user_cache_path(_APP, appauthor=False)


def user_data_dir() -> Path:
    """Where skillward keeps a person's state (``~/.local/share/skillward`` on Linux)."""
    return platformdirs.user_data_path(_APP, appauthor=False)


def approvals_file() -> Path:
    """The approval store: one file, authenticated with a key from the OS keyring (or the
    file key store)."""
    return user_data_dir() / "approvals.json"


def key_dir() -> Path:
    """The file key store's directory (``~/.local/state/skillward/keys`` on Linux, 0700):
    the approval store's key and counter, when the user's config chooses it."""
    return user_state_dir() / "keys"


def audit_file() -> Path:
    """The audit trail, JSON lines (``~/.local/state/skillward/audit.jsonl`` on Linux)."""
    return user_state_dir() / "audit.jsonl"


def gateway_token_file() -> Path:
    """The bearer token ``skillward gateway --http`` made, when given no ``--token-file``.

    The user state directory (``~/.local/state/skillward/gateway-token`` on Linux),
    written 0600 and replaced each time the gateway starts.
    """
    return user_state_dir() / "gateway-token"


def runtime_dir() -> Path:
    """Where skillward keeps what lives only while it runs: the running gateways' approval
    sockets (``$XDG_RUNTIME_DIR/skillward`` on Linux). When ``XDG_RUNTIME_DIR`` is unset,
    or is not a 0700 directory of the user's own, platformdirs' own fallback
    (``/run/user/UID``, else ``runtime-UID`` in the temporary directory), which it holds
    to the same checks; OSError when none passes them."""
    with warnings.catch_warnings():
        # The fallback is the answer, not a problem to report on each use.
        warnings.simplefilter("ignore", platformdirs.RuntimeDirWarning)
        return platformdirs.user_runtime_path(_APP, appauthor=False)
