"""How to reach a server: host-assigned labels and transport specs.

A host gives every server a **label** of its own choosing (``[a-z0-9-]``); the
label, never the server's self-reported ``serverInfo.name``, is the server's
identity everywhere in skillward. :func:`parse_mcp_servers` reads the
``mcpServers`` JSON format agent hosts already use::

    {"mcpServers": {
        "acme": {"command": "acme-mcp", "args": ["--stdio"], "env": {"TOKEN": "${ACME_TOKEN}"}},
        "My Docs": {"url": "https://docs.example.com/mcp",
                    "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}
    }}

Names such as ``brave_search`` or ``My Docs`` become labels by
:func:`~skillward.core.labels.normalise_label` (``brave-search``, ``my-docs``). ``${VAR}`` (or
``${VAR:-default}``) in ``args``, ``env`` and ``headers`` is taken from the
environment. Header and environment values are secrets: they never appear in a
repr, an error, a log line, :meth:`ServerSpec.describe` or
:attr:`ServerSpec.identity`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StrictStr,
    ValidationError,
    field_validator,
)

from skillward.core.errors import ConfigError
from skillward.core.labels import check_label, normalise_label
from skillward.core.urls import parse_http_url, split_url

__all__ = [
    "HttpTransport",
    "InMemoryTransport",
    "ServerSpec",
    "ServersConfig",
    "StdioTransport",
    "load_mcp_servers",
    "parse_mcp_servers",
    "parse_server_option",
    "redact",
]


class _Spec(BaseModel):
    # Inputs can hold secrets (headers, env): validation errors never quote them. Built
    # on first use, not at import (see skillward.core.wire.WireModel).
    model_config = ConfigDict(
        frozen=True, extra="forbid", hide_input_in_errors=True, defer_build=True
    )


class StdioTransport(_Spec):
    """Launch ``command`` with ``args`` and speak MCP over its stdin and stdout.

    ``stderr`` says where the server's stderr goes. ``"log"`` (the default) appends it to
    a capped per-label log file in the user state directory, read back only escaped
    (``skillward logs LABEL``). ``"unsafe-inherit"`` passes it raw to this process's
    stderr, where a server can write escape sequences that rewrite the terminal, prompts
    included, and the secrets it was started with are not scrubbed: only for debugging a
    server you wrote, and it logs a warning each time.
    ``"discard"`` drops it. ``log_dir`` puts the log elsewhere (never in a skills
    directory); it is not part of the server's identity.
    """

    kind: Literal["stdio"] = "stdio"
    command: StrictStr = Field(min_length=1)
    args: tuple[StrictStr, ...] = ()
    #: Extra environment variables for the server. Values are secrets (never shown).
    env: dict[StrictStr, SecretStr] | None = None
    cwd: StrictStr | None = None
    stderr: Literal["log", "unsafe-inherit", "discard"] = "log"
    log_dir: Path | None = None


# RFC 9110 field names, and values of visible ASCII, spaces and tabs (no line breaks or
# control characters; nothing the HTTP client would fail to encode, quoting it).
_HEADER_NAME_RE = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_HEADER_VALUE_RE = re.compile(r"[\t\x20-\x7e]*\Z")
# Set by the transport itself; a config file must not override them.
_TRANSPORT_HEADERS = frozenset(
    {"host", "content-length", "content-type", "transfer-encoding", "connection", "accept"}
)


class HttpTransport(_Spec):
    """Streamable HTTP at ``url``, sending ``headers`` (for example ``Authorization``)
    with every request. Header values are secrets: they are never shown.

    ``url`` is kept in canonical form (:mod:`skillward.core.urls`): what is connected to,
    the server's identity and what the policy compares are one string. A URL carrying a
    user name or password (``https://user@host/``) is refused: credentials go in headers.
    """

    kind: Literal["http"] = "http"
    url: StrictStr
    headers: dict[StrictStr, SecretStr] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _canonical_url(cls, url: str) -> str:
        return str(parse_http_url(url))  # its error never quotes the URL

    @field_validator("headers")
    @classmethod
    def _check_headers(cls, headers: dict[str, SecretStr]) -> dict[str, SecretStr]:
        seen: set[str] = set()
        for name, value in headers.items():
            folded = name.lower()
            if not _HEADER_NAME_RE.match(name):
                raise ValueError(f"{name[:64]!r} is not an HTTP header name")
            if folded in _TRANSPORT_HEADERS or folded.startswith("mcp-"):
                raise ValueError(f"header {name!r} is set by the transport")
            if folded in seen:
                raise ValueError(f"header {name!r} is given twice")
            seen.add(folded)
            if not _HEADER_VALUE_RE.match(value.get_secret_value()):
                # Never quote the value: it is a credential.
                raise ValueError(f"the value of header {name!r} is not printable ASCII")
        return headers


class InMemoryTransport(_Spec):
    """An mcp server object in this process (tests, embedded servers)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    kind: Literal["memory"] = "memory"
    server: Any


#: Shorter environment values (``1``, ``true``) are settings, not secrets, and too common
#: to cut out of error text.
_SECRET_WORD = 8


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` without ``secrets`` (a spec's :meth:`ServerSpec.secret_values`, longest
    first), each replaced by ``***``: a server may echo them in its errors or its stderr."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


#: Where a spec keeps its stdio identity: beside its fields, which pydantic alone compares,
#: hashes and serialises.
_KEPT_IDENTITY = "_stdio_identity"


class ServerSpec(_Spec):
    """A labelled server and how to reach it."""

    label: StrictStr
    transport: StdioTransport | HttpTransport | InMemoryTransport
    #: "auto" negotiates 2026-07-28 and falls back; "legacy" forces 2025-11-25.
    mode: Literal["auto", "legacy"] = "auto"

    def model_post_init(self, __context: Any) -> None:
        check_label(self.label)

    def describe(self) -> str:
        """How the server is reached, for people: never a header or environment value."""
        transport = self.transport
        if isinstance(transport, StdioTransport):
            return "stdio: " + shlex.join([transport.command, *transport.args])
        if isinstance(transport, HttpTransport):
            if transport.headers:
                return f"{transport.url} (headers: {', '.join(sorted(transport.headers))})"
            return transport.url
        return "in-memory server"

    def secret_values(self) -> tuple[str, ...]:
        """Header and environment values, and their words of 8 or more characters, longest
        first: what error text and the stderr log of the server are cleaned of
        (:func:`redact`) before anyone sees them."""
        transport = self.transport
        values: list[SecretStr] = []
        if isinstance(transport, HttpTransport):
            values = list(transport.headers.values())
        elif isinstance(transport, StdioTransport) and transport.env:
            values = list(transport.env.values())
        found: set[str] = set()
        for value in values:
            text = value.get_secret_value()
            if isinstance(transport, HttpTransport) or len(text) >= _SECRET_WORD:
                found.add(text)
            found.update(word for word in text.split() if len(word) >= _SECRET_WORD)
        found.discard("")
        return tuple(sorted(found, key=len, reverse=True))

    @property
    def identity(self) -> str:
        """How the server is reached, as one string: what approvals and the cache bind to.

        The URL for HTTP, the command line with its arguments for stdio. An in-memory
        server is identified by its object, so its identity never outlives the process.
        A label pointed at a different server has a different identity.

        Headers and environment values are not part of it: they are credentials, which
        must not be stored with approvals, and a rotated token reaches the same server.
        ``${VAR}`` in ``args`` is expanded before the identity is taken, so keep secrets
        in ``env`` (the command line is visible to every local user anyway).
        """
        transport = self.transport
        if isinstance(transport, StdioTransport):
            # Kept beside the fields with the transport it was taken from (a load asks
            # for it thrice): a copy given another transport takes its own.
            kept = self.__dict__.get(_KEPT_IDENTITY)
            if kept is None or kept[0] is not transport:
                kept = (transport, "stdio:" + shlex.join([transport.command, *transport.args]))
                self.__dict__[_KEPT_IDENTITY] = kept
            return kept[1]
        if isinstance(transport, HttpTransport):
            return "http:" + transport.url
        return f"memory:{type(transport.server).__qualname__}@{id(transport.server):x}"


@dataclass(frozen=True, slots=True)
class ServersConfig:
    """What an ``mcpServers`` file holds: the servers that loaded, keyed by label, and
    every entry that was skipped, with the reason (each names the file and the entry)."""

    servers: Mapping[str, ServerSpec]
    problems: tuple[ConfigError, ...] = ()
    source: str | None = None


_IGNORED_KEYS = frozenset({"disabled", "alwaysAllow", "autoApprove", "timeout", "description"})
_VARIABLE_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class _MissingVariable(Exception):
    def __init__(self, name: str, where: str) -> None:
        self.name = name
        self.where = where


def _expand(text: object, environ: Mapping[str, str], where: str) -> object:
    """``${VAR}`` and ``${VAR:-default}`` in ``text`` from ``environ``, in one pass."""
    if not isinstance(text, str):
        return text  # the model refuses it, without quoting it

    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = environ.get(name)
        if found is None or (not found and default is not None):
            if default is None:
                raise _MissingVariable(name, where)
            return default
        return found

    return _VARIABLE_RE.sub(value, text)


def _expanded(body: dict[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """``body`` with variables expanded where other hosts expand them: args, env, headers."""
    body = dict(body)
    args = body.get("args")
    if isinstance(args, list | tuple):
        body["args"] = [_expand(arg, environ, f"args[{i}]") for i, arg in enumerate(args)]
    for field in ("env", "headers"):
        values = body.get(field)
        if isinstance(values, Mapping):
            body[field] = {
                key: _expand(item, environ, f"{field}.{key}") for key, item in values.items()
            }
    return body


def _one_server(label: str, raw: object, environ: Mapping[str, str]) -> ServerSpec:
    if not isinstance(raw, Mapping):
        raise ConfigError("expected an object")
    kind = raw.get("type", raw.get("transport"))
    body = {k: v for k, v in raw.items() if k not in _IGNORED_KEYS | {"type", "transport"}}
    for key in ("stderr", "log_dir"):
        if key in body:
            # A shared config file never sends a server's raw stderr to the terminal.
            raise ConfigError(f"{key!r} cannot be set here; a server's stderr is always logged")
    try:
        body = _expanded(body, environ)
    except _MissingVariable as missing:
        raise ConfigError(
            f"environment variable {missing.name!r} is not set (used in {missing.where})",
            hint=f"Set {missing.name}, or give a default with ${{{missing.name}:-default}}.",
        ) from None
    try:
        if "url" in body:
            if kind not in (None, "http", "streamable-http", "streamableHttp"):
                raise ConfigError(f"transport {kind!r} is not supported")
            return ServerSpec(label=label, transport=HttpTransport(**body))
        if "command" in body:
            if kind not in (None, "stdio"):
                raise ConfigError(f"transport {kind!r} needs a url")
            return ServerSpec(label=label, transport=StdioTransport(**body))
    except ValidationError as exc:
        raise ConfigError(_first_error(exc)) from None
    raise ConfigError("needs either 'command' or 'url'")


def _first_error(error: ValidationError) -> str:
    """The first thing wrong, by its field, never quoting the input (it can be a secret)."""
    first = error.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where}: {first['msg'].removeprefix('Value error, ')}"


def _entry(
    name: str, raw: object, named: dict[str, str], environ: Mapping[str, str]
) -> tuple[str, ServerSpec | None]:
    if isinstance(raw, Mapping) and raw.get("disabled") is True:
        return "", None  # skipped before its name is checked or its label taken
    label = normalise_label(name)
    if label in named:
        raise ConfigError(
            f"its label {label!r} is already taken by {named[label]!r} "
            "(labels are unique without regard to case, '_' or spaces)"
        )
    named[label] = name
    return label, _one_server(label, raw, environ)


def parse_mcp_servers(
    data: object, *, source: str | None = None, environ: Mapping[str, str] | None = None
) -> ServersConfig:
    """Read ``{"mcpServers": {name: {...}}}`` (or the inner mapping).

    Each name becomes a label (:func:`normalise_label`). An entry that cannot be used (a
    bad name, a label another entry already has, a missing ``${VAR}``, an invalid field)
    is skipped and reported in ``problems``; the rest load. ``source`` names the file in
    those reports. ``environ`` defaults to ``os.environ``.
    """
    environ = os.environ if environ is None else environ
    where = f"{source}: " if source else ""
    if isinstance(data, Mapping) and "mcpServers" in data:
        data = data["mcpServers"]
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}expected an object mapping server names to server configs")
    servers: dict[str, ServerSpec] = {}
    named: dict[str, str] = {}
    problems: list[ConfigError] = []
    for name, raw in data.items():
        try:
            label, spec = _entry(str(name), raw, named, environ)
        except ConfigError as problem:
            problems.append(
                ConfigError(f"{where}server {str(name)!r}: {problem.message}", hint=problem.hint)
            )
            continue
        if spec is not None:
            servers[label] = spec
    return ServersConfig(servers, tuple(problems), source)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    for key, count in Counter(key for key, _ in pairs).items():
        if count > 1:
            raise ConfigError(f"the key {key!r} appears twice in one object")
    return dict(pairs)


def load_mcp_servers(path: Path, *, environ: Mapping[str, str] | None = None) -> ServersConfig:
    """Read an ``mcpServers`` JSON file (see :func:`parse_mcp_servers`).

    A file that cannot be read, is not JSON or repeats a key is a ConfigError naming it.
    """
    return parse_mcp_servers(_read_json(path), source=str(path), environ=environ)


def _read_json(path: Path) -> object:
    """The JSON value of the file at ``path``: a ConfigError naming it if it cannot be
    read, is not JSON or repeats a key in one object (what is read and what is written
    back by ``edge/_serversfile.py`` would differ)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
        raise ConfigError(f"cannot read server config {path}: {reason}") from None
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON (line {exc.lineno})") from None
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc.message}") from None


def parse_server_option(text: str) -> ServerSpec:
    """``NAME=URL`` or ``NAME=COMMAND ARGS...`` (shell-quoted), as on the command line.

    ``NAME`` becomes a label as in config files (:func:`normalise_label`).
    """
    name, sep, target = text.partition("=")
    if not sep or not target.strip():
        raise ConfigError(f"expected LABEL=URL_OR_COMMAND, not {text!r}")
    label = normalise_label(name)
    target = target.strip()
    if split_url(target) is not None:  # "HTTPS://..." or "ftp://..." is a URL, never a command
        try:
            return ServerSpec(label=label, transport=HttpTransport(url=target))
        except ValidationError as exc:
            raise ConfigError(_first_error(exc), server=label) from None
    try:
        argv = shlex.split(target)
    except ValueError as exc:
        raise ConfigError(f"server {label!r}: cannot split command: {exc}") from None
    return ServerSpec(label=label, transport=StdioTransport(command=argv[0], args=tuple(argv[1:])))
