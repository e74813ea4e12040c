"""The ``skillward`` command.

Exit codes: 0 success, 2 usage (or a reference that does not resolve),
3 approval required or denied, 4 verification failed, 5 policy denied,
6 server or transport error.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from skillward._dirs import audit_file, default_servers_file, server_log_dir
from skillward._diskcache import DiskCache
from skillward._local import LocalSkillDir, default_local_dirs
from skillward._policyfile import policy_keys, policy_schema
from skillward._policyload import load_policy, read_policy_file
from skillward._serverlog import escaped_lines, log_path, read_log
from skillward._store import FileApprovalStore
from skillward._version import __version__
from skillward.approvals import (
    ActivationRequest,
    Answer,
    ApprovalBook,
    ApprovalRecord,
    ApproveOnce,
    Decision,
    Grants,
    Scope,
    content_hash,
    describe_scope,
)
from skillward.audit import AuditTrail, parse_duration, read_events
from skillward.cache import ContentCache, NoCache
from skillward.config import Limits
from skillward.errors import (
    AmbiguousName,
    ApprovalDenied,
    ConfigError,
    OriginError,
    PolicyDenied,
    RememberUnavailable,
    ServerRejected,
    SkillNotFound,
    SkillwardError,
    TransportError,
    UnknownServer,
    UsageError,
    printable,
)
from skillward.host import HostConfig, SkillHost
from skillward.origins import SkillKey
from skillward.policy import EffectivePolicy
from skillward.prompts import OriginSummary, Terminal, TerminalApprover, error_json, to_devnull
from skillward.registry import parse_reference
from skillward.servers import (
    ServersConfig,
    ServerSpec,
    StdioTransport,
    load_mcp_servers,
    normalise_label,
    parse_server_option,
)

__all__ = ["EXIT_CODES", "main"]

EXIT_OK = 0
#: Documented in the README and docs/cli.md.
EXIT_CODES = {
    0: "success",
    1: "policy check found problems",
    2: "usage error, or a reference that does not resolve",
    3: "approval required or denied",
    4: "verification failed",
    5: "policy denied",
    6: "server or transport error",
}

DEMO_SKILL = "refunds"
DEMO_GOOD_FILE = "policy/limits.json"
DEMO_TAMPERED_FILE = "templates/email.md"
DEMO_TAMPERED_URI = "skill://acme/billing/refunds/" + DEMO_TAMPERED_FILE


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(
            f"expected HOST:PORT, for example 127.0.0.1:8765, not {text!r}"
        )
    return host.strip("[]"), int(port)


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number, not {text!r}")
    return int(text)


def _skills_dir(text: str) -> LocalSkillDir:
    label, sep, path = text.partition("=")
    if not sep or not path:
        raise argparse.ArgumentTypeError(f"expected LABEL=PATH, not {text!r}")
    try:
        return LocalSkillDir(normalise_label(label), Path(path))
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except UsageError as error:
        raise argparse.ArgumentTypeError(error.message) from None


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"expected seconds between 0 and 3600, not {text!r}")
    return value


#: Options every command takes, before or after the command name. Given after it,
#: they land under ``sub_<dest>`` and are merged by :func:`_merge_common`.
_LISTS = ("server", "skills_dir")
_FLAGS = ("no_local", "no_cache", "json", "debug")
_FLAG_HELP = {
    "--no-local": "do not discover local skills",
    "--no-cache": "neither read nor write the disk cache",
    "--json": "machine-readable output (errors too, on stderr)",
    "--debug": "show tracebacks and the SDK's log on errors",
}
_VALUES = ("config", "timeout")


def _common_options(parser: argparse.ArgumentParser, prefix: str) -> None:
    parser.add_argument(
        "--config",
        dest=prefix + "config",
        type=Path,
        metavar="FILE",
        help=f"mcpServers JSON file (default: {default_servers_file()}, if it exists)",
    )
    parser.add_argument(
        "--server",
        dest=prefix + "server",
        action="append",
        metavar="LABEL=URL_OR_COMMAND",
        help="connect a server under LABEL (repeatable); a URL for streamable HTTP, "
        "otherwise a command line for stdio",
    )
    parser.add_argument(
        "--skills-dir",
        dest=prefix + "skills_dir",
        action="append",
        type=_skills_dir,
        metavar="LABEL=PATH",
        help="a local skills directory (repeatable); the default is ./.agents/skills "
        "as 'project' and ~/.agents/skills as 'user'",
    )
    for flag, help_text in _FLAG_HELP.items():
        dest = prefix + flag.removeprefix("--").replace("-", "_")
        parser.add_argument(flag, dest=dest, action="store_true", default=None, help=help_text)
    parser.add_argument(
        "--timeout",
        dest=prefix + "timeout",
        type=_timeout,
        metavar="SECONDS",
        help="deadline for each operation with a server, the handshake included (default 60)",
    )


def _merge_common(args: argparse.Namespace) -> argparse.Namespace:
    """Fold options given after the command into those given before it."""
    for name in _LISTS:
        merged = (getattr(args, name, None) or []) + (getattr(args, "sub_" + name, None) or [])
        setattr(args, name, merged)
    for name in _FLAGS:
        setattr(args, name, bool(getattr(args, name, None) or getattr(args, "sub_" + name, None)))
    for name in _VALUES:
        later = getattr(args, "sub_" + name, None)
        setattr(args, name, later if later is not None else getattr(args, name, None))
    return args


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skillward",
        description="Security-focused host-side loader for skills served over MCP (SEP-2640).",
        epilog="Exit codes: "
        + "; ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES.items()),
    )
    parser.add_argument("--version", action="version", version=f"skillward {__version__}")
    _common_options(parser, "")
    common = argparse.ArgumentParser(add_help=False)
    _common_options(common, "sub_")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    commands.add_parser(
        "list", parents=[common], help="the catalog across origins, with collisions"
    )
    show = commands.add_parser(
        "show", parents=[common], help="a skill's entry: frontmatter and files (fetches nothing)"
    )
    show.add_argument("ref", metavar="REF", help="NAME, LABEL:NAME, LABEL:PATH or LABEL:URI")
    load = commands.add_parser(
        "load",
        parents=[common],
        help="verify and print a skill's activation exactly as the model would get it",
    )
    load.add_argument("ref", metavar="REF")
    load.add_argument(
        "--approve-once",
        action="store_true",
        help="approve loading this one skill now, without a prompt",
    )
    read = commands.add_parser(
        "read", parents=[common], help="a supporting file, verified against the skill's entry"
    )
    read.add_argument("ref", metavar="REF")
    read.add_argument("path", metavar="PATH", help="path relative to the skill root")
    approve = commands.add_parser(
        "approve",
        parents=[common],
        help="review a skill and approve it (remembered by default), bound to its content",
    )
    approve.add_argument("ref", metavar="REF")
    approve.add_argument(
        "--scope",
        choices=[scope.value for scope in Scope],
        default=Scope.REMEMBER.value,
        help="with --yes: how long the approval lasts (default: remember)",
    )
    approve.add_argument(
        "--yes",
        action="store_true",
        help="approve without a prompt (you named the skill: that is the consent)",
    )
    approve.add_argument(
        "--grant-tools",
        action="store_true",
        help="grant the tools its allowed-tools requests too, kept with this approval",
    )
    approvals = commands.add_parser("approvals", help="remembered approvals: list, revoke, reset")
    approvals_commands = approvals.add_subparsers(
        dest="approvals_command", metavar="ACTION", required=True
    )
    approvals_commands.add_parser(
        "list", parents=[common], help="every remembered approval, revoked ones included"
    )
    revoke = approvals_commands.add_parser(
        "revoke", parents=[common], help="revoke a remembered approval (it is asked again)"
    )
    revoke.add_argument("ref", metavar="REF", help="LABEL:NAME, LABEL:PATH, LABEL:URI or NAME")
    approvals_commands.add_parser(
        "reset",
        parents=[common],
        help="forget every remembered approval and use a new key from now on",
    )
    audit = commands.add_parser(
        "audit",
        parents=[common],
        help="the audit trail: every approval, denial, revocation, grant and gate decision",
    )
    audit.add_argument(
        "--since",
        type=_duration,
        metavar="DURATION",
        help="only events this recent, for example 30m, 12h, 7d or 1h30m",
    )
    _policy_parsers(commands, common)
    commands.add_parser(
        "demo",
        help="start the bundled example server, load a skill, and show a tampered read refused",
    )
    logs = commands.add_parser(
        "logs",
        help="what a stdio server wrote to its stderr, escaped",
        description="Print the stderr log of the stdio server labelled LABEL. Every escape "
        "and control character is shown as text (\\x1b), never sent to the terminal.",
    )
    logs.add_argument("label", metavar="LABEL")
    logs.add_argument("--lines", type=_positive_int, metavar="N", help="only the last N lines")
    cache = commands.add_parser("cache", help="the disk cache of verified server files")
    cache_actions = cache.add_subparsers(dest="cache_action", metavar="ACTION", required=True)
    cache_list = cache_actions.add_parser("list", help="files and bytes kept per server label")
    cache_list.add_argument(
        "--json", dest="sub_json", action="store_true", default=None, help="machine-readable output"
    )
    purge = cache_actions.add_parser("purge", help="remove one label's cached files, or all")
    purge.add_argument("label", nargs="?", metavar="LABEL", help="a server label (default: all)")

    serve = commands.add_parser(
        "serve",
        help="serve a directory of skills as a SEP-2640 MCP server",
        description="Serve every skill (a folder holding SKILL.md) under DIR over stdio, "
        "or over streamable HTTP with --http.",
    )
    serve.add_argument(
        "directory",
        metavar="DIR",
        type=Path,
        nargs="?",
        help="skills directory (default: the bundled example skills)",
    )
    serve.add_argument(
        "--http",
        metavar="HOST:PORT",
        type=_host_port,
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )
    serve.add_argument(
        "--page-size",
        type=int,
        default=50,
        metavar="N",
        help="entries per page for paginated methods (default 50)",
    )
    serve.add_argument(
        "--unlisted",
        action="append",
        default=[],
        metavar="SKILL_PATH",
        help="serve this skill but leave it out of skills/list (repeatable)",
    )
    serve.add_argument("--name", default="skillward-serve", help="serverInfo.name to report")
    serve.add_argument(
        "--tamper",
        action="append",
        default=[],
        metavar="URI",
        help="demonstration only: flip one byte when serving URI (repeatable)",
    )
    return parser


def _policy_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    """``pin`` and ``policy``: the commands administrators use."""
    pin = commands.add_parser(
        "pin",
        parents=[common],
        help="print the [[pins]] block that pre-approves a skill's current content",
    )
    pin.add_argument("ref", metavar="REF")
    policy = commands.add_parser("policy", help="administrator policy: show, check, schema")
    policy_actions = policy.add_subparsers(dest="policy_action", metavar="ACTION", required=True)
    policy_show = policy_actions.add_parser(
        "show", help="the policy in force, each value with the file it came from"
    )
    policy_show.add_argument(
        "--json", dest="sub_json", action="store_true", default=None, help="machine-readable output"
    )
    policy_check = policy_actions.add_parser(
        "check", help="check policy files before deploying them (exit 1 on any problem)"
    )
    policy_check.add_argument("files", metavar="FILE", nargs="+", type=Path)
    policy_actions.add_parser("schema", help="the JSON Schema of a policy file")


# --- serve -------------------------------------------------------------------------------


def _serve(args: argparse.Namespace) -> int:
    from skillward import server  # noqa: PLC0415  (imports mcp; only this command needs it)

    directory = args.directory or server.example_skills_dir()
    if not directory.is_dir():
        raise UsageError(f"{directory} is not a directory")
    catalog = server.SkillCatalog.from_directory(directory, unlisted=args.unlisted)
    for problem in catalog.problems:
        print(f"skillward serve: {problem}", file=sys.stderr)
    if not catalog.skills:
        print(f"skillward serve: no servable skills under {directory}", file=sys.stderr)
    mcp_server = server.build_server(
        catalog, name=args.name, page_size=max(1, args.page_size), tamper=args.tamper
    )
    # The catalog is built and never changes: keep the garbage collector from rescanning
    # its objects on every full collection while serving (a large part of a page's cost).
    # This process only serves, so freezing all it holds is the command's choice to make.
    gc.collect()
    gc.freeze()
    try:
        if args.http is None:

            async def run_stdio() -> None:
                # Said from inside the event loop, once Ctrl-C is handled by it; stdout
                # carries the protocol, people read stderr.
                print(
                    f"skillward serve: {catalog.summary()} from {directory} over stdio",
                    file=sys.stderr,
                    flush=True,
                )
                await server.serve_stdio(mcp_server)

            anyio.run(run_stdio)
            return EXIT_OK
        host, port = args.http
        server.quiet_transport_logs()

        async def run_http() -> None:
            async with server.serve_http(mcp_server, host=host, port=port) as url:
                print(
                    f"skillward serve: {catalog.summary()} at {url}",
                    file=sys.stderr,
                    flush=True,
                )
                await anyio.sleep_forever()

        anyio.run(run_http)
    except KeyboardInterrupt:
        print("skillward serve: stopped", file=sys.stderr)
    return EXIT_OK


# --- host commands -------------------------------------------------------------------------


def _store(terminal: Terminal) -> FileApprovalStore:
    return FileApprovalStore(report=terminal.error)


def _audit() -> AuditTrail:
    """The command line keeps the audit trail in the user state directory."""
    return AuditTrail(audit_file())


class _CommandLineApprover:
    """Approves only what --approve-once names (granting nothing more); otherwise uses
    remembered approvals, then asks at a terminal, or refuses when there is none."""

    def __init__(
        self, terminal: Terminal, approve_once: bool, audit: AuditTrail, policy: EffectivePolicy
    ) -> None:
        self.prompt = TerminalApprover(terminal)
        store = _store(terminal)
        rules = policy.approval_rules(store)
        self.book = ApprovalBook(
            self.prompt, store=store, notify=terminal.note, audit=audit, rules=rules
        )
        self.approve_once = approve_once
        self.target: ApproveOnce | None = None

    async def decide(self, request: ActivationRequest) -> Decision:
        return (await self.consent(request)).decision

    async def consent(self, request: ActivationRequest) -> Answer:
        if self.target is not None:
            return Answer(await self.target.decide(request))
        return await self.book.consent(request)

    async def held(self, request: ActivationRequest) -> Grants | None:
        return await self.book.held(request)

    async def add_grant(self, request: ActivationRequest, grants: Grants) -> bool:
        return await self.book.add_grant(request, grants)

    async def revoke(self, key: SkillKey, *, reason: str) -> None:
        await self.book.revoke(key, reason=reason)


def _servers_file(args: argparse.Namespace, terminal: Terminal) -> ServersConfig:
    """The servers of ``--config``, else of the default file if there is one.

    An explicit file that cannot be read stops the command. The default file only gets
    an error line, so one broken file does not break every command; bad entries in
    either are reported with the file's name and skipped.
    """
    if args.config is not None:
        loaded = load_mcp_servers(args.config)
    elif default_servers_file().is_file():
        try:
            loaded = load_mcp_servers(default_servers_file())
        except ConfigError as error:
            terminal.error(
                ConfigError(
                    error.message + "; its servers are not connected",
                    hint="Fix the file, or name another with --config FILE.",
                )
            )
            return ServersConfig({})
    else:
        return ServersConfig({})
    for problem in loaded.problems:
        terminal.error(problem)
    return loaded


def _server_specs(args: argparse.Namespace, terminal: Terminal) -> list[ServerSpec]:
    specs = dict(_servers_file(args, terminal).servers)
    given: set[str] = set()
    for option in args.server:
        spec = parse_server_option(option)
        if spec.label in given:
            raise ConfigError(f"server label {spec.label!r} is given twice")
        if spec.label in specs:
            terminal.note(f"--server {spec.label} replaces the entry of that label in the file")
        given.add(spec.label)
        specs[spec.label] = spec
    return list(specs.values())


#: Servers that failed to connect, and why: `list` shows them, other commands blame them.
_Failures = dict[str, tuple[ServerSpec, SkillwardError]]


@dataclass
class _ServerLogs:
    """The stderr logs of this run's stdio servers; a tail is shown when a server fails."""

    terminal: Terminal
    directory: Path
    labels: set[str] = field(default_factory=set)
    shown: set[str] = field(default_factory=set)

    def watch(self, specs: Sequence[ServerSpec]) -> None:
        for spec in specs:
            transport = spec.transport
            if isinstance(transport, StdioTransport) and transport.stderr == "log":
                self.labels.add(spec.label)

    def show(self, label: str | None) -> None:
        """The last lines of ``label``'s log, escaped, once per run."""
        if label is None or label not in self.labels or label in self.shown:
            return
        self.shown.add(label)
        data = read_log(self.directory, label, max_bytes=_TAIL_BYTES) or b""
        lines = escaped_lines(data, limit=500)[-_TAIL_LINES:]
        self.terminal.server_log(label, str(log_path(self.directory, label)), lines)

    def show_all(self) -> None:
        for label in sorted(self.labels):
            self.show(label)


