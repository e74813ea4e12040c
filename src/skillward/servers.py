"""How to reach a server: host-assigned labels and transport specs.

A host gives every server a **label** of its own choosing (``[a-z0-9-]``); the
label, never the server's self-reported ``serverInfo.name``, is the server's
identity everywhere in skillward. :func:`parse_mcp_servers` reads the
``mcpServers`` JSON format agent hosts already use::

    {"mcpServers": {
        "acme": {"command": "acme-mcp", "args": ["--stdio"], "env": {"TOKEN": "..."}},
        "docs": {"url": "https://docs.example.com/mcp"}
    }}
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from skillward.errors import ConfigError

__all__ = [
    "HttpTransport",
    "InMemoryTransport",
    "ServerSpec",
    "StdioTransport",
    "check_label",
    "load_mcp_servers",
    "parse_mcp_servers",
    "parse_server_option",
]

_LABEL_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")
_MAX_LABEL = 64


def check_label(label: str) -> str:
    """Return ``label`` if it is a valid server label, else raise ConfigError."""
    if not isinstance(label, str) or len(label) > _MAX_LABEL or not _LABEL_RE.match(label):
        raise ConfigError(
            f"server label {label!r} must be 1-{_MAX_LABEL} characters of a-z, 0-9 and single "
            "hyphens (for example 'acme-docs')"
        )
    return label


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StdioTransport(_Spec):
    """Launch ``command`` with ``args`` and speak MCP over its stdin and stdout."""

    kind: Literal["stdio"] = "stdio"
    command: StrictStr = Field(min_length=1)
    args: tuple[StrictStr, ...] = ()
    env: dict[StrictStr, StrictStr] | None = None
    cwd: StrictStr | None = None


class HttpTransport(_Spec):
    """Streamable HTTP at ``url``."""

    kind: Literal["http"] = "http"
    url: StrictStr = Field(pattern=r"^https?://[^\s]+$")


class InMemoryTransport(_Spec):
    """An mcp server object in this process (tests, embedded servers)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    kind: Literal["memory"] = "memory"
    server: Any


class ServerSpec(_Spec):
    """A labelled server and how to reach it."""

    label: StrictStr
    transport: StdioTransport | HttpTransport | InMemoryTransport
    #: "auto" negotiates 2026-07-28 and falls back; "legacy" forces 2025-11-25.
    mode: Literal["auto", "legacy"] = "auto"

    def model_post_init(self, __context: Any) -> None:
        check_label(self.label)

    def describe(self) -> str:
        transport = self.transport
        if isinstance(transport, StdioTransport):
            return "stdio: " + shlex.join([transport.command, *transport.args])
        if isinstance(transport, HttpTransport):
            return transport.url
        return "in-memory server"

    @property
    def identity(self) -> str:
        """How the server is reached, as one string: what approvals and the cache bind to.

        The URL for HTTP, the command line with its arguments for stdio. An in-memory
        server is identified by its object, so its identity never outlives the process.
        A label pointed at a different server has a different identity.
        """
        transport = self.transport
        if isinstance(transport, StdioTransport):
            return "stdio:" + shlex.join([transport.command, *transport.args])
        if isinstance(transport, HttpTransport):
            return "http:" + transport.url
        return f"memory:{type(transport.server).__qualname__}@{id(transport.server):x}"


_IGNORED_KEYS = frozenset({"disabled", "alwaysAllow", "autoApprove", "timeout", "description"})


def _one_server(label: str, raw: object) -> ServerSpec | None:
    check_label(label)
    if not isinstance(raw, Mapping):
        raise ConfigError(f"server {label!r}: expected an object")
    if raw.get("disabled") is True:
        return None
    kind = raw.get("type", raw.get("transport"))
    body = {k: v for k, v in raw.items() if k not in _IGNORED_KEYS | {"type", "transport"}}
    if "headers" in body:
        raise ConfigError(f"server {label!r}: custom HTTP headers are not supported yet")
    try:
        if "url" in body:
            if kind not in (None, "http", "streamable-http", "streamableHttp"):
                raise ConfigError(f"server {label!r}: transport {kind!r} is not supported")
            return ServerSpec(label=label, transport=HttpTransport(**body))
        if "command" in body:
            if kind not in (None, "stdio"):
                raise ConfigError(f"server {label!r}: transport {kind!r} needs a url")
            return ServerSpec(label=label, transport=StdioTransport(**body))
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"server {label!r}: {where}: {first['msg']}") from None
    raise ConfigError(f"server {label!r}: needs either 'command' or 'url'")


def parse_mcp_servers(data: object) -> dict[str, ServerSpec]:
    """Read ``{"mcpServers": {label: {...}}}`` (or the inner mapping) into specs."""
    if isinstance(data, Mapping) and "mcpServers" in data:
        data = data["mcpServers"]
    if not isinstance(data, Mapping):
        raise ConfigError("expected an object mapping server labels to server configs")
    specs: dict[str, ServerSpec] = {}
    for label, raw in data.items():
        spec = _one_server(str(label), raw)
        if spec is not None:
            specs[spec.label] = spec
    return specs


def load_mcp_servers(path: Path) -> dict[str, ServerSpec]:
    """Read an ``mcpServers`` JSON file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read server config {path}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON (line {exc.lineno})") from None
    return parse_mcp_servers(data)


def parse_server_option(text: str) -> ServerSpec:
    """``LABEL=URL`` or ``LABEL=COMMAND ARGS...`` (shell-quoted), as on the command line."""
    label, sep, target = text.partition("=")
    if not sep or not target.strip():
        raise ConfigError(f"expected LABEL=URL_OR_COMMAND, not {text!r}")
    target = target.strip()
    if target.startswith(("http://", "https://")):
        return ServerSpec(label=check_label(label), transport=HttpTransport(url=target))
    try:
        argv = shlex.split(target)
    except ValueError as exc:
        raise ConfigError(f"server {label!r}: cannot split command: {exc}") from None
    return ServerSpec(
        label=check_label(label), transport=StdioTransport(command=argv[0], args=tuple(argv[1:]))
    )
