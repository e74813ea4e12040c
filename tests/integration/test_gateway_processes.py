"""The gateway as people run it: ``skillward gateway`` over stdio, with the ``mcp`` SDK's
client and FastMCP's client (one nobody here wrote) in both protocol eras, upstreams as
real processes, and an upstream that is stopped and started again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.client.elicitation import ElicitResult
from fastmcp.client.transports import StdioTransport as FastMCPStdio
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from skillward.edge.servers import HttpTransport, ServerSpec, StdioTransport
from skillward.gateway._upstreams import Upstreams
from tests.support.gated import DEPLOY_BODY_LINE, NOTES, build_gated_tree
from tests.support.gateway import (
    MODES,
    Asker,
    Browser,
    choose,
    client_of,
    gateway_over,
    meta,
    text,
)
from tests.support.hostile import build_hostile_tree
from tests.support.listings import REPO_ROOT
from tests.support.secret_service import BACKEND_NAME, forget, secret_service_or_skip
from tests.support.servers import http_server_process, serve_argv
from tests.support.stderr_server import argv as stderr_server_argv
from tests.support.trees import build_tree

pytestmark = pytest.mark.anyio

WAIT = 60
NO_KEYRING = "keyring.backends.fail.Keyring"
CACHE = REPO_ROOT / ".ci" / ".cache"
NODE_BIN = CACHE / "node22" / "node_modules" / ".bin"
INSPECTOR = CACHE / "inspector" / "node_modules" / ".bin" / "inspector"


def _env(*, keyring: str | None = NO_KEYRING) -> dict[str, str]:
    """The test's environment (a user of its own, from conftest), with no keyring unless a
    test asks for the session's Secret Service (``keyring=None``)."""
    env = dict(os.environ)
    env.pop("PYTHON_KEYRING_BACKEND", None)
    if keyring is not None:
        env["PYTHON_KEYRING_BACKEND"] = keyring
    return env


def gateway_argv(tmp_path: Path) -> list[str]:
    acme = tmp_path / "acme"
    build_gated_tree(acme, tmp_path / "marker")
    hostile = tmp_path / "hostile"
    build_hostile_tree(hostile)
    py = sys.executable
    return [
        "-m",
        "skillward",
        "gateway",
        "--no-local",
        "--no-cache",
        "--server",
        f"acme={py} -m skillward serve {acme}",
        "--server",
        f"evil={py} -m tests.support.hostile {hostile}",
    ]


def stdio_params(tmp_path: Path, *, keyring: str | None = NO_KEYRING) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=gateway_argv(tmp_path),
        env=_env(keyring=keyring),
        cwd=str(Path(__file__).resolve().parents[2]),
    )


@pytest.mark.parametrize("mode", MODES)
async def test_skillward_gateway_over_stdio_serves_the_sdk_client_in_both_eras(
    tmp_path: Path, mode: str, home: Path
) -> None:
    asker = Asker([choose("session")])
    with anyio.fail_after(WAIT):
        async with Client(stdio_params(tmp_path), mode=mode, elicitation_callback=asker) as client:
            assert 'ref="deploy"' in (client.instructions or "")
            loaded = await client.call_tool("read_skill", {"ref": "deploy"})
            again = await client.call_tool("read_skill", {"ref": "deploy"})
            notes = await client.call_tool("read_skill_file", {"ref": "deploy", "path": "notes.md"})
            lie = await client.call_tool("read_skill", {"ref": "evil:fm-mismatch"})
    assert not loaded.is_error
    assert DEPLOY_BODY_LINE in text(loaded)
    assert not again.is_error
    assert len(asker.messages) == 2  # deploy once (then its session), the lie once
    assert NOTES.decode() in text(notes)
    assert lie.is_error
    assert meta(lie)["label"] == "evil"
    audit = (home / ".local" / "state" / "skillward" / "audit.jsonl").read_text()
    assert '"client_unverified":"mcp"' in audit


@pytest.mark.parametrize("mode", MODES)
async def test_skillward_gateway_without_elicitation_loads_nothing_over_stdio(
    tmp_path: Path, mode: str
) -> None:
    with anyio.fail_after(WAIT):
        async with Client(stdio_params(tmp_path), mode=mode) as client:
            refused = await client.call_tool("read_skill", {"ref": "deploy"})
            catalog = await client.call_tool("list_skills", {})
    assert refused.is_error
    assert "skillward approve acme:deploy" in text(refused)
    assert not catalog.is_error