#: How much of a failed server's log the command line shows.
_TAIL_LINES = 10
_TAIL_BYTES = 16 * 1024


def _server_died(error: SkillwardError) -> bool:
    """An error that means a server stopped answering (not one it answered with)."""
    return isinstance(error, TransportError) and not isinstance(error, ServerRejected)


def _local_dirs(args: argparse.Namespace) -> tuple[LocalSkillDir, ...]:
    if args.no_local:
        return ()
    return tuple(args.skills_dir) or default_local_dirs()


def _limits(args: argparse.Namespace) -> Limits:
    timeout = getattr(args, "timeout", None)
    if timeout is None:
        return Limits()
    default = Limits()
    return Limits(
        operation_timeout=timeout,
        request_timeout=min(default.request_timeout, timeout),
        # Closing bounded too: a server that stays when its stdin closes is not waited for
        # longer than this before SIGTERM (one that missed a deadline gets SIGTERM at once).
        exit_timeout=min(default.exit_timeout, timeout),
    )


async def _with_host(
    args: argparse.Namespace,
    terminal: Terminal,
    logs: _ServerLogs,
    body: Callable[[SkillHost, _CommandLineApprover, _Failures], Awaitable[int]],
) -> int:
    audit = _audit()
    policy = _load_policy(terminal, args)
    approver = _CommandLineApprover(terminal, getattr(args, "approve_once", False), audit, policy)
    config = HostConfig(limits=_limits(args), local_dirs=_local_dirs(args))
    # The host applies the policy's limits to both, and drops a cache the policy turns off.
    cache: ContentCache = NoCache() if args.no_cache else DiskCache(limits=config.limits)
    specs = _server_specs(args, terminal)
    logs.watch(specs)
    failed: _Failures = {}
    async with SkillHost(
        config=config, approver=approver, cache=cache, audit=audit, policy=policy
    ) as host:
        for note in host.notes:
            terminal.note(note)
        for spec in specs:
            try:
                await host.connect(spec)
            except SkillwardError as error:
                terminal.error(error)
                failed[spec.label] = (spec, error)
                if isinstance(error, TransportError | OriginError):
                    logs.show(spec.label)  # it did not start, died, or spoke nonsense
        status = max((error.exit_code for _, error in failed.values()), default=EXIT_OK)
        try:
            result = await body(host, approver, failed)
        except (UnknownServer, SkillNotFound) as error:
            blamed = _failed_servers_named(getattr(args, "ref", None), failed)
            if not blamed:
                raise
            # The reference may name what a failed server serves: that failure is the cause.
            if args.json:
                terminal.json_error({**error_json(error), "failed_to_connect": blamed})
                return status
            labels = ", ".join(repr(label) for label in blamed)
            terminal.note(
                f"({printable(str(error))}; {labels} failed to connect, so its skills are unknown)"
            )
            return status
    return result or status


