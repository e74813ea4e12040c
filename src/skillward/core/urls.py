"""HTTP server URLs in one canonical form: the URL a server spec connects to, and the
form the policy compares its URL patterns against.

Two spellings that reach the same server canonicalise to one string: the scheme and
host lower-cased, the default port (80 for ``http``, 443 for ``https``) and a trailing
dot on the host removed, an internationalised host in its IDNA (2008) ASCII form, IPv4
addresses in any spelling a resolver accepts (``2130706433``, ``0x7f.1``) as four
decimals, IPv6 addresses compressed, percent-encodings of unreserved characters decoded
and the others in upper case, ``.`` and ``..`` segments removed, an empty path ``/``.
The query is kept apart from the path (a ``?`` never makes text after it part of the
path), and the fragment, which never reaches a server, is dropped.

A URL carrying user-info (``https://user@host/``) is refused: it could hold a password,
and it lets a URL read as one host to a person and as another to a parser.

Pure: text in, an :class:`HttpUrl` or :class:`~skillward.core.errors.ConfigError` out. The
error never quotes the URL (its user-info may be a secret).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
import string
from dataclasses import dataclass

import idna

from skillward.core.errors import ConfigError, printable

__all__ = [
    "DEFAULT_PORTS",
    "HttpUrl",
    "UrlParts",
    "canonical_host",
    "canonical_path",
    "canonical_port",
    "canonical_query",
    "parse_http_url",
    "split_http_url",
    "split_url",
]

#: The schemes a server is reached over, and each one's default port.
DEFAULT_PORTS = {"http": 80, "https": 443}

# Anything before "://" that holds no whitespace or delimiter is read as a scheme, so that
# "HTTPS://" or "ftp://" is a URL to refuse, never a command or a label.
_SCHEME_RE = re.compile(r"([^\s/?#:]+)://")
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
_PATH_SAFE = _UNRESERVED | frozenset("!$&'()*+,;=:@/")
_QUERY_SAFE = _PATH_SAFE | frozenset("?")
_HEX = frozenset(string.hexdigits)
_HOST_LABEL_RE = re.compile(r"[a-z0-9_-]+\Z")
_MAX_HOST = 253
# The last label of a host that a resolver reads as a number (WHATWG's "ends in a number").
_NUMBER_RE = re.compile(r"(?:[0-9]+|0x[0-9a-f]*)\Z")
_IPV4_PART_RE = re.compile(r"(?:0x[0-9a-f]*|0[0-7]*|[1-9][0-9]*)\Z")


@dataclass(frozen=True, slots=True)
class UrlParts:
    """A URL split into its parts as written; nothing checked or changed."""

    scheme: str
    userinfo: str | None
    host: str
    port: str | None
    path: str
    query: str | None
    fragment: str | None


@dataclass(frozen=True, slots=True)
class HttpUrl:
    """A server URL in canonical form; ``str()`` of it is the canonical text."""

    scheme: str
    host: str
    #: None for the scheme's default port.
    port: int | None
    path: str
    query: str | None = None

    @property
    def effective_port(self) -> int:
        return self.port if self.port is not None else DEFAULT_PORTS[self.scheme]

    def __str__(self) -> str:
        port = "" if self.port is None else f":{self.port}"
        query = "" if self.query is None else f"?{self.query}"
        return f"{self.scheme}://{self.host}{port}{self.path}{query}"


def split_url(text: str) -> UrlParts | None:
    """``text`` split as ``scheme://user-info@host:port/path?query#fragment``, or None if
    it does not start with a scheme and ``://``."""
    match = _SCHEME_RE.match(text)
    if match is None:
        return None
    rest = text[match.end() :]
    rest, hashed, fragment = rest.partition("#")
    rest, asked, query = rest.partition("?")
    authority, slash, path = rest.partition("/")
    userinfo, at, host_port = authority.rpartition("@")
    host, port = host_port, None
    if host_port.startswith("["):
        close = host_port.find("]")
        if close >= 0 and host_port[close + 1 : close + 2] == ":":
            host, port = host_port[: close + 1], host_port[close + 2 :]
    elif ":" in host_port:
        host, _, port = host_port.partition(":")
    return UrlParts(
        scheme=match.group(1),
        userinfo=userinfo if at else None,
        host=host,
        port=port,
        path=slash + path,
        query=query if asked else None,
        fragment=fragment if hashed else None,
    )


def canonical_host(host: str, *, wildcard: str | None = None) -> str:
    """``host`` in canonical form, or ConfigError.

    ``wildcard`` (the policy's ``*``): a label holding it is a pattern's, kept lower-cased
    as it is written; the others are canonicalised, and no address is read from them.
    """
    globbed = wildcard is not None and wildcard in host
    if host.startswith("[") and host.endswith("]") and not globbed:
        try:
            address = ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            address = None
        if address is None or address.scope_id is not None:
            raise _bad("has a host that is not an IPv6 address (without a zone)")
        return f"[{address.compressed}]"
    if not host.isascii():
        host = _idna(host, wildcard)
    host = host.lower()
    if host.endswith("."):
        host = host[:-1]
    labels = host.split(".")
    if len(host) > _MAX_HOST or not all(_HOST_LABEL_RE.match(_plain(x, wildcard)) for x in labels):
        raise _bad(
            f"has a host, {printable(host, limit=80)!r}, that is not a domain name or address"
        )
    if globbed:
        return host
    if _NUMBER_RE.match(labels[-1]):
        return _ipv4(labels)
    return host


