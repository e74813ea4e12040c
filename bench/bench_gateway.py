"""skillward between an MCP client and one upstream, side by side with what a plain proxy
and the bare SDK cost, in one run. Each round calls every variant once (in a rotating
order, so load on a shared machine falls on all alike); each line is the median over the
rounds of the per-round ratio, with its goal.

The upstream is ``skillward serve`` over stdio, on a skill of a realistic size (a 3.8 KB
SKILL.md and a 1.9 KB file): every variant starts its own copy of the same command.
skillward runs as the command line runs it, from one user's directories made here: the
approval store (the file key store), the skill approved with ``remember`` by
``skillward approve --yes``, a user policy with server and skill rules, the approvals'
scope and age, and ``require_tamper_evident`` (so the trail's checkpoints are keyed; pins
are looked up, though a user's file may hold none), the audit trail and, unless a line
says ``--no-cache``, the disk cache.

* **gateway**: ``skillward gateway`` over stdio (a process, as a host starts it), driven
  by the SDK's client. ``read_skill`` of a skill its session loaded is served from what
  it verified and holds (no upstream read; still decided and audited);
  ``read_skill_file`` under ``--no-cache`` reads the upstream each call.
* **sdk double hop**: the SDK's client to a minimal pass-through proxy on the same SDK
  (``_proxies.py sdk``), whose tool call is one ``resources/read`` on the upstream. The
  file is read through a proxy (and upstream) of its own, as the gateway's file read has
  a process of its own: read through the SKILL.md proxy, it came straight after that
  proxy's own call in nearly every round, and so ran warm while the gateway ran cold.
* **fastmcp proxy**: FastMCP's ``create_proxy`` over the upstream (``_proxies.py fastmcp``;
  a test dependency here), read through with ``resources/read``.
* **embedded**: a ``SkillHost`` in this process, built as the command line builds it
  (``cli/_host.py``'s ``opened_host`` with its approver): ``activate`` decides (the policy,
  the pin, the store's verdict), fetches, verifies, audits and builds the block each call.
* **sdk read**: one ``resources/read`` of SKILL.md with the SDK's client, no checks.

Goals (the issue's): the gateway's ``read_skill`` within 1.3x the bare SDK double hop
and faster than FastMCP's proxy; an embedded load within 1.2x one SDK read; over
streamable HTTP (``serve --http``, a process), a small file within 3x a SKILL.md read.

Run: .venv/bin/python bench/bench_gateway.py [ROUNDS]   (default 200)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

from skillward.cli._context import audit_trail, policy_in_force
from skillward.cli._host import CommandLineApprover, ServerLogs, opened_host
from skillward.cli._parser import parse_args
from skillward.edge._dirs import server_log_dir
from skillward.edge.servers import HttpTransport, ServerSpec
from skillward.host.skillhost import HostConfig, SkillHost
from skillward.terminal.prompts import Terminal
from skillward.trust.approvals import Decision

sys.path.insert(0, str(Path(__file__).parent))

import _timing  # noqa: F401  (a user of its own: HOME and XDG in a temporary directory)

PY = sys.executable
HERE = Path(__file__).parent
LABEL = "bench"
SKILL = "bench-skill"
REF = f"{LABEL}:{SKILL}"
FILE = "references/guide.md"
SKILL_URI = f"skill://{SKILL}/SKILL.md"
FILE_URI = f"skill://{SKILL}/{FILE}"
GOAL_DOUBLE_HOP = 1.3
GOAL_EMBEDDED = 1.2
GOAL_HTTP = 3.0


# --- one user's directories, as the command line finds them ---------------------------------


def make_skill(root: Path) -> Path:
    """A skill of a realistic size: a 3.8 KB SKILL.md and a 1.9 KB file."""
    skill = root / "skills" / SKILL
    (skill / "references").mkdir(parents=True)
    steps = "".join(
        f"Step {i}: do the thing carefully and check the result before moving on.\n"
        for i in range(52)
    )
    head = f"---\nname: {SKILL}\ndescription: A skill of a realistic size, for benchmarks.\n---\n"
    (skill / "SKILL.md").write_text((head + "# Bench skill\n\n" + steps)[:3800] + "\n")
    guide = "".join(f"Guide line {i}: what to read next and why it matters.\n" for i in range(36))
    (skill / FILE).write_text(guide[:1900] + "\n")
    return root / "skills"


def user_env(home: Path) -> dict[str, str]:
    runtime = home / "run"
    runtime.mkdir(mode=0o700)
    return {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_RUNTIME_DIR": str(runtime),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
    }


def configure(home: Path, upstream: str) -> None:
    config = home / "config" / "skillward"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('[approvals]\nkey_store = "file"\n')
    (config / "policy.toml").write_text(
        f"""version = 1
