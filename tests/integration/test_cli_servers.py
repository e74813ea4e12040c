"""Servers registered once (``skillward servers``), and the gateway's entry for each MCP
host (``skillward gateway --print-config``), run as a person runs them."""

from __future__ import annotations

import html
import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from skillward.cli.gatewaying import HOSTS, NO_SERVERS
from skillward.edge.servers import HttpTransport, StdioTransport, load_mcp_servers
from tests.integration.test_cli import environment, run

pytestmark = pytest.mark.anyio

SERVE = [sys.executable, "-m", "skillward", "serve"]
SECRET = "s3cr3t-token-nobody-sees"
WAIT = 60


def servers_file(home: Path) -> Path:
    return home / ".config" / "skillward" / "servers.json"


def test_a_server_added_once_is_connected_by_every_command(tmp_path: Path) -> None:
    added = run("servers", "add", "Examples", "--", *SERVE, home=tmp_path)
    assert added.returncode == 0, added.stderr
    assert "examples  " in added.stdout
    listed = run("list", "--json", "--no-local", home=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "examples:refunds" in {s["qualified"] for s in json.loads(listed.stdout)["skills"]}
    assert json.loads(servers_file(tmp_path).read_text()) == {
        "mcpServers": {"examples": {"command": SERVE[0], "args": SERVE[1:]}}
    }


def test_a_command_line_given_as_one_argument_is_split_as_the_shell_would(
    tmp_path: Path,
) -> None:
    added = run("servers", "add", "team", "team-mcp --root '/srv/my skills'", home=tmp_path)
    assert added.returncode == 0, added.stderr
    entry = json.loads(servers_file(tmp_path).read_text())["mcpServers"]["team"]
    assert entry == {"command": "team-mcp", "args": ["--root", "/srv/my skills"]}


@pytest.mark.threat("T24")
def test_header_and_env_values_are_stored_as_given_and_never_shown(tmp_path: Path) -> None:
    added = run(
        "servers",
        "add",
        "Docs_Server",
        "https://docs.example.com/mcp",
        "--header",
        f"Authorization=Bearer {SECRET}",
        "--header",
        "X-Team: ${TEAM}",
        home=tmp_path,
    )
    assert added.returncode == 0, added.stderr
    stdio = run("servers", "add", "tools", "tools-mcp", "--env", f"TOKEN={SECRET}", home=tmp_path)
    assert stdio.returncode == 0, stdio.stderr
    text = run("servers", "list", home=tmp_path)
    as_json = run("servers", "list", "--json", home=tmp_path)
    for result in (added, stdio, text, as_json):
        assert SECRET not in result.stdout + result.stderr
    assert "headers: Authorization: ***, X-Team: ***" in text.stdout
    assert "env: TOKEN=***" in text.stdout
    docs, tools = json.loads(as_json.stdout)["servers"]
    assert (docs["label"], docs["name"], docs["transport"]) == (
        "docs-server",
        "docs-server",
        "http",
    )
    assert docs["headers"] == {"Authorization": "***", "X-Team": "***"}
    assert "TEAM" in docs["problem"]  # not set here: the commands would skip it
    assert tools["env"] == {"TOKEN": "***"}
    path = servers_file(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # What the commands read: the value as given, ${TEAM} expanded when the file is read.
    loaded = load_mcp_servers(path, environ={"TEAM": "blue"})
    assert loaded.problems == ()
    http = loaded.servers["docs-server"].transport
    assert isinstance(http, HttpTransport)
    assert {k: v.get_secret_value() for k, v in http.headers.items()} == {
        "Authorization": f"Bearer {SECRET}",
        "X-Team": "blue",
    }
    command = loaded.servers["tools"].transport
    assert isinstance(command, StdioTransport)
    assert command.env is not None
    assert command.env["TOKEN"].get_secret_value() == SECRET


@pytest.mark.threat("T24")
@pytest.mark.parametrize(
    "header",
    [SECRET, f"Authorization=Bearer {SECRET}\nX-Injected: yes", f"Bad Name={SECRET}"],
    ids=["no-name", "line-break", "bad-name"],
)
def test_a_bad_header_is_refused_without_quoting_its_value(tmp_path: Path, header: str) -> None:
    result = run(
        "servers", "add", "docs", "https://docs.example.com/mcp", "--header", header, home=tmp_path
    )
    assert result.returncode == 2
    assert SECRET not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert not servers_file(tmp_path).exists()


@pytest.mark.threat("T25")
def test_a_taken_label_is_refused_unless_replaced_in_its_place(tmp_path: Path) -> None:
    path = servers_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps({"mcpServers": {"Acme_Docs": {"command": "old"}, "other": {"command": "o"}}})
    )
    before = path.read_text()
    taken = run("servers", "add", "ACME docs", "new-mcp", home=tmp_path)
    assert taken.returncode == 2
    assert "'acme-docs' is taken" in taken.stderr
    assert "'Acme_Docs'" in taken.stderr
    assert "--replace" in taken.stderr
    assert path.read_text() == before
    replaced = run("servers", "add", "acme-docs", "new-mcp", "--replace", "--json", home=tmp_path)
    assert replaced.returncode == 0, replaced.stderr
    assert json.loads(replaced.stdout)["replaced"] is True
    servers = json.loads(path.read_text())["mcpServers"]
    assert list(servers.items()) == [
        ("acme-docs", {"command": "new-mcp", "args": []}),
        ("other", {"command": "o"}),
    ]


def test_what_a_change_does_not_touch_is_kept_as_it_was(tmp_path: Path) -> None:
    config = tmp_path / "mine.json"
    untouched = {
        "$schema": "https://example.com/schema.json",
        "mcpServers": {
            "Zeta Search": {
                "command": "zeta",
                "args": ["--key", "${ZETA_KEY:-none}"],
                "disabled": True,
                "alwaysAllow": ["search"],
                "timeout": 60000,
                "description": "Recherche é 検索",
            },
            "docs": {"url": "https://docs.example.com/mcp", "headers": {"A": "${A}"}},
        },
        "inputs": [{"id": "x", "password": True}, 1.5, None],
    }
    config.write_text(json.dumps(untouched))
    added = run("servers", "add", "new", "new-mcp", "--config", str(config), home=tmp_path)
    assert added.returncode == 0, added.stderr
    removed = run("servers", "remove", "NEW", "--config", str(config), home=tmp_path)
    assert removed.returncode == 0, removed.stderr
    after = json.loads(config.read_text())
    assert after == untouched
    assert list(after) == list(untouched)
    assert list(after["mcpServers"]) == ["Zeta Search", "docs"]
    assert list(after["mcpServers"]["Zeta Search"]) == list(
        untouched["mcpServers"]["Zeta Search"]  # type: ignore[index]
    )
    assert not servers_file(tmp_path).exists()  # --config: that file only


def test_removing_a_server_that_is_not_there_exits_2_naming_the_nearest(tmp_path: Path) -> None:
    assert run("servers", "add", "acme", "acme-mcp", home=tmp_path).returncode == 0
    missing = run("servers", "remove", "acne", home=tmp_path)
    assert missing.returncode == 2
    assert "did you mean 'acme'?" in missing.stderr
    assert run("servers", "remove", "acme", home=tmp_path).returncode == 0
    assert json.loads(servers_file(tmp_path).read_text()) == {"mcpServers": {}}
    assert run("servers", "remove", "acme", home=tmp_path).returncode == 2


@pytest.mark.parametrize("content", ["{", '{"mcpServers": {"a": {}, "a": {}}}', "[]"])
def test_a_file_that_cannot_be_read_as_it_is_is_never_written(tmp_path: Path, content: str) -> None:
    path = servers_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(content)
    for argv in (("add", "acme", "acme-mcp"), ("remove", "a"), ("list",)):
        result = run("servers", *argv, home=tmp_path)
        assert result.returncode == 2, argv
        assert str(path) in result.stderr
    assert path.read_text() == content


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("acme", "acme-mcp", "--header", "A=b"), "--header is for servers reached by URL"),
        (("acme", "https://acme.example/mcp", "--env", "A=b"), "--env is for stdio servers"),
        (("a:b", "acme-mcp"), "server label"),
        (("acme", "acme-mcp", "--env", "A=1", "--env", "A=2"), "given twice"),
        (("acme", "''"), "command: String should have at least 1 character"),
    ],
)
def test_what_cannot_be_a_server_entry_is_a_usage_error(
    tmp_path: Path, argv: tuple[str, ...], message: str
) -> None:
    result = run("servers", "add", *argv, home=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    assert not servers_file(tmp_path).exists()


def test_servers_list_says_where_the_file_is_and_that_it_is_empty(tmp_path: Path) -> None:
    listed = run("servers", "list", home=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert str(servers_file(tmp_path)) in listed.stderr
    assert "skillward servers add" in listed.stderr
    assert json.loads(run("servers", "list", "--json", home=tmp_path).stdout) == {
        "file": str(servers_file(tmp_path)),
        "servers": [],
    }
    named = run("servers", "list", "--config", str(tmp_path / "none.json"), home=tmp_path)
    assert named.returncode == 2


# --- gateway --print-config ----------------------------------------------------------------


def print_config(tmp_path: Path, host: str, *, launcher: list[str] | None = None) -> str:
    """What ``gateway --print-config HOST`` prints, run in a directory of its own with a
    relative --config (the host starts the gateway anywhere)."""
    here = tmp_path / "here"
    here.mkdir(exist_ok=True)
    (here / "servers.json").write_text(
        json.dumps({"mcpServers": {"examples": {"command": SERVE[0], "args": SERVE[1:]}}})
    )
    launcher = launcher or [sys.executable, "-m", "skillward"]
    options = ["--config", "servers.json", "--no-local", "--no-cache", "--refresh", "30"]
    result = subprocess.run(
        [*launcher, "gateway", "--print-config", host, *options],
        capture_output=True,
        text=True,
        timeout=WAIT,
        env=environment(tmp_path),
        cwd=here,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def command_of(host: str, printed: str) -> tuple[str, list[str]]:
    """The command and arguments an entry in ``host``'s own format starts."""
    if host == "claude-code":
        words = shlex.split(printed)
        assert words[:5] == ["claude", "mcp", "add", "skillward", "--"]
        return words[5], words[6:]
    entry: Any = json.loads(printed)
    if host == "vscode":
        assert list(entry) == ["servers"]
        server = entry["servers"]["skillward"]
        assert server["type"] == "stdio"
    else:
        assert list(entry) == ["mcpServers"]
        server = entry["mcpServers"]["skillward"]
    assert set(server) <= {"type", "command", "args"}
    return server["command"], server["args"]


@pytest.mark.parametrize("host", HOSTS)
async def test_each_hosts_entry_starts_this_gateway_from_anywhere(
    tmp_path: Path, host: str
) -> None:
    command, args = command_of(host, print_config(tmp_path, host))
    assert [command, *args[:3]] == [sys.executable, "-m", "skillward", "gateway"]
    assert args[3:] == [
        "--config",
        str(tmp_path / "here" / "servers.json"),
        "--no-local",
        "--no-cache",
        "--refresh",
        "30",
    ]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    params = StdioServerParameters(
        command=command, args=args, env=environment(tmp_path), cwd=str(elsewhere)
    )
    with anyio.fail_after(WAIT):
        async with Client(params) as client:
            tools = await client.list_tools()
            instructions = client.instructions or ""
    assert [tool.name for tool in tools.tools] == ["list_skills", "read_skill", "read_skill_file"]
    assert 'ref="refunds"' in instructions


def test_the_entry_names_the_installed_command_by_its_absolute_path(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "skillward"
    if not script.exists():
        pytest.skip("no skillward script beside this interpreter")
    command, args = command_of("cursor", print_config(tmp_path, "cursor", launcher=[str(script)]))
    assert command == str(script)
    assert os.path.isabs(command)
    assert args[0] == "gateway"


def test_print_config_is_for_stdio_and_refuses_http(tmp_path: Path) -> None:
    result = run("gateway", "--print-config", "cursor", "--http", "127.0.0.1:0", home=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "stdio" in result.stderr


# --- a gateway with no server ---------------------------------------------------------------


async def gateway_ended(argv: list[str], env: dict[str, str]) -> str:
    """What a gateway said on stderr, started with its stdin closed (the host gone)."""
    with anyio.fail_after(WAIT):
        ended = await anyio.run_process(argv, input=b"", env=env, check=False)
    stderr = ended.stderr.decode()
    assert ended.returncode == 0, stderr
    return " ".join(stderr.split())  # a note wraps at the terminal's width


async def test_a_gateway_with_no_server_starts_and_says_how_to_add_one(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "skillward", "gateway", "--no-local"]
    env = environment(tmp_path)
    note = await gateway_ended(argv, env)
    assert "no MCP server is configured, so only local skills are served" in note
    assert "--server LABEL=URL_OR_COMMAND" in note
    assert "`skillward servers add LABEL CMD_OR_URL`" in note
    assert str(servers_file(tmp_path)) in note
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    with anyio.fail_after(WAIT):
        async with Client(params) as client:
            instructions = client.instructions or ""
            listed = await client.call_tool("list_skills", {})
    said = " ".join(part.text for part in listed.content if isinstance(part, types.TextContent))
    for given in (instructions, said):
        assert NO_SERVERS in html.unescape(given)  # as a notice's attribute quotes it
    served = await gateway_ended([*argv, "--server", f"examples={shlex.join(SERVE)}"], env)
    assert "no MCP server" not in served