def _failed_servers_named(reference: str | None, failed: Collection[str]) -> list[str]:
    """The failed servers ``reference`` may name a skill of: all of them for a bare name,
    the one labelled for ``LABEL:...``, none when it names a server that connected."""
    if reference is None or not failed:
        return []
    try:
        label = parse_reference(reference).label
    except UsageError:
        return []
    if label is None:
        return list(failed)
    return [label] if label in failed else []


def _origin_summaries(
    host: SkillHost, failed: _Failures
) -> tuple[list[OriginSummary], list[dict[str, object]]]:
    """Every origin ``list`` shows (connected servers, failed ones, local directories),
    and every server as ``list --json`` shows it."""
    summaries: list[OriginSummary] = []
    servers: list[dict[str, object]] = []

    def server(
        summary: OriginSummary, state: str, skills: bool | None, error: SkillwardError | None
    ) -> None:
        summaries.append(summary)
        servers.append(
            {
                "label": summary.label,
                "target": summary.target,
                "state": state,
                "skills_extension": skills,
                "problem": summary.problem,
                "error": error_json(error) if error is not None else None,
                "reported_name_unverified": summary.reported_name,
            }
        )

    for status in host.servers():
        problem = None
        if status.error is not None:
            problem = f"disconnected: {status.error.message}"
        elif not status.skills:
            problem = f"offers no skills: {status.note}"
        summary = OriginSummary("mcp", status.label, status.target, status.reported_name, problem)
        server(summary, status.state, status.skills, status.error)
    for label, (spec, error) in failed.items():
        problem = f"failed to connect: {error}"
        server(OriginSummary("mcp", label, spec.describe(), None, problem), "failed", None, error)
    for origin in host.registry.origins():
        if not origin.is_mcp:
            summaries.append(OriginSummary("local", origin.label, origin.detail or ""))
    return summaries, servers