contact = "the bench"

[servers]
allow = ["{PY} *", "http://127.0.0.1:*"]

[skills]
allow = ["skill://**"]
deny = ["skill://*/experimental/**"]

[approvals]
persist = "remember"
max_age_days = 90

[audit]
require_tamper_evident = true
"""
    )


def approve(env: dict[str, str], upstream: str) -> None:
    argv = [PY, "-m", "skillward", "approve", REF, "--yes", "--scope", "remember"]
    argv += ["--no-local", "--server", f"{LABEL}={upstream}"]
    done = subprocess.run(argv, check=False, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# --- the variants -----------------------------------------------------------------------------


Call = Callable[[], Awaitable[object]]


def _text(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    item = result.content[0]
    assert isinstance(item, types.TextContent)
    return item.text


async def _session(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    raise AssertionError("the skill is approved: nothing is asked")


async def connect(stack: AsyncExitStack, argv: list[str], env: dict[str, str]) -> Client:
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    return await stack.enter_async_context(Client(params, elicitation_callback=_session))


async def embedded_host(stack: AsyncExitStack, argv: list[str]) -> Any:
    """A host built as the command line builds it for ``argv`` (a ``load`` command)."""

    args = parse_args(argv)
    terminal = Terminal(out=sys.stderr, err=sys.stderr)
    policy = policy_in_force(terminal, args, headless=True)
    audit = audit_trail(policy)
    stack.callback(audit.close)
    approver = CommandLineApprover(terminal, False, audit, policy)
    logs = ServerLogs(terminal, server_log_dir())
    opened = opened_host(args, terminal, logs, policy=policy, audit=audit, approver=approver)
    host, failed = await stack.enter_async_context(opened)
    assert not failed, failed
    return host


async def rounds(variants: dict[str, Call], count: int) -> dict[str, list[float]]:
    """Each variant called once a round, the order rotated; every call's seconds."""
    names = list(variants)
    times: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(3):  # warm every path first
        for name in names:
            await variants[name]()
    for index in range(count):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            started = time.perf_counter()
            await variants[name]()
            times[name].append(time.perf_counter() - started)
    return times


def line(
    times: dict[str, list[float]], measured: str, baseline: str, goal: float | None, *, under: bool
) -> None:
    ratios = [m / b for m, b in zip(times[measured], times[baseline], strict=True)]
    ratio = statistics.median(ratios)
    mine = statistics.median(times[measured]) * 1000
    theirs = statistics.median(times[baseline]) * 1000
    if goal is None:
        verdict = "(no goal set)"
    else:
        holds = ratio < goal if under else ratio <= goal
        verdict = f"(goal {'<' if under else '<='} {goal:g}x: {'holds' if holds else 'MISSED'})"
    print(
        f"{measured}: {mine:.2f} ms; {baseline}: {theirs:.2f} ms; "
        f"median per-round ratio {ratio:.2f}x {verdict}"
    )


# --- the runs ---------------------------------------------------------------------------------


