"""Server patterns: what ``servers.allow``, ``servers.deny`` and a pin's ``server`` name,
parsed once, as the policy is read, into a pattern of one kind.

* A **URL pattern** starts with a scheme (``https://skills.example.com/mcp``) and matches
  HTTP servers only. It is compared with the server's URL part by part, both in the
  canonical form of :mod:`skillward.core.urls`: the scheme (``http`` or ``https``), the
  host, the port (left out: the scheme's default; ``:*``: any) and the path. ``*``
  matches any run of characters within the host, or within the path. A server's query is
  never compared, so ``?x=/mcp`` cannot pass for a path; a pattern with a query, a
  fragment or user-info could never match, and is refused.
* A **label pattern** is only letters, digits, ``-`` and wildcards (``acme``, ``*``) and
  matches the label the user gave a server, whatever the server is.
* A **command pattern** is anything else (``npx *``) and matches stdio servers only, by
  their command line (shell-quoted, as their transport identity holds it).

``stdio:`` in front makes the rest a command pattern whatever it looks like
(``stdio:acme-mcp``: that command, with no arguments); ``http:`` in front must be followed
by a URL pattern. They are the transport identities' own prefixes, so an identity
``skillward`` prints is a pattern naming exactly that server.

Outside URLs, ``*`` matches any characters and ``?`` one. Matching never backtracks: a
greedy wildcard match costs at most len(pattern) * len(name) steps, whatever the pattern.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from skillward.core.errors import ConfigError
from skillward.core.urls import (
    DEFAULT_PORTS,
    HttpUrl,
    canonical_host,
    canonical_path,
    canonical_port,
    parse_http_url,
    split_http_url,
    split_url,
)

__all__ = [
    "NamePattern",
    "ServerName",
    "ServerPattern",
    "UrlPattern",
    "glob",
    "parse_server_pattern",
    "server_name",
    "wild",
]

_LABEL_SHAPED = re.compile(r"[A-Za-z0-9*?-]+\Z")
_PORT_GLOB = re.compile(r"[0-9*]+\Z")


def wild(
    pattern: Sequence[str], name: Sequence[str], star: str, unit: Callable[[str, str], bool]
) -> bool:
    """Whether ``name`` matches ``pattern``, where ``star`` matches any run of units."""
    p = n = 0
    star_at, resume = -1, 0
    while n < len(name):
        if p < len(pattern) and pattern[p] == star:
            star_at, resume = p, n
            p += 1
        elif p < len(pattern) and unit(pattern[p], name[n]):
            p += 1
            n += 1
        elif star_at >= 0:
            p, resume = star_at + 1, resume + 1
            n = resume
        else:
            return False
    return all(rest == star for rest in pattern[p:])


def _char(pattern: str, char: str) -> bool:
    return pattern in ("?", char)


def glob(pattern: str, name: str, *, fold: bool = False) -> bool:
    """``*`` any characters, ``?`` one; ``fold``: without regard to case."""
    if fold:
        pattern, name = pattern.casefold(), name.casefold()
    return wild(pattern, name, "*", _char)


@dataclass(frozen=True, slots=True)
class ServerName:
    """What server patterns match: a server's label, and its command line (stdio) or its
    canonical URL (HTTP); an in-memory server has only its label."""

    label: str
    command: str | None = None
    url: HttpUrl | None = None


def server_name(label: str, identity: str | None) -> ServerName:
    """The name of the server with this label and transport identity
    (:attr:`~skillward.edge.servers.ServerSpec.identity`)."""
    kind, _, rest = (identity or "").partition(":")
    if kind == "stdio":
        return ServerName(label, command=rest)
    if kind == "http":
        return ServerName(label, url=parse_http_url(rest))
    return ServerName(label)


@dataclass(frozen=True, slots=True)
class NamePattern:
    """A label pattern, or a command pattern (see the module docstring)."""

    text: str
    kind: Literal["label", "command"]
    glob: str

    def matches(self, server: ServerName, *, fold: bool = False) -> bool:
        if self.kind == "label":
            return glob(self.glob, server.label, fold=fold)
        return server.command is not None and glob(self.glob, server.command, fold=fold)

    def covers(self, other: ServerPattern) -> bool:
        """Whether every server ``other`` matches, this matches too."""
        if self.kind == "label" and set(self.glob) == {"*"}:
            return True  # every server has a label
        return (
            isinstance(other, NamePattern)
            and other.kind == self.kind
            and glob(self.glob, other.glob)
        )


@dataclass(frozen=True, slots=True)
class UrlPattern:
    """A URL pattern: each part canonical, with ``*`` where it was written."""

    text: str
    scheme: str
    host: str
    #: None: the scheme's default port.
    port: str | None
    path: str
    kind: Literal["url"] = "url"

    def matches(self, server: ServerName, *, fold: bool = False) -> bool:
        url = server.url
        if url is None or url.scheme != self.scheme or not glob(self.host, url.host):
            return False
        if self.port is None and url.port is not None:
            return False
        if self.port is not None and not glob(self.port, str(url.effective_port)):
            return False
        return glob(self.path, url.path, fold=fold)

    def covers(self, other: ServerPattern) -> bool:
        """Whether every server ``other`` matches, this matches too."""
        if not isinstance(other, UrlPattern) or other.scheme != self.scheme:
            return False
        port = other.port or str(DEFAULT_PORTS[other.scheme])
        return (
            glob(self.host, other.host)
            and (other.port is None if self.port is None else glob(self.port, port))
            and glob(self.path, other.path)
        )


ServerPattern = NamePattern | UrlPattern


def parse_server_pattern(text: str, *, exact: bool = False) -> ServerPattern:
    """The pattern ``text`` is (see the module docstring), or ValueError saying why it
    could never match. ``exact``: a pin's, which names one server, with no wildcard."""
    prefix = text[:6].lower()
    if prefix.startswith("stdio:"):
        pattern: ServerPattern = NamePattern(text, "command", _named(text[6:]))
    elif prefix.startswith("http:") and text[5:7] != "//":
        pattern = _url_pattern(text, text[5:])
    elif split_url(text) is not None:
        pattern = _url_pattern(text, text)
    elif _LABEL_SHAPED.match(text):
        pattern = NamePattern(text, "label", text)
    else:
        pattern = NamePattern(text, "command", text)
    if exact and set(_wildcards(pattern)) & {"*", "?"}:
        raise ValueError(
            "a pin names one server exactly, with no wildcard: its label or transport identity"
        )
    return pattern


def _named(rest: str) -> str:
    if not rest:
        raise ValueError("names nothing after its prefix")
    return rest


def _wildcards(pattern: ServerPattern) -> str:
    if isinstance(pattern, NamePattern):
        return pattern.glob
    return pattern.host + (pattern.port or "") + pattern.path


def _url_pattern(text: str, url: str) -> UrlPattern:
    try:
        return _parsed_url_pattern(text, url)
    except ConfigError as error:
        raise ValueError(f"the URL pattern {error.message}") from None


def _parsed_url_pattern(text: str, url: str) -> UrlPattern:
    parts = split_http_url(url)
    if parts.query is not None or parts.fragment is not None:
        raise ConfigError(
            "names a query or fragment, which is never compared: a URL pattern names a "
            "scheme, host, port and path"
        )
    if parts.port is not None and "*" in parts.port and _PORT_GLOB.match(parts.port):
        port: str | None = parts.port
    else:
        number = canonical_port(parts.port, parts.scheme)
        port = None if number is None else str(number)
    host = canonical_host(parts.host, wildcard="*")
    return UrlPattern(text, parts.scheme, host, port, canonical_path(parts.path))
