"""Server URLs in one canonical form, and the server patterns compared with them."""

from __future__ import annotations

import re
import shlex

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from skillward.core.errors import ConfigError
from skillward.core.urls import DEFAULT_PORTS, HttpUrl, parse_http_url
from skillward.trust._patterns import (
    NamePattern,
    ServerName,
    UrlPattern,
    parse_server_pattern,
    server_name,
)

_LABEL = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=8).filter(
    lambda x: x[0] != "-" and x[-1] != "-" and "--" not in x
)
_HOSTS = st.one_of(
    st.lists(_LABEL, min_size=1, max_size=3).map(".".join).filter(lambda h: not h[-1].isdigit()),
    st.sampled_from(
        ["127.0.0.1", "10.1.2.3", "[::1]", "[2001:db8::2]", "xn--bcher-kva.example", "x_y.test"]
    ),
)
_PATH_CHARS = "abcXYZ019-._~!$&'()*+,;=:@%/é "
_PATHS = st.text(alphabet=_PATH_CHARS, max_size=20).map(lambda p: "/" + p if p else p)
_QUERIES = st.none() | st.text(alphabet=_PATH_CHARS + "?/", max_size=12)


@st.composite
def urls(draw: st.DrawFn) -> str:
    """Server URLs, canonical or not."""
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "Https"]))
    host = draw(_HOSTS)
    port = draw(st.none() | st.sampled_from(["80", "443", "8443", "0080", ""]))
    path = draw(_PATHS).replace(" ", "%20")
    query = draw(_QUERIES)
    fragment = draw(st.none() | st.text(alphabet="ab#?/", max_size=4))
    text = f"{scheme}://{host}" + ("" if port is None else f":{port}") + path
    text += "" if query is None else "?" + query.replace(" ", "%20")
    return text + ("" if fragment is None else "#" + fragment)


@st.composite
def respelled(draw: st.DrawFn, url: HttpUrl) -> str:
    """Another spelling of ``url``: the same server, written differently."""
    scheme = "".join(c.upper() if draw(st.booleans()) else c for c in url.scheme)
    host = url.host
    if not host.startswith("["):
        host = "".join(c.upper() if draw(st.booleans()) else c for c in host)
        host += draw(st.sampled_from(["", "."]))
    port = url.port if url.port is not None else draw(st.sampled_from([None, url.effective_port]))
    # Unreserved characters percent-encoded (outside the encodings already there).
    path = "".join(
        part
        if part.startswith("%")
        else "".join(
            "%" + format(ord(c), "02x") if c in "abcXYZ019-._~" and draw(st.booleans()) else c
            for c in part
        )
        for part in re.split("(%[0-9A-F]{2})", url.path)
    )
    if draw(st.booleans()):
        path = "/x/.." + path
    if path == "/" and draw(st.booleans()):
        path = ""
    text = f"{scheme}://{host}" + ("" if port is None else f":{port}") + path
    text += "" if url.query is None else "?" + url.query
    return text + draw(st.sampled_from(["", "#", "#frag"]))


def canonical_or_none(text: str) -> HttpUrl | None:
    try:
        return parse_http_url(text)
    except ConfigError:
        return None


@pytest.mark.threat("T40")
@settings(max_examples=400)
@given(urls())
def test_canonicalising_a_url_is_idempotent_and_its_text_is_ascii(text: str) -> None:
    url = canonical_or_none(text)
    assume(url is not None)
    assert url is not None
    assert parse_http_url(str(url)) == url
    assert str(url).isascii()
    assert "#" not in str(url)
    assert url.port != DEFAULT_PORTS[url.scheme]


@pytest.mark.threat("T40")
@settings(max_examples=400)
@given(st.data(), urls())
def test_every_spelling_of_a_url_canonicalises_to_the_same_url(
    data: st.DataObject, text: str
) -> None:
    url = canonical_or_none(text)
    assume(url is not None)
    assert url is not None
    other = data.draw(respelled(url))
    assert parse_http_url(other) == url
    # ...and a URL pattern written either way matches the server written the other way.
    assert parse_server_pattern(other.split("?")[0].split("#")[0]).matches(ServerName("x", url=url))


@settings(max_examples=400)
@given(st.text(max_size=60))
def test_any_text_is_a_canonical_url_or_a_config_error(text: str) -> None:
    url = canonical_or_none(text)
    if url is not None:
        assert parse_http_url(str(url)) == url