async def _list(
    host: SkillHost,
    _: _CommandLineApprover,
    args: argparse.Namespace,
    terminal: Terminal,
    failed: _Failures,
) -> int:
    items = host.catalog()
    # catalog() lists the listed records in registry order, so the two line up.
    records = [record for record in host.registry.records() if record.listed]
    qualified = [host.registry.qualified_ref(record) for record in records]
    origins, servers = _origin_summaries(host, failed)
    if not args.json:
        terminal.catalog(items, qualified, host.collisions(), host.declined(), origins)
        return EXIT_OK
    terminal.json(
        {
            "skills": [
                {
                    "ref": item.ref,
                    "qualified": full,
                    "name": item.name,
                    "description": item.description,
                    "origin": {
                        "kind": item.origin.kind,
                        "label": item.origin.label,
                        "reported_name_unverified": item.origin.detail
                        if item.origin.is_mcp
                        else None,
                    },
                }
                for item, full in zip(items, qualified, strict=True)
            ],
            "servers": servers,
            "collisions": [
                {
                    "kind": c.kind,
                    "subject": c.subject,
                    "members": list(c.members),
                    "message": c.message,
                }
                for c in host.collisions()
            ],
            "declined": [
                {"origin": d.origin.label, "error": str(d.error)} for d in host.declined()
            ],
        }
    )
    return EXIT_OK