def canonical_port(port: str | None, scheme: str) -> int | None:
    """``port`` as a number, or None where it is the scheme's default (or not given)."""
    if not port:
        return None
    if not (port.isascii() and port.isdigit() and len(port) <= 5 and 0 < int(port) < 65536):
        raise _bad("has a port that is not a number from 1 to 65535")
    number = int(port)
    return None if number == DEFAULT_PORTS.get(scheme) else number


def canonical_path(path: str) -> str:
    """``path`` with its percent-encodings normalised and ``.`` and ``..`` segments
    removed (RFC 3986, sections 6.2.2 and 5.2.4); ``/`` for an empty path."""
    path = _percent_normalised(path, _PATH_SAFE)
    segments = path.split("/")[1:]
    kept: list[str] = []
    for index, segment in enumerate(segments):
        if segment in (".", ".."):
            if segment == ".." and kept:
                kept.pop()
            if index == len(segments) - 1:
                kept.append("")  # "/a/b/.." is "/a/": it still names a directory
        else:
            kept.append(segment)
    return "/" + "/".join(kept)


def parse_http_url(text: str) -> HttpUrl:
    """A server's ``http`` or ``https`` URL in canonical form (see the module docstring),
    or ConfigError for one that is not, or that carries user-info."""
    try:
        if not text.isprintable() or any(char.isspace() for char in text):
            raise _bad("holds whitespace or control characters")
        parts = split_http_url(text)
        return HttpUrl(
            scheme=parts.scheme,
            host=canonical_host(parts.host),
            port=canonical_port(parts.port, parts.scheme),
            path=canonical_path(parts.path),
            query=canonical_query(parts.query),
        )
    except ConfigError as error:
        raise ConfigError(f"the server URL {error.message}") from None


def split_http_url(text: str) -> UrlParts:
    """``text`` split (:func:`split_url`) as an ``http`` or ``https`` URL, its scheme in
    lower case; ConfigError, saying what it "does" or "has", for another scheme or none,
    for user-info, and for no host."""
    parts = split_url(text)
    if parts is None or parts.scheme.lower() not in DEFAULT_PORTS:
        raise _bad("does not start with http:// or https://")
    if parts.userinfo is not None:
        raise _bad(
            "carries a user name or password before its host, which is refused "
            "(credentials go in headers)"
        )
    if not parts.host:
        raise _bad("names no host")
    return dataclasses.replace(parts, scheme=parts.scheme.lower())


def canonical_query(query: str | None) -> str | None:
    """``query`` with its percent-encodings normalised; None for none or an empty one."""
    return _percent_normalised(query, _QUERY_SAFE) if query else None


def _bad(why: str) -> ConfigError:
    """What is wrong, said of "the server URL" or "the URL pattern" by the caller."""
    return ConfigError(why)


def _plain(label: str, wildcard: str | None) -> str:
    return label.replace(wildcard, "a") if wildcard else label


def _idna(host: str, wildcard: str | None) -> str:
    """An internationalised host in ASCII, label by label, as the HTTP client encodes one
    (``idna``, IDNA 2008); a label holding the wildcard is kept as written."""
    labels = re.split("[.\u3002\uff0e\uff61]", host)
    try:
        return ".".join(
            x if (wildcard and wildcard in x) or x.isascii() else idna.encode(x.lower()).decode()
            for x in labels
        )
    except (idna.IDNAError, UnicodeError):
        raise _bad("has a host that is not a valid internationalised domain name") from None


def _ipv4(labels: list[str]) -> str:
    """A host ending in a number, as the IPv4 address a resolver reads it as (WHATWG's
    IPv4 parser: one to four parts, each decimal, octal or hex, the last filling the
    bytes left)."""
    if len(labels) > 4 or not all(_IPV4_PART_RE.match(x) for x in labels):
        raise _bad("has a host that ends in a number but is not an IPv4 address")
    numbers = [_ipv4_part(x) for x in labels]
    *leading, last = numbers
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(numbers)):
        raise _bad("has a host that ends in a number but is not an IPv4 address")
    value = last + sum(n << (8 * (3 - i)) for i, n in enumerate(leading))
    return ".".join(str(value >> shift & 255) for shift in (24, 16, 8, 0))


def _ipv4_part(text: str) -> int:
    if text[:2] == "0x":
        return int(text[2:] or "0", 16)
    return int(text, 8 if text[:1] == "0" else 10)


def _percent_normalised(text: str, safe: frozenset[str]) -> str:
    """Unreserved characters decoded, other encodings in upper case, and anything outside
    ``safe`` encoded as UTF-8 (a ``%`` starting no encoding too)."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        pair = text[index + 1 : index + 3]
        if char == "%" and len(pair) == 2 and set(pair) <= _HEX:
            decoded = chr(int(pair, 16))
            out.append(decoded if decoded in _UNRESERVED else "%" + pair.upper())
            index += 3
            continue
        if char in safe:
            out.append(char)
        else:
            try:
                out.extend(f"%{byte:02X}" for byte in char.encode("utf-8"))
            except UnicodeEncodeError:
                raise _bad("is not valid text") from None
        index += 1
    return "".join(out)
