"""Server labels and the mcpServers configuration format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillward.errors import ConfigError
from skillward.servers import (
    HttpTransport,
    InMemoryTransport,
    ServerSpec,
    StdioTransport,
    check_label,
    load_mcp_servers,
    parse_mcp_servers,
    parse_server_option,
)


def test_mcp_servers_format_reads_stdio_and_http_servers() -> None:
    specs = parse_mcp_servers(
        {
            "mcpServers": {
                "acme": {"command": "acme-mcp", "args": ["--stdio"], "env": {"TOKEN": "t"}},
                "docs": {"url": "https://docs.example.com/mcp", "type": "http"},
                "off": {"command": "x", "disabled": True},
            }
        }
    )
    assert set(specs) == {"acme", "docs"}
    acme = specs["acme"].transport
    assert isinstance(acme, StdioTransport)
    assert (acme.command, acme.args, acme.env) == ("acme-mcp", ("--stdio",), {"TOKEN": "t"})
    assert isinstance(specs["docs"].transport, HttpTransport)


@pytest.mark.threat("T4")
@pytest.mark.parametrize(
    "label", ["Acme", "acme_docs", "-acme", "acme-", "a--b", "", "a" * 65, "é"]
)
def test_labels_must_be_lowercase_words_and_hyphens(label: str) -> None:
    with pytest.raises(ConfigError, match="server label"):
        check_label(label)
    with pytest.raises(ConfigError):
        parse_mcp_servers({label: {"command": "x"}})


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        ({"a": "nope"}, "expected an object"),
        ({"a": {}}, "needs either"),
        ({"a": {"url": "ftp://x"}}, "url"),
        ({"a": {"url": "https://x", "type": "sse"}}, "not supported"),
        ({"a": {"command": "x", "type": "http"}}, "needs a url"),
        ({"a": {"command": ""}}, "command"),
        ({"a": {"command": "x", "args": "not-a-list"}}, "args"),
        ({"a": {"url": "https://x", "headers": {"A": "b"}}}, "headers"),
        ({"a": {"command": "x", "surprise": 1}}, "surprise"),
        ([], "expected an object"),
    ],
)
def test_bad_server_configs_are_config_errors(config: object, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        parse_mcp_servers(config)


def test_config_file_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match=r"servers\.json"):
        load_mcp_servers(path)
    with pytest.raises(ConfigError, match="cannot read"):
        load_mcp_servers(tmp_path / "missing.json")
    path.write_text(json.dumps({"mcpServers": {"a": {"url": "http://127.0.0.1:1/mcp"}}}))
    assert set(load_mcp_servers(path)) == {"a"}


def test_server_option_takes_a_url_or_a_shell_quoted_command() -> None:
    http = parse_server_option("docs=http://127.0.0.1:8765/mcp")
    assert isinstance(http.transport, HttpTransport)
    stdio = parse_server_option("acme=python -m skillward serve 'my skills'")
    assert isinstance(stdio.transport, StdioTransport)
    assert stdio.transport.args == ("-m", "skillward", "serve", "my skills")


@pytest.mark.parametrize("option", ["acme", "=x", "acme=", "Bad=x", "a=python 'unclosed"])
def test_bad_server_options_are_config_errors(option: str) -> None:
    with pytest.raises(ConfigError):
        parse_server_option(option)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(st.dictionaries(st.sampled_from(["acme", "Bad", "x-y"]), _json, max_size=3))
def test_any_server_config_parses_or_is_a_config_error(config: dict[str, object]) -> None:
    try:
        specs = parse_mcp_servers({"mcpServers": config})
    except ConfigError:
        return
    assert set(specs) <= set(config)


def test_identity_tells_apart_servers_behind_one_label() -> None:
    stdio = ServerSpec(label="acme", transport=StdioTransport(command="acme", args=("--a",)))
    other = ServerSpec(label="acme", transport=StdioTransport(command="acme", args=("--b",)))
    http = ServerSpec(label="acme", transport=HttpTransport(url="https://a.example/mcp"))
    assert stdio.identity == "stdio:acme --a"
    assert http.identity == "http:https://a.example/mcp"
    assert len({stdio.identity, other.identity, http.identity}) == 3


def test_identity_of_in_memory_servers_is_per_object() -> None:
    first = ServerSpec(label="a", transport=InMemoryTransport(server=object()))
    second = ServerSpec(label="a", transport=InMemoryTransport(server=object()))
    assert first.identity != second.identity
    assert first.identity.startswith("memory:")