async def _show(
    host: SkillHost,
    _: _CommandLineApprover,
    args: argparse.Namespace,
    terminal: Terminal,
    _failed: _Failures,
) -> int:
    record = await host.lookup(args.ref)
    qualified = host.registry.qualified_ref(record)
    if not args.json:
        terminal.entry(record, qualified)
        return EXIT_OK
    entry = record.entry
    terminal.json(
        {
            "qualified": qualified,
            "name": record.name,
            "description": record.description,
            "origin": {
                "kind": record.origin.kind,
                "label": record.origin.label,
                "reported_name_unverified": record.origin.detail if record.origin.is_mcp else None,
            },
            "listed": record.listed,
            "uri": entry.uri if entry else None,
            "directory": record.directory,
            "frontmatter": entry.frontmatter.as_dict() if entry else None,
            "resources": (
                "dynamic"
                if entry and entry.is_dynamic
                else [
                    {"uri": item.uri, "size": item.size, "digest": item.digest}
                    for item in (entry.manifest.values() if entry else ())
                ]
            ),
        }
    )
    return EXIT_OK


async def _load(
    host: SkillHost,
    approver: _CommandLineApprover,
    args: argparse.Namespace,
    terminal: Terminal,
    _failed: _Failures,
) -> int:
    record = await host.lookup(args.ref)
    if approver.approve_once:
        approver.target = ApproveOnce({record.key})
    activation = await host.activate(args.ref)
    if args.json:
        terminal.json(
            {
                **activation.block.to_json(),
                "requested_tools": list(activation.requested_tools),
                "granted_tools": list(activation.granted_tools),
            }
        )
        return EXIT_OK
    terminal.block(activation.block, as_json=False)
    if activation.requested_tools:
        granted = ", ".join(activation.granted_tools) or "none"
        terminal.note(
            f"requested tools: {', '.join(activation.requested_tools)}; granted: {granted}"
        )
    return EXIT_OK


async def _read(
    host: SkillHost,
    _: _CommandLineApprover,
    args: argparse.Namespace,
    terminal: Terminal,
    _failed: _Failures,
) -> int:
    block = await host.read_file(args.ref, args.path)
    terminal.block(block, as_json=args.json)
    return EXIT_OK


def _logs(args: argparse.Namespace, terminal: Terminal) -> int:
    label = normalise_label(args.label)
    directory = server_log_dir()
    data = read_log(directory, label, max_bytes=Limits().max_server_log_bytes)
    if data is None:
        raise UsageError(
            f"no stderr log for server {label!r} in {directory}",
            hint="Logs are kept for stdio servers that skillward has started.",
        )
    lines = escaped_lines(data, limit=10_000)
    if args.lines is not None:
        lines = lines[-args.lines :]
    if lines:
        terminal.text("\n".join(lines))
    return EXIT_OK


# --- cache -------------------------------------------------------------------------------


