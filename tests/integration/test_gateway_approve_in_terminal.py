"""A gateway whose MCP client cannot ask the person is approved from any terminal, by the
command it prints, exactly as printed.

Real processes throughout: ``skillward gateway`` over stdio (its upstreams real
``skillward serve`` and hostile servers), the ``mcp`` SDK's client declaring no
elicitation, on a machine whose keyring backend fails (the file key store opted in, as
on a container), and the printed command run by a shell in a pseudo-terminal, its screen
read by a terminal emulator. The same client session is then served, as the answer said.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.integration.test_gateway_processes import NO_KEYRING, gateway_argv
from tests.support.gated import DEPLOY_BODY_LINE, DEPLOY_DESCRIPTION
from tests.support.gateway import text
from tests.support.listings import REPO_ROOT
from tests.support.screen import Screen, flat

pytestmark = pytest.mark.anyio

WAIT = 90
#: Where the printed command is, in the error the client gets.
PRINTED = re.compile(r"Ask the person to run: (skillward approve \S+) \(in a terminal\)")
#: The end of the prompt's question line ("... deny? (d): ").
ASKS = r"\(d\)(?:\x1b\[[0-9;]*m)*: "


def opt_in_to_the_file_key_store(home: Path) -> None:
    config = home / ".config" / "skillward" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[approvals]\nkey_store = "file"\n', encoding="utf-8")


def environment() -> dict[str, str]:
    """This test's user (conftest's home and runtime directory), no keyring, the
    ``skillward`` command on the PATH as installed."""
    env = {k: v for k, v in os.environ.items() if k not in {"COLUMNS", "LINES"}}
    env.update(
        PYTHON_KEYRING_BACKEND=NO_KEYRING,
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        TERM="xterm",
        NO_COLOR="1",
    )
    return env


@asynccontextmanager
async def gateway_client(tmp_path: Path) -> AsyncIterator[Client]:
    """``skillward gateway`` over stdio, and a client that declares no elicitation."""
    params = StdioServerParameters(
        command=sys.executable, args=gateway_argv(tmp_path), env=environment(), cwd=str(REPO_ROOT)
    )
    async with Client(params, mode="auto") as client:
        yield client


def answer_in_a_terminal(command: str, key: str) -> tuple[str, str, int]:
    """Run ``command`` as printed, by a shell in a pty; answer ``key`` at its prompt. The
    screen when it asked, the screen at the end, and its exit status."""
    screen = Screen(["/bin/sh", "-c", command], env=environment(), cwd=REPO_ROOT, columns=100)
    asked = screen.expect(ASKS)
    screen.send(key)
    status = screen.finish()
    return asked, screen.text(), status


def audit(home: Path) -> str:
    return (home / ".local" / "state" / "skillward" / "audit.jsonl").read_text()


@pytest.mark.threat("T46")
@pytest.mark.threat("T60")
@pytest.mark.parametrize("key", ["o", "s", "r"])
async def test_the_printed_command_approves_the_waiting_client_session_from_a_terminal(
    tmp_path: Path, home: Path, key: str
) -> None:
    opt_in_to_the_file_key_store(home)
    with anyio.fail_after(WAIT):
        async with gateway_client(tmp_path) as client:
            refused = await client.call_tool("read_skill", {"ref": "deploy"})
            printed = PRINTED.search(text(refused))
            assert printed is not None, text(refused)
            asked, end, status = await anyio.to_thread.run_sync(
                answer_in_a_terminal, printed.group(1), key
            )
            first = await client.call_tool("read_skill", {"ref": "deploy"})
            second = await client.call_tool("read_skill", {"ref": "deploy"})
            other = await client.call_tool("read_skill", {"ref": "plain"})
    assert refused.is_error
    assert printed.group(1) == "skillward approve acme:deploy"
    assert status == 0, end
    # The whole approval, from the gateway's facts, by the terminal's own prompt.
    shown = flat(asked)
    for seen in (
        "approveloadingthisskill?",
        "acme:deploy",
        flat(DEPLOY_DESCRIPTION),
        "skill://deploy/SKILL.md",
        "notes.md",
        "scripts/ship.sh",
        "child/SKILL.md",
        "Bash",
        "Write",
        "reachedbystdio:",
        "approveonce,forthissession,remember,viewSKILL.mdfirst,deny?(d):",
    ):
        assert seen in shown, seen
    assert not first.is_error, text(first)
    assert DEPLOY_BODY_LINE in text(first)
    # Loaded in this session, its content unchanged: given again without asking.
    assert not second.is_error, text(second)
    assert other.is_error  # that skill only
    trail = audit(home)
    assert '"via":"socket pid=' in trail
    scope = {"o": "once", "s": "session", "r": "remember"}[key]
    assert f'"scope":"{scope}"' in trail
    with anyio.fail_after(WAIT):
        async with gateway_client(tmp_path) as later:  # a new gateway process
            after = await later.call_tool("read_skill", {"ref": "deploy"})
    # Only remember outlives the gateway (recorded with the file key store: no keyring).
    assert after.is_error is (key != "r"), text(after)
    if key == "r":
        assert DEPLOY_BODY_LINE in text(after)


@pytest.mark.threat("T60")
async def test_viewing_skill_md_and_denying_in_the_terminal_refuses_the_next_read(
    tmp_path: Path, home: Path
) -> None:
    with anyio.fail_after(WAIT):
        async with gateway_client(tmp_path) as client:
            refused = await client.call_tool("read_skill", {"ref": "deploy"})
            printed = PRINTED.search(text(refused))
            assert printed is not None

            def view_then_deny() -> tuple[str, int]:
                screen = Screen(
                    ["/bin/sh", "-c", printed.group(1)], env=environment(), cwd=REPO_ROOT
                )
                screen.expect(ASKS)
                screen.send("v")
                viewed = screen.expect(ASKS)
                screen.send("d")
                return viewed, screen.finish()

            viewed, status = await anyio.to_thread.run_sync(view_then_deny)
            denied = await client.call_tool("read_skill", {"ref": "deploy"})
            again = await client.call_tool("read_skill", {"ref": "deploy"})
    assert DEPLOY_BODY_LINE in viewed  # SKILL.md, fetched and verified by the gateway
    assert status == 3
    assert denied.is_error
    assert "not approved" in text(denied)
    assert again.is_error  # asked anew
    assert PRINTED.search(text(again)) is not None
    assert '"decision":"denied"' in audit(home)