@pytest.mark.parametrize("mode", MODES)
async def test_fastmcps_client_is_asked_and_served_in_both_eras(tmp_path: Path, mode: str) -> None:
    asked: list[str] = []

    async def on_elicit(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.append(message)
        enum = params.requested_schema["properties"]["decision"]["enum"]
        return ElicitResult(action="accept", content={"decision": enum[0]})

    params = stdio_params(tmp_path)
    transport = FastMCPStdio(
        params.command, list(params.args), env=params.env, cwd=str(params.cwd), keep_alive=False
    )
    with anyio.fail_after(WAIT):
        async with FastMCPClient(
            transport, elicitation_handler=on_elicit, mode=mode, timeout=30
        ) as client:
            tools = [tool.name for tool in await client.list_tools()]
            result = await client.call_tool("read_skill", {"ref": "deploy"})
    assert tools == ["list_skills", "read_skill", "read_skill_file"]
    assert len(asked) == 1
    assert "acme:deploy" in asked[0]
    (item,) = result.content
    assert isinstance(item, types.TextContent)
    assert DEPLOY_BODY_LINE in item.text


@asynccontextmanager
async def _upstream(directory: Path, port: int = 0) -> AsyncIterator[tuple[str, Any]]:
    argv = serve_argv(directory, "--http", f"127.0.0.1:{port}")
    async with http_server_process(argv) as (url, process):
        yield url, process


@pytest.mark.threat("T50")
async def test_an_upstream_that_stops_is_its_own_error_and_is_served_again_once_restarted(
    tmp_path: Path,
) -> None:
    root = tmp_path / "acme"
    build_gated_tree(root, tmp_path / "marker")
    asker = Asker([choose("session")])
    with anyio.fail_after(WAIT):
        async with _upstream(root) as (url, process):
            port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
            spec = ServerSpec(label="acme", transport=HttpTransport(url=url))
            async with (
                gateway_over([spec]) as gateway,
                client_of(gateway, "auto", asker) as client,
            ):
                upstreams = Upstreams(gateway, [])
                assert not (await client.call_tool("read_skill", {"ref": "plain"})).is_error
                process.terminate()
                await process.wait()
                down = await client.call_tool("read_skill", {"ref": "deploy"})
                await upstreams.step()  # the reconnection fails: backoff, no raise
                listed = await client.call_tool("list_skills", {})
                async with _upstream(root, port):
                    upstreams._due.clear()  # the backoff is over
                    await upstreams.step()
                    back = await client.call_tool("read_skill", {"ref": "plain"})
    assert down.is_error
    assert meta(down)["label"] == "acme"
    assert not listed.is_error
    assert not back.is_error


@pytest.mark.threat("T46")
@pytest.mark.parametrize("mode", MODES)
async def test_a_skill_approved_and_remembered_in_a_terminal_loads_without_elicitation(
    tmp_path: Path, mode: str, home: Path
) -> None:
    backend = secret_service_or_skip()
    argv = gateway_argv(tmp_path)
    try:
        await _approve_then_load(tmp_path, argv, mode)
    finally:
        forget(backend, home / ".local" / "share" / "skillward" / "approvals.json")


async def _approve_then_load(tmp_path: Path, argv: list[str], mode: str) -> None:
    servers = argv[argv.index("--no-local") :]
    with anyio.fail_after(WAIT):
        approved = await anyio.run_process(
            [sys.executable, "-m", "skillward", "approve", "acme:deploy", "--yes", *servers],
            env=_env(keyring=BACKEND_NAME),
            cwd=str(REPO_ROOT),
            check=False,
        )
    assert approved.returncode == 0, approved.stderr.decode(errors="replace")
    with anyio.fail_after(WAIT):
        async with Client(stdio_params(tmp_path, keyring=BACKEND_NAME), mode=mode) as client:
            loaded = await client.call_tool("read_skill", {"ref": "deploy"})
            other = await client.call_tool("read_skill", {"ref": "plain"})
    assert not loaded.is_error
    assert DEPLOY_BODY_LINE in text(loaded)
    assert other.is_error  # approved in the terminal: that skill only


def _inspector(tmp_path: Path, era: str, *method: str, status: int = 0) -> dict[str, Any]:
    """The Inspector CLI's one JSON answer (it exits 5 when a tool answers isError)."""
    env = {**_env(), "PATH": f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    options = ["--cli", "--protocol-era", era, *method, "--format", "json", "-q"]
    done = subprocess.run(
        [str(INSPECTOR), *options, "--", sys.executable, *gateway_argv(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=str(REPO_ROOT),
        check=False,
    )
    assert done.returncode == status, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert isinstance(result, dict)
    return result


@pytest.mark.skipif(
    not INSPECTOR.exists() or not (NODE_BIN / "node").exists(),
    reason="Node 22 and the MCP Inspector are not installed (.ci/thirdparty)",
)
@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_the_mcp_inspector_cli_lists_the_tools_and_without_elicitation_loads_nothing(
    tmp_path: Path, era: str
) -> None:
    listed = _inspector(tmp_path, era, "--method", "tools/list")
    names = [tool["name"] for tool in listed["result"]["tools"]]
    assert names == ["list_skills", "read_skill", "read_skill_file"]
    called = _inspector(
        tmp_path,
        era,
        "--method",
        "tools/call",
        "--tool-name",
        "read_skill",
        "--tool-arg",
        "ref=deploy",
        status=5,
    )["result"]
    assert called["isError"] is True
    assert called["_meta"]["skillward"]["error"] == "ApprovalError"
    assert "skillward approve acme:deploy" in called["content"][0]["text"]
    assert DEPLOY_BODY_LINE not in called["content"][0]["text"]


async def test_skillward_gateway_over_http_prints_the_token_file_never_the_token(
    tmp_path: Path, home: Path
) -> None:
    argv = [sys.executable, *gateway_argv(tmp_path), "--http", "127.0.0.1:0"]
    process = await anyio.open_process(argv, env=_env(), cwd=str(REPO_ROOT))
    try:
        assert process.stderr is not None
        seen = b""
        with anyio.fail_after(WAIT):
            async for chunk in process.stderr:
                seen += chunk
                if b"/mcp" in seen:
                    break
        said = seen.decode()
        token_file = home / ".local" / "state" / "skillward" / "gateway-token"
        token = token_file.read_text().strip()
        assert str(token_file) in said.replace("\n", "")
        assert token not in said
        url = "http://127.0.0.1:" + said.split("http://127.0.0.1:", 1)[1].split("/mcp", 1)[0]
        with anyio.fail_after(WAIT):
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
                Client(streamable_http_client(url + "/mcp", http_client=http)) as client,
            ):
                catalog = await client.call_tool("list_skills", {})
                refused = await client.call_tool("read_skill", {"ref": "deploy"})
    finally:
        process.terminate()
        with anyio.fail_after(WAIT):
            await process.wait()
        await process.aclose()
    assert 'ref="deploy"' in text(catalog)
    assert refused.is_error  # the SDK's client without a callback declares no elicitation


def test_a_token_file_without_http_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "skillward", "gateway", "--token-file", str(tmp_path / "t")],
        capture_output=True,
        text=True,
        timeout=WAIT,
        env=_env(),
        check=False,
    )
    assert done.returncode == 2
    assert "--token-file needs --http" in done.stderr
    assert done.stdout == ""


def _refused_before_any_server_starts(tmp_path: Path, *options: str) -> str:
    """Run the gateway with ``options`` and a server that records its start; return
    stderr once the gateway exits (2 or 3), asserting the server never started."""
    skills = tmp_path / "skills"
    build_tree(skills)
    started = tmp_path / "started.pid"
    server = "acme=" + " ".join(stderr_server_argv(skills, "--pid-file", str(started)))
    done = subprocess.run(
        [sys.executable, "-m", "skillward", "gateway", "--no-local", "--server", server, *options],
        capture_output=True,
        text=True,
        timeout=WAIT,
        env=_env(),
        cwd=str(REPO_ROOT),
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode != 0
    assert not started.exists()
    assert done.stdout == ""
    return done.stderr


@pytest.mark.threat("T51")
def test_a_gateway_address_off_loopback_is_refused_before_any_server_starts(
    tmp_path: Path,
) -> None:
    said = _refused_before_any_server_starts(tmp_path, "--http", "0.0.0.0:8765")
    assert "loopback only" in said
    assert "Traceback" not in said


@pytest.mark.threat("T51")
def test_a_token_file_others_can_read_is_refused_before_any_server_starts(
    tmp_path: Path,
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("a-token-long-enough-to-be-one\n")
    token_file.chmod(0o644)
    said = _refused_before_any_server_starts(
        tmp_path, "--http", "127.0.0.1:0", "--token-file", str(token_file)
    )
    assert "open to group or others" in said
    assert "a-token-long-enough-to-be-one" not in said


@pytest.mark.threat("T50")
async def test_a_server_that_failed_to_start_is_connected_once_it_can_be_and_announced(
    tmp_path: Path,
) -> None:
    root = tmp_path / "acme"
    build_gated_tree(root, tmp_path / "marker")
    script = tmp_path / "later.py"  # not there yet: the server cannot start
    spec = ServerSpec(
        label="later",
        transport=StdioTransport(command=sys.executable, args=(str(script), str(root))),
    )
    with anyio.fail_after(WAIT):
        async with gateway_over([]) as gateway, client_of(gateway, "legacy") as client:
            upstreams = Upstreams(gateway, [spec])
            assert not await upstreams.step()  # it fails: kept, retried later, nothing raised
            assert "later" in upstreams.pending
            script.write_text(
                "import sys\nfrom skillward.cli import main\n"
                "sys.exit(main(['serve', sys.argv[1]]))\n"
            )
            upstreams._due.clear()  # the backoff is over
            assert await upstreams.step()
            catalog = await client.call_tool("list_skills", {})
    assert not upstreams.pending
    assert 'ref="deploy"' in text(catalog)


@pytest.mark.parametrize("mode", MODES)
async def test_skillward_gateway_with_approval_pages_asks_on_a_page_over_stdio(
    tmp_path: Path, mode: str
) -> None:
    params = stdio_params(tmp_path)
    params.args.append("--approval-page")
    browser = Browser("once")
    with anyio.fail_after(WAIT):
        async with Client(params, mode=mode, elicitation_callback=browser) as client:
            loaded = await client.call_tool("read_skill", {"ref": "deploy"})
    assert not loaded.is_error
    assert DEPLOY_BODY_LINE in text(loaded)
    (page,) = browser.pages
    assert DEPLOY_BODY_LINE in page.text
    assert browser.urls[0].startswith("http://127.0.0.1:")
