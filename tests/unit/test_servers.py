"""Server labels and the mcpServers configuration format."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from skillward.core.errors import ConfigError
from skillward.core.labels import check_label, normalise_label
from skillward.edge.servers import (
    HttpTransport,
    InMemoryTransport,
    ServerSpec,
    StdioTransport,
    load_mcp_servers,
    parse_mcp_servers,
    parse_server_option,
)

NO_ENV: dict[str, str] = {}


def test_mcp_servers_format_reads_stdio_and_http_servers() -> None:
    config = parse_mcp_servers(
        {
            "mcpServers": {
                "acme": {"command": "acme-mcp", "args": ["--stdio"], "env": {"TOKEN": "t"}},
                "docs": {"url": "https://docs.example.com/mcp", "type": "http"},
                "off": {"command": "x", "disabled": True},
            }
        }
    )
    specs = config.servers
    assert set(specs) == {"acme", "docs"}
    assert config.problems == ()
    acme = specs["acme"].transport
    assert isinstance(acme, StdioTransport)
    assert (acme.command, acme.args, acme.stderr) == ("acme-mcp", ("--stdio",), "log")
    assert acme.env is not None
    assert {k: v.get_secret_value() for k, v in acme.env.items()} == {"TOKEN": "t"}
    assert isinstance(specs["docs"].transport, HttpTransport)


@pytest.mark.threat("T4")
@pytest.mark.parametrize(
    "label", ["Acme", "acme_docs", "-acme", "acme-", "a--b", "", "a" * 65, "é"]
)
def test_labels_must_be_lowercase_words_and_hyphens(label: str) -> None:
    with pytest.raises(ConfigError, match="server label"):
        check_label(label)
    with pytest.raises(ValidationError, match="server label"):
        ServerSpec(label=label, transport=StdioTransport(command="x"))


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("brave_search", "brave-search"),
        ("My Server", "my-server"),
        ("GitHub.com", "github-com"),
        ("a__b  c", "a-b-c"),
        ("acme-", "acme"),
        ("ACME", "acme"),
    ],
)
def test_names_real_config_files_use_become_labels(name: str, label: str) -> None:
    assert normalise_label(name) == label
    assert set(parse_mcp_servers({name: {"command": "x"}}).servers) == {label}


@pytest.mark.threat("T25")
@pytest.mark.parametrize(
    "name", ["a:b", "a/b", "../x", "a\x1b[2Jb", "a\nb", "é", "", " ", "-", "_x", "a" * 300]
)
def test_names_that_cannot_be_labels_are_skipped_and_named(name: str) -> None:
    with pytest.raises(ConfigError, match="server label"):
        normalise_label(name)
    config = parse_mcp_servers({name: {"command": "x"}, "good": {"command": "y"}}, source="f.json")
    assert set(config.servers) == {"good"}
    (problem,) = config.problems
    assert isinstance(problem, ConfigError)
    assert str(problem).startswith("f.json: server ")
    assert "\x1b" not in str(problem)


@pytest.mark.threat("T25")
def test_labels_stay_unique_without_regard_to_case_or_separators() -> None:
    config = parse_mcp_servers(
        {"Acme": {"command": "first"}, "acme": {"command": "second"}, "ACME_": {"command": "3"}},
        source="servers.json",
    )
    spec = config.servers["acme"]
    assert isinstance(spec.transport, StdioTransport)
    assert spec.transport.command == "first"
    assert len(config.problems) == 2
    assert all("already taken by 'Acme'" in str(p) for p in config.problems)


def test_a_bad_entry_is_reported_with_the_file_name_and_the_rest_loads(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "brave_search": {"command": "brave", "args": ["--stdio"]},
                    "broken": {"command": "x", "surprise": 1},
                    "My Docs": {"url": "https://docs.example.com/mcp"},
                }
            }
        )
    )
    config = load_mcp_servers(path, environ=NO_ENV)
    assert set(config.servers) == {"brave-search", "my-docs"}
    (problem,) = config.problems
    assert str(path) in str(problem)
    assert "'broken'" in str(problem)
    assert "surprise" in str(problem)
    assert config.source == str(path)


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
        ({"a": {"url": "https://x", "headers": {"Bad Name": "b"}}}, "header name"),
        ({"a": {"url": "https://x", "headers": {"Host": "b"}}}, "set by the transport"),
        ({"a": {"url": "https://x", "headers": {"Mcp-Session-Id": "b"}}}, "transport"),
        ({"a": {"url": "https://x", "headers": {"A": "b", "a": "c"}}}, "twice"),
        ({"a": {"url": "https://x", "headers": {"A": 5}}}, "headers"),
        ({"a": {"url": "https://x", "headers": {"A": "caf\u00e9"}}}, "not printable ASCII"),
        ({"a": {"command": "x", "stderr": "inherit"}}, "stderr"),
        ({"a": {"command": "x", "stderr": "unsafe-inherit"}}, "stderr"),
        ({"a": {"command": "x", "log_dir": "/tmp"}}, "log_dir"),
        ({"a": {"command": "x", "surprise": 1}}, "surprise"),
    ],
)
def test_bad_server_entries_are_skipped_with_the_reason(config: object, reason: str) -> None:
    loaded = parse_mcp_servers(config)
    assert loaded.servers == {}
    (problem,) = loaded.problems
    assert isinstance(problem, ConfigError)
    assert reason in str(problem)


@pytest.mark.parametrize("config", [[], "x", {"mcpServers": []}])
def test_a_config_that_is_not_an_object_is_a_config_error(config: object) -> None:
    with pytest.raises(ConfigError, match="expected an object"):
        parse_mcp_servers(config, source="f.json")


def test_config_file_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match=r"servers\.json"):
        load_mcp_servers(path)
    with pytest.raises(ConfigError, match="cannot read"):
        load_mcp_servers(tmp_path / "missing.json")
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_mcp_servers(path)
    path.write_text('{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}')
    with pytest.raises(ConfigError, match=r"servers\.json: the key 'a' appears twice"):
        load_mcp_servers(path)
    path.write_text(json.dumps({"mcpServers": {"a": {"url": "http://127.0.0.1:1/mcp"}}}))
    assert set(load_mcp_servers(path).servers) == {"a"}


def test_variables_expand_in_args_env_and_headers() -> None:
    environ = {"TOKEN": "t0k3n-value", "DIR": "/srv/skills", "EMPTY": ""}
    config = parse_mcp_servers(
        {
            "s": {
                "command": "serve",
                "args": ["${DIR}", "--mode=${MODE:-fast}", "${EMPTY:-fallback}", "$${DIR}x"],
                "env": {"API_TOKEN": "${TOKEN}", "LITERAL": "${not a var}"},
            },
            "h": {"url": "https://h.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
        },
        environ=environ,
    )
    assert config.problems == ()
    stdio = config.servers["s"].transport
    assert isinstance(stdio, StdioTransport)
    assert stdio.args == ("/srv/skills", "--mode=fast", "fallback", "$/srv/skillsx")
    assert stdio.env is not None
    assert stdio.env["API_TOKEN"].get_secret_value() == "t0k3n-value"
    assert stdio.env["LITERAL"].get_secret_value() == "${not a var}"
    http = config.servers["h"].transport
    assert isinstance(http, HttpTransport)
    assert http.headers["Authorization"].get_secret_value() == "Bearer t0k3n-value"


def test_expansion_is_one_pass() -> None:
    config = parse_mcp_servers({"s": {"command": "x", "args": ["${A}"]}}, environ={"A": "${B}"})
    transport = config.servers["s"].transport
    assert isinstance(transport, StdioTransport)
    assert transport.args == ("${B}",)


def test_a_missing_variable_names_the_variable_the_server_and_the_file(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "docs": {
                        "url": "https://docs.example.com/mcp",
                        "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"},
                    },
                    "other": {"command": "x"},
                }
            }
        )
    )
    config = load_mcp_servers(path, environ={})
    assert set(config.servers) == {"other"}
    (problem,) = config.problems
    assert isinstance(problem, ConfigError)
    text = problem.diagnostics()
    assert str(path) in text
    assert "server 'docs'" in text
    assert "'DOCS_TOKEN' is not set" in text
    assert "headers.Authorization" in text
    assert "${DOCS_TOKEN:-default}" in text


def test_server_option_takes_a_url_or_a_shell_quoted_command() -> None:
    http = parse_server_option("docs=http://127.0.0.1:8765/mcp")
    assert isinstance(http.transport, HttpTransport)
    assert parse_server_option("My_Docs=http://127.0.0.1:8765/mcp").label == "my-docs"
    stdio = parse_server_option("acme=python -m skillward serve 'my skills'")
    assert isinstance(stdio.transport, StdioTransport)
    assert stdio.transport.args == ("-m", "skillward", "serve", "my skills")


@pytest.mark.parametrize("option", ["acme", "=x", "acme=", "a:b=x", "a=python 'unclosed"])
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


@given(st.dictionaries(st.sampled_from(["acme", "Bad", "x-y", "a:b", "x_y"]), _json, max_size=3))
def test_any_server_config_loads_each_entry_or_reports_it(config: dict[str, object]) -> None:
    loaded = parse_mcp_servers({"mcpServers": config}, environ=NO_ENV)
    assert all(isinstance(problem, ConfigError) for problem in loaded.problems)
    assert len(loaded.servers) + len(loaded.problems) <= len(config)
    assert set(loaded.servers) <= {"acme", "bad", "x-y"}


@pytest.mark.threat("T25")
@given(st.text(max_size=80))
def test_any_name_is_a_safe_label_or_a_config_error(name: str) -> None:
    try:
        label = normalise_label(name)
    except ConfigError:
        return
    assert check_label(label) == label
    assert not set(label) & set(":/\\ ._")


def test_identity_tells_apart_servers_behind_one_label() -> None:
    stdio = ServerSpec(label="acme", transport=StdioTransport(command="acme", args=("--a",)))
    other = ServerSpec(label="acme", transport=StdioTransport(command="acme", args=("--b",)))
    http = ServerSpec(label="acme", transport=HttpTransport(url="https://a.example/mcp"))
    assert stdio.identity == "stdio:acme --a"
    assert http.identity == "http:https://a.example/mcp"
    assert len({stdio.identity, other.identity, http.identity}) == 3


def test_identity_and_description_leave_out_headers() -> None:
    first = ServerSpec(
        label="docs",
        transport=HttpTransport(
            url="https://docs.example/mcp", headers={"Authorization": "Bearer one-secret"}
        ),
    )
    rotated = ServerSpec(
        label="docs",
        transport=HttpTransport(
            url="https://docs.example/mcp", headers={"Authorization": "Bearer two-secret"}
        ),
    )
    assert first.identity == rotated.identity == "http:https://docs.example/mcp"
    assert first.describe() == "https://docs.example/mcp (headers: Authorization)"


def test_identity_of_in_memory_servers_is_per_object() -> None:
    first = ServerSpec(label="a", transport=InMemoryTransport(server=object()))
    second = ServerSpec(label="a", transport=InMemoryTransport(server=object()))
    assert first.identity != second.identity
    assert first.identity.startswith("memory:")


def _fresh_identity(transport: StdioTransport) -> str:
    return "stdio:" + shlex.join([transport.command, *transport.args])


@pytest.mark.threat("T22")
@given(
    st.text(min_size=1, max_size=40).filter(lambda c: "\x00" not in c),
    st.lists(st.text(max_size=40), max_size=6).map(tuple),
)
def test_a_stdio_identity_is_taken_once_and_equals_the_command_line(
    command: str, args: tuple[str, ...]
) -> None:
    transport = StdioTransport(command=command, args=args)
    spec = ServerSpec(label="acme", transport=transport)
    first = spec.identity
    assert first == _fresh_identity(transport)
    assert spec.identity is first  # kept, not taken again
    assert spec == ServerSpec(label="acme", transport=StdioTransport(command=command, args=args))


@pytest.mark.threat("T22")
def test_a_copy_pointed_at_another_command_line_has_that_identity() -> None:
    spec = ServerSpec(label="acme", transport=StdioTransport(command="acme", args=("--a",)))
    assert spec.identity == "stdio:acme --a"
    moved = spec.model_copy(update={"transport": StdioTransport(command="evil", args=("--a",))})
    assert moved.identity == "stdio:evil --a"
    legacy = spec.model_copy(update={"mode": "legacy"})
    assert legacy.identity == "stdio:acme --a"
    assert spec.identity == "stdio:acme --a"


# --- server URLs ---------------------------------------------------------------------------


@pytest.mark.threat("T40")
@pytest.mark.parametrize(
    "url", ["https://u@evil.example/mcp", "https://user:hunter2@evil.example/", "https://@x/"]
)
def test_a_server_url_with_user_info_is_refused_naming_the_label_and_not_the_secret(
    url: str,
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_server_option(f"Acme Docs={url}")
    assert caught.value.server == "acme-docs"
    assert "user name or password" in str(caught.value)
    config = parse_mcp_servers({"mcpServers": {"docs": {"url": url}}}, environ=NO_ENV)
    assert config.servers == {}
    (problem,) = config.problems
    assert "server 'docs'" in str(problem)
    assert "user name or password" in str(problem)
    for error in (caught.value, problem):
        assert "hunter2" not in str(error)
        assert "evil.example" not in str(error)
    with pytest.raises(ValidationError) as direct:
        HttpTransport(url=url)
    assert "hunter2" not in str(direct.value)


@pytest.mark.threat("T40")
def test_a_server_url_is_kept_in_canonical_form_so_identity_and_policy_see_one_string() -> None:
    spec = parse_server_option("acme=HTTPS://Skills.Example.com.:443/a/../mcp#top")
    assert isinstance(spec.transport, HttpTransport)
    assert spec.transport.url == "https://skills.example.com/mcp"
    assert spec.identity == "http:https://skills.example.com/mcp"
    config = parse_mcp_servers(
        {"mcpServers": {"docs": {"url": "https://b\u00fccher.example?x=/mcp"}}}, environ=NO_ENV
    )
    assert config.servers["docs"].identity == "http:https://xn--bcher-kva.example/?x=/mcp"


@pytest.mark.threat("T40")
@pytest.mark.parametrize("target", ["ftp://files.example/mcp", "*://x/", "HTTPS://x:0/"])
def test_a_server_option_that_looks_like_a_url_is_never_read_as_a_command(target: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_server_option(f"acme={target}")
    assert caught.value.server == "acme"
