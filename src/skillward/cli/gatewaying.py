"""Gatewaying: ``gateway``, the verified, gated skills for any MCP host through one MCP
server (stdio, or streamable HTTP with ``--http``).

The servers are connected as every other command connects them (``servers.json``,
``--config``, ``--server``, local skill directories, the policy, the disk cache, the
audit trail). Its stdout carries the protocol: people read stderr.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from skillward.cli._context import EXIT_OK, add_serving_command
from skillward.cli.serving import _host_port

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from skillward.cli._context import Commands
    from skillward.gateway._sessions import Sessions
    from skillward.gateway.server import Gateway
    from skillward.terminal.prompts import Terminal

__all__ = ["HOSTS", "add_commands", "gateway", "host_entry"]

_DEFAULT_REFRESH = 60.0
_DEFAULT_NAME = "skillward-gateway"
#: The MCP hosts ``--print-config`` writes an entry for.
HOSTS = ("claude-code", "claude-desktop", "cursor", "vscode")
#: What the model is told with the catalog of a gateway given no server (the host shows
#: a gateway that exits as broken, so it serves its local skills, if any, and says why).
NO_SERVERS = (
    "No MCP server is configured for this skillward gateway, so it serves only the user's "
    "local skill folders. The user can register one with `skillward servers add LABEL "
    "CMD_OR_URL` in a terminal; the gateway connects it when it starts again."
)


def add_commands(commands: Commands) -> None:
    gateway_ = add_serving_command(
        commands,
        "gateway",
        gateway,
        help="serve the verified, gated skills of your servers to any MCP host",
        description="Connect the servers given (servers.json, --config, --server) and the "
        "local skill directories, and serve their skills to an MCP host through three "
        "tools: list_skills, read_skill and read_skill_file. Approval is asked of the "
        "person through the host (MCP elicitation). Over stdio by default.",
    )
    gateway_.add_argument(
        "--http",
        metavar="HOST:PORT",
        type=_loopback_host_port,
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio, HOST one of "
        "127.0.0.1, localhost or ::1 (a bearer token is always required)",
    )
    gateway_.add_argument(
        "--token-file",
        metavar="FILE",
        type=Path,
        help="with --http: the file holding the bearer token (default: one is made, "
        "mode 0600, in the user state directory, and its path printed)",
    )
    gateway_.add_argument(
        "--refresh",
        metavar="SECONDS",
        type=_seconds,
        default=_DEFAULT_REFRESH,
        help="how often the servers are listed again, and dead ones reconnected (default 60)",
    )
    gateway_.add_argument(
        "--approval-page",
        action="store_true",
        help="ask hosts that support URL-mode elicitation on a one-time loopback page that "
        "shows the whole SKILL.md and what changed since it was approved",
    )
    gateway_.add_argument("--name", default=_DEFAULT_NAME, help="serverInfo.name to report")
    gateway_.add_argument(
        "--print-config",
        metavar="HOST",
        choices=HOSTS,
        help="print the entry that adds this gateway, with the options given, to HOST's "
        f"configuration ({', '.join(HOSTS)}), and exit",
    )


def _loopback_host_port(text: str) -> tuple[str, int]:
    from skillward.edge._listen import LOOPBACK_ADDRESSES

    host, port = _host_port(text)
    if host.lower() not in LOOPBACK_ADDRESSES:
        # The token travels in clear text: it stays on this machine.
        raise argparse.ArgumentTypeError(
            f"the gateway listens on loopback only (127.0.0.1, localhost or ::1), not {host!r}"
        )
    return host, port


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 1 <= value <= 86400:
        raise argparse.ArgumentTypeError(f"expected seconds between 1 and 86400, not {text!r}")
    return value


def gateway(args: argparse.Namespace) -> int:
    import anyio

    from skillward.cli._interrupt import until_interrupted
    from skillward.core.errors import UsageError
    from skillward.terminal.prompts import Terminal

    if args.token_file is not None and args.http is None:
        raise UsageError("--token-file needs --http")
    if args.print_config is not None:
        if args.http is not None:
            raise UsageError(
                "--print-config writes the entry that starts the gateway over stdio",
                hint="For --http, docs/gateway.md shows each host's entry.",
            )
        print(host_entry(args.print_config, _gateway_argv(args)))
        return EXIT_OK
    # Nothing but the protocol on stdout: notes and errors go to stderr.
    terminal = Terminal(out=sys.stderr, err=sys.stderr, json_errors=args.json, command_line=True)
    try:
        interrupted = anyio.run(until_interrupted, functools.partial(_serve, args, terminal))
    except KeyboardInterrupt:  # before the event loop took Ctrl-C
        interrupted = True
    if interrupted:
        print("skillward gateway: stopped", file=sys.stderr)
    return EXIT_OK


# --- --print-config ------------------------------------------------------------------------


def _this_skillward() -> list[str]:
    """The command that starts this skillward, wherever a host starts it (another working
    directory, a PATH of its own): the absolute path of the script run, or
    ``python -m skillward`` with this interpreter."""
    import os
    import shutil

    run = sys.argv[0]
    if Path(run).name == "__main__.py":  # python -m skillward
        return [sys.executable, "-m", "skillward"]
    if os.sep in run or (os.altsep and os.altsep in run):
        return [os.path.abspath(run)]  # never resolved: a venv's link is the venv
    found = shutil.which(run) or shutil.which("skillward")
    return [os.path.abspath(found) if found else "skillward"]


def _gateway_argv(args: argparse.Namespace) -> list[str]:
    """``gateway`` and the options it was given, paths made absolute."""
    import os

    from skillward.cli._parser import COMMON_OPTIONS
    from skillward.edge._local import LocalSkillDir

    def word(value: object) -> str:
        if isinstance(value, LocalSkillDir):
            return f"{value.label}={os.path.abspath(value.path)}"
        if isinstance(value, float):
            return f"{value:g}"
        return os.path.abspath(value) if isinstance(value, Path) else str(value)

    argv = ["gateway"]
    for option in COMMON_OPTIONS:
        value = getattr(args, option.dest)
        if option.kind == "flag":
            argv += [option.flag] if value else []
        elif option.kind == "value":
            argv += [option.flag, word(value)] if value is not None else []
        else:
            argv += [part for item in value for part in (option.flag, word(item))]
    if args.refresh != _DEFAULT_REFRESH:
        argv += ["--refresh", word(args.refresh)]
    if args.approval_page:
        argv.append("--approval-page")
    if args.name != _DEFAULT_NAME:
        argv += ["--name", args.name]
    return argv


def host_entry(host: str, argv: list[str]) -> str:
    """What adds the gateway started with ``argv`` to ``host``: its configuration's JSON
    entry, or the ``claude mcp add`` command line for Claude Code."""
    import json
    import shlex

    command, *args = [*_this_skillward(), *argv]
    if host == "claude-code":
        return shlex.join(["claude", "mcp", "add", "skillward", "--", command, *args])
    if host == "vscode":
        entry = {"servers": {"skillward": {"type": "stdio", "command": command, "args": args}}}
    else:
        entry = {"mcpServers": {"skillward": {"command": command, "args": args}}}
    return json.dumps(entry, indent=2)


def _token(args: argparse.Namespace) -> tuple[str, Path] | None:
    """With --http, the bearer token and its file; read (or made) before any server
    starts, so that a token file that cannot be used is said at once."""
    if args.http is None:
        return None
    from skillward.gateway._token import load_or_create_token

    return load_or_create_token(args.token_file)


async def _serve(args: argparse.Namespace, terminal: Terminal) -> None:
    import anyio

    from skillward._version import __version__
    from skillward.cli._context import audit_trail, policy_in_force, store
    from skillward.cli._host import ServerLogs, adding_servers, opened_host
    from skillward.edge._dirs import server_log_dir

    audit = audit_trail()
    # The person is asked through the MCP client; one that cannot ask gets no content.
    policy = policy_in_force(terminal, headless=False)
    kept = store(terminal)
    token = _token(args)
    logs = ServerLogs(terminal, server_log_dir())
    async with opened_host(args, terminal, logs, policy=policy, audit=audit) as (host, failed):
        # Imported only now: connecting imported the SDK while the first server started
        # (as in every command); importing the gateway's server first would add the whole
        # of the SDK's import to start-up.
        from skillward.gateway._page import ApprovalPages
        from skillward.gateway._sessions import Sessions
        from skillward.gateway._upstreams import follow_upstreams
        from skillward.gateway.server import Gateway, serve_stdio

        sessions = Sessions(
            host, store=kept, rules=policy.approval_rules(kept), notify=terminal.note
        )
        pages = ApprovalPages() if args.approval_page else None
        notes = []
        if not host.servers() and not failed:
            terminal.note(
                "skillward gateway: no MCP server is configured, so only local skills are "
                f"served. {adding_servers(args)} Then start the gateway again."
            )
            notes.append(NO_SERVERS)
        served = Gateway(
            host,
            sessions=sessions,
            name=args.name,
            version=__version__,
            pages=pages,
            notes=notes,
        )
        count = len(host.catalog())
        async with anyio.create_task_group() as group:
            await _listen_for_terminals(group, served, sessions, terminal, args.name)
            if pages is not None:
                pages_up = anyio.Event()

                def pages_ready(url: str) -> None:
                    terminal.note(f"skillward gateway: approval pages at {url}/approve/...")
                    pages_up.set()

                group.start_soon(functools.partial(pages.run, on_ready=pages_ready))
                with anyio.fail_after(30):
                    await pages_up.wait()
            group.start_soon(
                follow_upstreams, served, [spec for spec, _ in failed.values()], args.refresh
            )
            if token is None:  # no --http
                terminal.note(f"skillward gateway: {count} skills, over stdio")
                await serve_stdio(served.server, host.limits)
            else:
                from skillward.gateway._http import serve_http

                secret, token_path = token
                terminal.note(f"skillward gateway: the bearer token is in {token_path}")
                address, port = args.http

                def ready(url: str) -> None:
                    terminal.note(f"skillward gateway: {count} skills at {url}")

                await serve_http(
                    served.server, host=address, port=port, token=secret, on_ready=ready
                )
            group.cancel_scope.cancel()


async def _listen_for_terminals(
    group: TaskGroup, served: Gateway, sessions: Sessions, terminal: Terminal, name: str
) -> None:
    """Open the approval socket, where ``skillward approve`` in any terminal of this user
    answers the questions the gateway could not put through its client; when it cannot
    be opened, say why (those questions then name the command to run with the gateway's
    server options)."""
    from skillward._version import __version__
    from skillward.cli._gateways import why_not
    from skillward.core.errors import UsageError
    from skillward.edge._dirs import runtime_dir
    from skillward.gateway._answering import ApprovalSocket

    answering = ApprovalSocket(
        served.parked,
        sessions,
        audit=served.host.audit,
        name=name,
        version=__version__,
        limits=served.host.limits,
    )
    try:
        served.approval_socket = await group.start(answering.run, runtime_dir())
    except (OSError, UsageError) as why:
        terminal.note(
            f"skillward gateway: skillward approve cannot reach this gateway: {why_not(why)}"
        )