def _cache(args: argparse.Namespace, terminal: Terminal) -> int:
    cache = DiskCache()
    if args.cache_action == "purge":
        files, size = cache.purge(args.label)
        whose = f"of {args.label}" if args.label else "of every server"
        terminal.note(f"removed {files} cached files ({size} bytes) {whose}")
        return EXIT_OK
    usage = cache.usage()
    if args.json:
        terminal.json(
            {
                "root": str(cache.root),
                "labels": [
                    {"label": u.label, "identity": u.identity, "files": u.files, "bytes": u.size}
                    for u in usage
                ],
            }
        )
        return EXIT_OK
    terminal.note(f"disk cache: {cache.root}")
    for u in usage:
        identity = printable(u.identity) if u.identity is not None else "(no index)"
        terminal.text(f"{u.label}  {u.files} files  {u.size} bytes  {identity}")
    if not usage:
        terminal.note("(empty)")
    return EXIT_OK


async def _approve(
    host: SkillHost,
    approver: _CommandLineApprover,
    args: argparse.Namespace,
    terminal: Terminal,
    _failed: _Failures,
) -> int:
    request = await host.approval_request(args.ref)
    book = approver.book
    qualified = host.registry.qualified_ref(request.record)
    scope = Scope(args.scope)
    grants = Grants()
    if args.grant_tools:
        grants = _tool_grant(request, terminal)
    if args.yes:
        book.check_scope(scope, request.key)
        if scope is Scope.REMEMBER:
            why = await book.remember_unavailable(request)
            if why is not None:
                raise RememberUnavailable(
                    f"not remembered: {why}", server=request.key.origin, uri=request.key.locator
                )
        answer = Answer(Decision.APPROVE, scope, grants)
        recorded = await book.grant(request, answer)
    else:
        answer = await book.review(request, grant_tools=bool(grants.tools))
        if answer.decision is not Decision.APPROVE:
            raise ApprovalDenied(
                f"{qualified!r} was not approved",
                server=request.key.origin,
                uri=request.key.locator,
            )
        recorded = answer.scope
    granted = list(answer.grants.tools) if recorded is not Scope.ONCE else []
    if args.json:
        terminal.json(
            {
                "qualified": qualified,
                "uri": request.key.locator,
                "scope": recorded.value,
                "requested_tools": list(request.requested_tools),
                "granted_tools": granted,
            }
        )
        return EXIT_OK
    note = f"{qualified}: {describe_scope(recorded)}"
    if recorded is not Scope.REMEMBER:
        note += " (nothing is kept once this command ends)"
    if granted:
        note += f"; tools granted: {', '.join(granted)}"
    terminal.note(note)
    return EXIT_OK


def _tool_grant(request: ActivationRequest, terminal: Terminal) -> Grants:
    """What ``--grant-tools`` grants: the tools the skill requests, if it can be granted any."""
    tools = request.requested_tools
    if not request.record.origin.is_mcp:
        terminal.note("a local skill's allowed-tools follow the host's own rules; nothing to grant")
        return Grants()
    if not tools:
        terminal.note("it requests no tools; only the skill is approved")
        return Grants()
    if not request.tools_grantable:
        terminal.note(
            "the administrator's policy forbids granting tools; only the skill is approved"
        )
        return Grants()
    return Grants(tools=tools)


def _record_json(record: ApprovalRecord) -> dict[str, object]:
    return {
        "label": record.label,
        "name": record.name,
        "uri": record.uri,
        "identity": record.identity,
        "files": len(record.files or ()),
        "scope": record.scope.value,
        "granted_at": record.granted_at,
        "grants": record.grants.model_dump(mode="json"),
        "policy_version": record.policy_version,
        "revoked": record.revoked,
    }


def _stored_match(records: Sequence[ApprovalRecord], reference: str) -> ApprovalRecord:
    """The remembered approval ``reference`` names, from the records alone (no server)."""
    ref = parse_reference(reference)
    matches = [record for record in records if ref.names(record.label, record.uri)]
    if not matches:
        raise SkillNotFound(f"no remembered approval matches {reference!r}")
    if len(matches) > 1:
        raise AmbiguousName(
            f"{reference!r} matches {len(matches)} remembered approvals",
            candidates=[f"{r.label}:{r.uri}" for r in matches],
        )
    return matches[0]


def _approvals(args: argparse.Namespace, terminal: Terminal) -> int:
    store = _store(terminal)
    action = args.approvals_command
    if action == "list":
        records = store.records()
        why = store.unavailable()
        if args.json:
            terminal.json(
                {"remember_unavailable": why, "approvals": [_record_json(r) for r in records]}
            )
        else:
            if why is not None:
                terminal.note(f"remembered approvals are unavailable: {why}")
            terminal.approvals(records)
        return EXIT_OK
    why = store.unavailable()
    if why is not None:
        raise RememberUnavailable(why)
    audit = _audit()
    if action == "revoke":
        record = _stored_match(store.records(), args.ref)
        book = ApprovalBook(TerminalApprover(terminal), store=store, audit=audit)
        reason = "revoked with `skillward approvals revoke`"
        anyio.run(functools.partial(book.revoke, record.key, reason=reason))
        stored = store.get(record.key)
        if stored is not None and stored.revoked is None:
            # The book keeps a revocation it could not store for its process: this one ends.
            raise RememberUnavailable(
                "the revocation could not be recorded", server=record.label, uri=record.uri
            )
        terminal.note(f"revoked {record.label}:{record.name}; it will be asked about again")
        return EXIT_OK
    forgotten = len(store.records())
    store.reset()
    audit.record(
        "revocation",
        "revoked",
        reason=f"every remembered approval forgotten ({forgotten}) with skillward approvals reset",
    )
    terminal.note(f"every remembered approval is forgotten; {store.path} has a new key")
    return EXIT_OK