async def over_stdio(skills: Path, env: dict[str, str], count: int) -> None:
    upstream = [PY, "-m", "skillward", "serve", str(skills)]
    command = " ".join(upstream)
    gateway = [PY, "-m", "skillward", "gateway", "--no-local", "--server", f"{LABEL}={command}"]
    async with AsyncExitStack() as stack:
        through = await connect(stack, gateway, env)
        uncached = await connect(stack, [*gateway, "--no-cache"], env)
        proxies = [PY, str(HERE / "_proxies.py")]
        hop = await connect(stack, [*proxies, "sdk", "--", *upstream], env)
        file_hop = await connect(stack, [*proxies, "sdk", "--", *upstream], env)
        fast = await connect(stack, [*proxies, "fastmcp", "--", *upstream], env)
        direct = await connect(stack, upstream, env)
        load = ["load", REF, "--no-local", "--server", f"{LABEL}={command}"]
        host = await embedded_host(stack, load)
        bare_host = await embedded_host(stack, [*load, "--no-cache"])
        for client in (through, uncached):
            _text(await client.call_tool("read_skill", {"ref": REF}))

        async def gateway_read_skill() -> None:
            _text(await through.call_tool("read_skill", {"ref": REF}))

        async def gateway_read_file() -> None:
            _text(await uncached.call_tool("read_skill_file", {"ref": REF, "path": FILE}))

        async def double_hop_skill() -> None:
            _text(await hop.call_tool("read", {"uri": SKILL_URI}))

        async def double_hop_file() -> None:
            _text(await file_hop.call_tool("read", {"uri": FILE_URI}))

        async def fastmcp_skill() -> None:
            await fast.read_resource(SKILL_URI, cache_mode="bypass")

        async def embedded_load() -> None:
            await bare_host.activate(REF)

        async def embedded_cached() -> None:
            await host.activate(REF)

        async def embedded_read_skill() -> None:
            await host.read_skill_tool(REF)

        async def sdk_read() -> None:
            await direct.read_resource(SKILL_URI, cache_mode="bypass")

        times = await rounds(
            {
                "gateway read_skill (stdio)": gateway_read_skill,
                "gateway read_skill_file, --no-cache (stdio)": gateway_read_file,
                "sdk double hop, SKILL.md": double_hop_skill,
                "sdk double hop, the file": double_hop_file,
                "fastmcp proxy, SKILL.md": fastmcp_skill,
                "embedded load, --no-cache": embedded_load,
                "embedded load, disk cache": embedded_cached,
                "embedded read_skill (held)": embedded_read_skill,
                "sdk read, SKILL.md": sdk_read,
            },
            count,
        )
    print(f"over stdio, {count} rounds")
    held = "gateway read_skill (stdio)"
    line(times, held, "sdk double hop, SKILL.md", GOAL_DOUBLE_HOP, under=False)
    line(times, "gateway read_skill (stdio)", "fastmcp proxy, SKILL.md", 1.0, under=True)
    line(
        times,
        "gateway read_skill_file, --no-cache (stdio)",
        "sdk double hop, the file",
        GOAL_DOUBLE_HOP,
        under=False,
    )
    line(times, "embedded load, --no-cache", "sdk read, SKILL.md", GOAL_EMBEDDED, under=False)
    line(times, "embedded load, disk cache", "sdk read, SKILL.md", None, under=False)
    line(times, "embedded read_skill (held)", "sdk read, SKILL.md", None, under=False)
    line(times, "sdk double hop, SKILL.md", "sdk read, SKILL.md", None, under=False)
    line(times, "fastmcp proxy, SKILL.md", "sdk read, SKILL.md", None, under=False)


class _Yes:
    async def decide(self, request: Any) -> Any:
        return Decision.APPROVE


async def over_http(skills: Path, env: dict[str, str], count: int) -> None:
    """SkillHost over streamable HTTP to ``serve --http`` (a process), no cache: the small
    file read against the SKILL.md read (an activation)."""

    argv = [PY, "-m", "skillward", "serve", str(skills), "--http", "127.0.0.1:0"]
    process = await anyio.open_process(argv, env=env, stderr=subprocess.PIPE)
    try:
        assert process.stderr is not None
        said = b""
        with anyio.fail_after(60):
            while b"/mcp" not in said:
                said += await process.stderr.receive()
        url = next(w for w in said.decode().split() if w.startswith("http://"))
        spec = ServerSpec(label="web", transport=HttpTransport(url=url.rstrip(".,")))
        async with SkillHost(config=HostConfig(local_dirs=()), approver=_Yes()) as host:
            await host.connect(spec)
            await host.activate(SKILL)

            async def skill_md() -> None:
                await host.activate(SKILL)

            async def small_file() -> None:
                await host.read_file(SKILL, FILE)

            times = await rounds(
                {"a 1.9 KB file (HTTP)": small_file, "SKILL.md, 3.8 KB (HTTP)": skill_md}, count
            )
    finally:
        process.terminate()
        await process.wait()
    print(f"over streamable HTTP, {count} rounds")
    line(times, "a 1.9 KB file (HTTP)", "SKILL.md, 3.8 KB (HTTP)", GOAL_HTTP, under=False)


async def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        skills = make_skill(home)
        env = user_env(home)
        # This process is the embedded host: it reads the same user's directories.
        os.environ.update(env)
        upstream = " ".join([PY, "-m", "skillward", "serve", str(skills)])
        configure(home, upstream)
        approve(env, upstream)
        await over_stdio(skills, env, count)
        await over_http(skills, env, max(20, count // 4))


if __name__ == "__main__":
    anyio.run(main)