def test_user_info_is_refused_however_it_is_hidden() -> None:
    for text in (
        "https://u@evil.example/",
        "https://evil.example\\@good.example/",
        "https://a@b@evil.example/",
        "https://:@evil.example/",
    ):
        with pytest.raises(ConfigError):
            parse_http_url(text)


# --- patterns -------------------------------------------------------------------------------

_SERVERS = [
    ServerName("acme", command="https://skills.example.com/mcp"),
    ServerName("acme", command="npx -y evil"),
    ServerName("acme", url=parse_http_url("https://skills.example.com/mcp")),
    ServerName("acme"),
]


@pytest.mark.threat("T40")
@settings(max_examples=500)
@given(st.text(alphabet="abc-*?:/.@ sx", max_size=24) | st.sampled_from(["https://", "http:"]))
def test_a_pattern_is_of_one_kind_and_matches_only_servers_of_that_transport(text: str) -> None:
    try:
        pattern = parse_server_pattern(text)
    except ValueError:
        return
    for server in _SERVERS:
        for deny in (False, True):
            if not pattern.matches(server, deny=deny):
                continue
            if isinstance(pattern, UrlPattern):
                assert server.url is not None
            elif pattern.kind == "command":
                assert server.command is not None


@st.composite
def pattern_texts(draw: st.DrawFn) -> str:
    """Server patterns as an administrator might write them, parts left out or not."""
    scheme = draw(st.sampled_from(["http", "https", "HTTP"]))
    host = draw(st.sampled_from(["*", "evil.example", "*.example", "127.0.0.1", "[::1]"]))
    port = draw(st.sampled_from(["", ":", ":80", ":443", ":8080", ":*", ":80*"]))
    path = draw(st.sampled_from(["", "/", "/mcp", "/*", "/M*"]))
    url = f"{scheme}://{host}{port}{path}"
    words = st.text(alphabet="evilENP?*-/ .ßx", min_size=1, max_size=12)
    return draw(
        st.sampled_from([url, "http:" + url, "evil", "EV?L", "*", "e*", "npx *"])
        | words
        | words.map(lambda w: "stdio:" + w)
        | st.text(max_size=24)
    )


@st.composite
def server_names(draw: st.DrawFn) -> ServerName:
    """Servers of every transport, named as hostile authors might name them."""
    label = draw(st.sampled_from(["evil", "acme", "npx", "ss"]) | st.text(max_size=6))
    words = st.lists(st.text(alphabet="evilENPß/x -'\"", max_size=10), min_size=1, max_size=3)
    command = draw(words.map(shlex.join) | st.text(alphabet="evil/ 'ß", max_size=10))
    url = canonical_or_none(draw(urls()))
    return draw(
        st.sampled_from([ServerName(label), ServerName(label, command=command)])
        | st.just(ServerName(label, url=url) if url is not None else ServerName(label))
    )


@pytest.mark.threat("T40", "T41")
@settings(max_examples=500)
@given(pattern_texts(), server_names())
def test_a_pattern_denies_every_server_it_would_allow(text: str, server: ServerName) -> None:
    try:
        pattern = parse_server_pattern(text)
    except ValueError:
        return
    if pattern.matches(server):
        assert pattern.matches(server, deny=True)


@pytest.mark.threat("T40")
@settings(max_examples=300)
@given(st.text(max_size=40))
def test_parsing_any_text_as_a_pattern_gives_a_pattern_or_a_value_error(text: str) -> None:
    try:
        pattern = parse_server_pattern(text)
    except ValueError:
        return
    assert pattern.text == text
    assert isinstance(pattern, NamePattern | UrlPattern)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("acme", "label"),
        ("*", "label"),
        ("a?c-*", "label"),
        ("npx *", "command"),
        ("server.py", "command"),
        ("stdio:acme", "command"),
        ("STDIO:https://x/", "command"),
        ("https://x/", "url"),
        ("HTTP:https://x/", "url"),
        ("http://x", "url"),
    ],
)
def test_how_a_pattern_is_written_says_its_kind(text: str, kind: str) -> None:
    assert parse_server_pattern(text).kind == kind


def test_an_identity_names_the_server_it_came_from() -> None:
    assert server_name("a", "stdio:npx -y x") == ServerName("a", command="npx -y x")
    url = parse_http_url("https://x.example/mcp")
    assert server_name("a", "http:https://x.example/mcp") == ServerName("a", url=url)
    assert server_name("a", "memory:Server@1") == ServerName("a")
    assert server_name("a", None) == ServerName("a")
