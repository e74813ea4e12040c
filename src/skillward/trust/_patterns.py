"""Server patterns: what ``servers.allow``, ``servers.deny`` and a pin's ``server`` name,
parsed once, as the policy is read, into a pattern of one kind.

* A **URL pattern** starts with a scheme (``https://skills.example.com/mcp``) and matches
  HTTP servers only. It is compared with the server's URL part by part, both in the
  canonical form of :mod:`skillward.core.urls`: the scheme (``http`` or ``https``), the
  host, the port (``:*``: any) and the path. ``*`` matches any run of characters within
  the host, or within the path. A server's query is never compared, so ``?x=/mcp``
  cannot pass for a path; a pattern with a query, a fragment or user-info could never
  match, and is refused.
* A **label pattern** is only letters, digits, ``-`` and wildcards (``acme``, ``*``) and
  matches the label the user gave a server, whatever the server is.
* A **command pattern** is anything else (``npx *``) and matches stdio servers only, by
  their command line (shell-quoted, as their transport identity holds it).

``stdio:`` in front makes the rest a command pattern whatever it looks like
(``stdio:acme-mcp``: that command, with no arguments); ``http:`` in front must be followed
by a URL pattern. They are the transport identities' own prefixes, so an identity
``skillward`` prints is a pattern naming exactly that server.

What a pattern leaves out, a deny rule reads widely and an allow rule narrowly, so that
neither reading lets through more than was written (:meth:`NamePattern.matches`,
:meth:`UrlPattern.matches` with ``deny``):

* a URL pattern with no path matches every path (both readings: it names a host), and
  so does one whose path is ``/`` alone when it denies;
* a URL pattern with no port matches the scheme's default port when it allows, and every
  port when it denies (``http://*`` denies plain HTTP on any port);
* a label pattern that denies also matches a stdio server whose program (the first word
  of its command line, or that word's last path component) it matches: ``evil`` denies
  ``evil --stdio`` and ``/opt/bin/evil``; one that allows matches labels only;
* deny rules match without regard to case, allow rules exactly.

What a pattern says outright (``stdio:``, a port, a path) means exactly that in both. A
pin (``exact``) names one server: its URL with no path is the path ``/``.

Outside URLs, ``*`` matches any characters and ``?`` one. Matching never backtracks: a
greedy wildcard match costs at most len(pattern) * len(name) steps, whatever the pattern.

Pure: no I/O.
"""

from __future__ import annotations

import re
import shlex
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
    """``*`` any characters, ``?`` one; ``fold``: without regard to case, as well as with
    it (folding can change a length: ``?`` matches ``ß``, never its folded ``ss``)."""
    if wild(pattern, name, "*", _char):
        return True
    return fold and wild(pattern.casefold(), name.casefold(), "*", _char)


@dataclass(frozen=True, slots=True)
class ServerName:
    """What server patterns match: a server's label, and its command line (stdio) or its
    canonical URL (HTTP); an in-memory server has only its label."""

    label: str
    command: str | None = None
    url: HttpUrl | None = None

    def programs(self) -> tuple[str, ...]:
        """A stdio server's program as its command line names it, and that name's last
        path component (``/`` or ``\\``); none for another server."""
        if not self.command:
            return ()
        try:
            words = shlex.split(self.command)
        except ValueError:  # not as an identity quotes it: its first run of non-blanks
            words = self.command.split()
        if not words:
            return ()
        return words[0], re.split(r"[/\\]", words[0])[-1]


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

    def matches(self, server: ServerName, *, deny: bool = False) -> bool:
        """Whether this names ``server``; ``deny``: read as a deny rule (module docstring)."""
        if self.kind == "command":
            return server.command is not None and glob(self.glob, server.command, fold=deny)
        if glob(self.glob, server.label, fold=deny):
            return True
        # A bare word denying "evil" denies the program evil too, as it did before patterns
        # were typed: a label is the user's choice, the program is what runs.
        return deny and any(glob(self.glob, name, fold=True) for name in server.programs())

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
    #: The port as written (a number, or a glob); None: left out.
    port: str | None
    #: ``/*`` where the path was left out (a pin's: ``/``).
    path: str
    kind: Literal["url"] = "url"

    def matches(self, server: ServerName, *, deny: bool = False) -> bool:
        """Whether this names ``server``; ``deny``: read as a deny rule (module docstring)."""
        url = server.url
        if url is None or url.scheme != self.scheme or not glob(self.host, url.host):
            return False
        return glob(self._port(deny), str(url.effective_port)) and glob(
            self._path(deny), url.path, fold=deny
        )

    def covers(self, other: ServerPattern) -> bool:
        """Whether every server ``other`` matches, this matches too (both allowing)."""
        if not isinstance(other, UrlPattern) or other.scheme != self.scheme:
            return False
        return (
            glob(self.host, other.host)
            and glob(self._port(False), other._port(False))
            and glob(self.path, other.path)
        )

    def _port(self, deny: bool) -> str:
        """The ports this names: a port left out is every port to a deny rule, and the
        scheme's default to an allow rule."""
        if self.port is not None:
            return self.port
        return "*" if deny else str(DEFAULT_PORTS[self.scheme])

    def _path(self, deny: bool) -> str:
        """The paths this names: ``/`` alone is the URL with no path, every path to a deny
        rule (``https://evil.example/``), and the root to an allow rule."""
        return "/*" if deny and self.path == "/" else self.path


ServerPattern = NamePattern | UrlPattern


def parse_server_pattern(text: str, *, exact: bool = False) -> ServerPattern:
    """The pattern ``text`` is (see the module docstring), or ValueError saying why it
    could never match. ``exact``: a pin's, which names one server, with no wildcard."""
    prefix = text[:6].lower()
    if prefix.startswith("stdio:"):
        pattern: ServerPattern = NamePattern(text, "command", _named(text[6:]))
    elif prefix.startswith("http:") and text[5:7] != "//":
        pattern = _url_pattern(text, text[5:], exact=exact)
    elif split_url(text) is not None:
        pattern = _url_pattern(text, text, exact=exact)
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


def _url_pattern(text: str, url: str, *, exact: bool) -> UrlPattern:
    try:
        return _parsed_url_pattern(text, url, exact=exact)
    except ConfigError as error:
        raise ValueError(f"the URL pattern {error.message}") from None


def _parsed_url_pattern(text: str, url: str, *, exact: bool) -> UrlPattern:
    parts = split_http_url(url)
    if parts.query is not None or parts.fragment is not None:
        raise ConfigError(
            "names a query or fragment, which is never compared: a URL pattern names a "
            "scheme, host, port and path"
        )
    port: str | None = None
    if parts.port and "*" in parts.port and _PORT_GLOB.match(parts.port):
        port = parts.port
    elif parts.port:  # written, so meant, even where it is the scheme's default
        number = canonical_port(parts.port, parts.scheme)
        port = str(DEFAULT_PORTS[parts.scheme] if number is None else number)
    host = canonical_host(parts.host, wildcard="*")
    path = "/*" if not parts.path and not exact else canonical_path(parts.path)
    return UrlPattern(text, parts.scheme, host, port, path)