def _audit_command(args: argparse.Namespace, terminal: Terminal) -> int:
    path = audit_file()
    since = time.time() - args.since if args.since is not None else None
    try:
        log = read_events(path, since=since)
    except OSError as error:
        raise UsageError(
            f"cannot read the audit file {path}: {error.strerror or error}",
            hint="It is written by skillward's command line; see docs/cli.md.",
        ) from None
    if args.json:
        terminal.json(
            {
                "file": str(path),
                "skipped_lines": log.skipped,
                "events": [event.model_dump(mode="json") for event in log.events],
            }
        )
        return EXIT_OK
    terminal.note(f"audit file: {path}")
    terminal.audit(log.events, log.skipped)
    return EXIT_OK


# --- policy ------------------------------------------------------------------------------


def _load_policy(terminal: Terminal, args: argparse.Namespace | None = None) -> EffectivePolicy:
    """The policy in force for this command. With no one to ask, "prompt" is deny: no
    terminal, unless the command itself is the person's answer (``approve --yes``)."""
    answered = args is not None and bool(getattr(args, "yes", False))
    return load_policy(
        headless=not sys.stdin.isatty() and not answered,
        report=lambda text: terminal.note(f"policy: {text}"),
    )


def _policy(args: argparse.Namespace, terminal: Terminal) -> int:
    if args.policy_action == "schema":
        terminal.json(policy_schema())
        return EXIT_OK
    if args.policy_action == "check":
        problems = 0
        for path in args.files:
            for problem in read_policy_file(path).problems:
                problems += 1
                terminal.text(printable(str(problem), limit=2000))
        if problems:
            terminal.note(f"{problems} problem(s) in {len(args.files)} file(s)")
            return 1
        terminal.note(f"{len(args.files)} file(s) checked: no problems")
        return EXIT_OK
    policy = load_policy(report=lambda _: None)
    lockdown = policy.lockdown
    values = [
        {
            "key": s.key,
            "value": s.value.model_dump() if s.key == "pins" else s.value,
            "source": str(s.source),
        }
        for s in policy.settings()
    ]
    if args.json:
        terminal.json(
            {
                "version": policy.version,
                "lockdown": None
                if lockdown is None
                else {
                    "path": lockdown.path,
                    "reason": lockdown.reason,
                    "message": lockdown.message,
                },
                "files": [layer.parsed.source for layer in policy.layers],
                "values": values,
                "problems": [str(p) for p in policy.problems],
            }
        )
    else:
        _show_policy(policy, values, terminal)
    return EXIT_OK if lockdown is None else PolicyDenied.exit_code


def _show_policy(
    policy: EffectivePolicy, values: list[dict[str, object]], terminal: Terminal
) -> None:
    if policy.lockdown is not None:
        terminal.error(PolicyDenied(policy.lockdown.message, hint=policy.lockdown.hint))
    files = ", ".join(layer.parsed.source for layer in policy.layers) or "none"
    terminal.note(f"policy files: {files}")
    terminal.note(f"policy version: {policy.version}")
    for value in values:
        shown = printable(f"{value['key']} = {value['value']!r}", limit=1000)
        terminal.text(f"{shown}    ({printable(str(value['source']))})")
    given = {str(value["key"]) for value in values}
    unset = [key for key in policy_keys() if key not in given]
    if unset:
        terminal.note("unset, so unrestricted: " + ", ".join(unset))
    for problem in policy.problems:
        terminal.note(f"warning: {printable(str(problem), limit=1000)}")


async def _pin(
    host: SkillHost,
    _: _CommandLineApprover,
    args: argparse.Namespace,
    terminal: Terminal,
    _failed: _Failures,
) -> int:
    record = await host.lookup(args.ref)
    entry = record.entry
    if entry is None or not record.origin.is_mcp:
        raise UsageError(
            "only skills served by MCP servers are pinned; local skills are your own files",
            server=record.origin.label,
            local=True,
        )
    digest = content_hash(entry)
    if digest is None:
        raise UsageError(
            "a dynamic skill has no content to pin", server=record.origin.label, uri=entry.uri
        )
    label = record.origin.label
    if args.json:
        terminal.json(
            {"server": label, "skill": entry.uri, "content": digest, "grant_tools": False}
        )
        return EXIT_OK
    identity = next(s.target for s in host.servers() if s.label == label)
    terminal.text(
        "\n".join(
            [
                "[[pins]]",
                # TOML basic strings accept JSON's escapes; comments are escaped too.
                f"# {printable(entry.name)}, {len(entry.manifest)} files, {printable(identity)}",
                f"server = {json.dumps(label)}",
                f"skill = {json.dumps(entry.uri)}",
                f"content = {json.dumps(digest)}",
                "grant_tools = false",
            ]
        )
    )
    return EXIT_OK


# --- demo --------------------------------------------------------------------------------


async def _demo(terminal: Terminal) -> int:
    spec = ServerSpec(
        label="examples",
        transport=StdioTransport(
            command=sys.executable,
            args=("-m", "skillward", "serve", "--tamper", DEMO_TAMPERED_URI),
        ),
    )
    terminal.heading(
        "1. Connect the bundled example skills server (stdio) under the label 'examples'"
    )
    terminal.note(f"$ skillward serve --tamper {DEMO_TAMPERED_URI}")
    terminal.note(
        "(the demo server flips one byte of that file, while its listing keeps the true digest)"
    )
    audit = _audit()
    policy = _load_policy(terminal)
    approver = _CommandLineApprover(terminal, approve_once=True, audit=audit, policy=policy)
    async with SkillHost(
        config=HostConfig(), approver=approver, audit=audit, policy=policy
    ) as host:
        await host.connect(spec)
        records = [record for record in host.registry.records() if record.listed]
        terminal.catalog(
            host.catalog(),
            [host.registry.qualified_ref(r) for r in records],
            host.collisions(),
            host.declined(),
            _origin_summaries(host, {})[0],
        )
        terminal.heading("2. The catalog, as the model sees it (listing read no files)")
        terminal.text(host.catalog_block().text())

        terminal.heading(
            f"3. Load '{DEMO_SKILL}': the demo approves this one skill, as if you said yes"
        )
        record = host.resolve(DEMO_SKILL)
        approver.target = ApproveOnce({record.key})
        activation = await host.activate(DEMO_SKILL)
        terminal.note("SKILL.md matched the listing: size, SHA-256 digest and frontmatter")
        terminal.text(activation.block.text())

        terminal.heading(f"4. Read {DEMO_GOOD_FILE}: verified against the entry held since loading")
        terminal.text((await host.read_file(DEMO_SKILL, DEMO_GOOD_FILE)).text())

        terminal.heading(
            f"5. The model reads {DEMO_TAMPERED_FILE}: the server sends one wrong byte"
        )
        refused = await host.read_resource_block("examples", DEMO_TAMPERED_URI)
        if refused.kind != "error":  # pragma: no cover
            raise AssertionError("the tampered read was not refused")
        terminal.note("Refused: nothing from that read reached the model. The model sees only:")
        terminal.text(refused.text())

        terminal.heading(
            f"6. '{DEMO_SKILL}' stays in the acting window, but nothing more is read under it"
        )
        try:
            await host.read_file(DEMO_SKILL, DEMO_GOOD_FILE)
        except SkillwardError as error:
            terminal.error(error)
        terminal.note(
            "Its gates still apply; loading it again asks for approval again, against "
            "whatever the server serves now."
        )
        return EXIT_OK


# --- main --------------------------------------------------------------------------------

_HOST_COMMANDS = {
    "list": _list,
    "show": _show,
    "load": _load,
    "read": _read,
    "approve": _approve,
    "pin": _pin,
}


class _EscapingFormatter(logging.Formatter):
    """Log lines may quote servers (and the SDK's tracebacks quote their bytes): escape them."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record), limit=4000)


def _configure_logging(debug: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_EscapingFormatter("%(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler], force=True)
    # The SDK logs every request at INFO and server parse failures with tracebacks:
    # the command reports those itself, so the SDK speaks only under --debug.
    for name in ("mcp", "httpx", "httpx2", "uvicorn"):
        logging.getLogger(name).setLevel(logging.WARNING if debug else logging.CRITICAL)
    logging.getLogger("skillward").setLevel(logging.DEBUG if debug else logging.WARNING)


def _output_closed() -> int:
    """The reader of our output went away (``| head``): end quietly, as git does.

    Whatever is still buffered, and Python's own flush at exit, goes to /dev/null.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            to_devnull(stream)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = _merge_common(parser.parse_args(argv))
    _configure_logging(args.debug)
    if args.command is None:
        parser.print_help()
        return EXIT_OK
    terminal = Terminal(json_errors=args.json)
    logs = _ServerLogs(terminal, server_log_dir())
    try:
        return _run(args, terminal, logs)
    except SkillwardError as error:
        if args.debug:
            raise
        terminal.error(error)
        if _server_died(error):
            logs.show(error.server)
        return error.exit_code
    except BrokenPipeError:
        return _output_closed()
    finally:
        if args.debug:
            with contextlib.suppress(BrokenPipeError):
                logs.show_all()


def _run(args: argparse.Namespace, terminal: Terminal, logs: _ServerLogs) -> int:
    if args.command == "serve":
        return _serve(args)
    if args.command == "demo":
        return anyio.run(_demo, terminal)
    if args.command == "logs":
        return _logs(args, terminal)
    if args.command == "cache":
        return _cache(args, terminal)
    if args.command == "approvals":
        return _approvals(args, terminal)
    if args.command == "audit":
        return _audit_command(args, terminal)
    if args.command == "policy":
        return _policy(args, terminal)
    command = _HOST_COMMANDS[args.command]

    async def body(host: SkillHost, approver: _CommandLineApprover, failed: _Failures) -> int:
        return await command(host, approver, args, terminal, failed)

    return anyio.run(_with_host, args, terminal, logs, body)
