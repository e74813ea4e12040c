"""What the commands that connect servers share: the servers given (``--config``,
``--server``), the local skill directories, limits from ``--timeout``, the approver,
the stdio servers' logs, and the host itself, built and left around each command.

The only module of the command line that imports the host; a command imports it
(through :func:`skillward.cli._context.over_host`) when it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
from collections.abc import AsyncIterator, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from skillward.cache._disk import DiskCache
from skillward.cache.seam import ContentCache, NoCache
from skillward.cli._context import EXIT_OK, audit_trail, policy_in_force, store
from skillward.core.config import Limits
from skillward.core.errors import (
    ConfigError,
    OriginError,
    ServerRejected,
    SkillNotFound,
    SkillwardError,
    TransportError,
    UnknownServer,
    UsageError,
    printable,
)
from skillward.core.origins import SkillKey
from skillward.core.registry import parse_reference
from skillward.edge._dirs import default_servers_file, server_log_dir
from skillward.edge._local import LocalSkillDir, default_local_dirs
from skillward.edge._serverlog import escaped_lines, log_path, read_log
from skillward.edge.servers import (
    ServersConfig,
    ServerSpec,
    StdioTransport,
    load_mcp_servers,
    parse_server_option,
)
from skillward.host.skillhost import HostConfig, SkillHost
from skillward.terminal._render import OriginSummary, error_json
from skillward.terminal.prompts import Terminal, TerminalApprover
from skillward.trust.approvals import (
    ActivationRequest,
    Answer,
    ApproveOnce,
    Approver,
    Decision,
    Grants,
    NeverApproved,
)
from skillward.trust.audit import AuditTrail
from skillward.trust.book import ApprovalBook
from skillward.trust.pending import PendingApproval
from skillward.trust.policy import EffectivePolicy

if TYPE_CHECKING:
    from skillward.cli._context import HostRun

__all__ = [
    "CommandLineApprover",
    "Connected",
    "Failures",
    "ServerLogs",
    "adding_servers",
    "content_cache",
    "limits",
    "local_dirs",
    "opened_host",
    "origin_summaries",
    "run",
    "server_specs",
    "show_catalog",
]


#: How an ``--approve-once`` load is audited: the person named the skill on the command line.
APPROVED_ONCE = "approved once on the command line (--approve-once)"


class CommandLineApprover:
    """Approves only what --approve-once names (granting nothing more, recording nothing);
    otherwise uses remembered approvals, then asks at a terminal, or refuses when there
    is none. It decides against the host's pending approval as the book does."""

    def __init__(
        self, terminal: Terminal, approve_once: bool, audit: AuditTrail, policy: EffectivePolicy
    ) -> None:
        self.prompt = TerminalApprover(terminal)
        kept = store(terminal)
        rules = policy.approval_rules(kept)
        self.book = ApprovalBook(
            self.prompt, store=kept, notify=terminal.note, audit=audit, rules=rules
        )
        self.approve_once = approve_once
        self.target: ApproveOnce | None = None
        self._how = APPROVED_ONCE

    def approve_only(self, key: SkillKey, *, how: str = APPROVED_ONCE) -> None:
        """Approve ``key``'s next activation and nothing else, without asking or recording
        anything; the audit trail says ``how``."""
        self.target = ApproveOnce({key})
        self._how = how

    async def _named(self, request: ActivationRequest) -> Answer:
        assert self.target is not None
        return Answer(await self.target.decide(request), how=self._how)

    async def decide(self, request: ActivationRequest) -> Decision:
        return (await self.consent(request)).decision

    async def consent(self, request: ActivationRequest) -> Answer:
        if self.target is not None:
            return await self._named(request)
        return await self.book.consent(request)

    # --- Deciding: the host's pending approval ---------------------------------------------

    async def pending(self, request: ActivationRequest) -> PendingApproval:
        if self.target is not None:  # the skill named is approved this once: no record read
            return PendingApproval(request, verdict=NeverApproved())
        return await self.book.pending(request)

    async def ask_about(self, pending: PendingApproval) -> Answer:
        if self.target is not None:
            return await self._named(pending.request)
        return await self.book.ask_about(pending)

    async def settle(self, pending: PendingApproval, answer: Answer) -> Answer:
        if self.target is not None:
            return answer  # this load only: nothing is recorded
        return await self.book.settle(pending, answer)

    async def held(self, request: ActivationRequest) -> Grants | None:
        return await self.book.held(request)

    async def add_grant(self, request: ActivationRequest, grants: Grants) -> bool:
        return await self.book.add_grant(request, grants)

    async def revoke(self, key: SkillKey, *, reason: str) -> None:
        await self.book.revoke(key, reason=reason)


#: Servers that failed to connect, and why: `list` shows them, other commands blame them.
Failures = dict[str, tuple[ServerSpec, SkillwardError]]


@dataclass(frozen=True, slots=True)
class Connected:
    """What a command that connects servers runs with: the host, each server given
    connected (or in ``failed``), and the approver it asks."""

    host: SkillHost
    approver: CommandLineApprover
    terminal: Terminal
    failed: Failures


# --- servers, directories, limits --------------------------------------------------------


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


def adding_servers(args: argparse.Namespace) -> str:
    """How to give the command a server: ``--server``, or ``servers add`` to the servers
    file the command reads (the ``--config`` file, else ``servers.json``)."""
    if args.config is not None:
        path, option = args.config, f" --config {shlex.quote(str(args.config))}"
    else:
        path, option = default_servers_file(), ""
    return (
        "Connect a server with --server LABEL=URL_OR_COMMAND, or register it for every "
        f"command with `skillward servers add LABEL CMD_OR_URL{option}` (it is kept in {path})."
    )


def server_specs(args: argparse.Namespace, terminal: Terminal) -> list[ServerSpec]:
    """The servers of ``--config`` (or the default file) and ``--server``, by label."""
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


def local_dirs(args: argparse.Namespace) -> tuple[LocalSkillDir, ...]:
    """The local skill directories: ``--skills-dir``, else the defaults, or none."""
    if args.no_local:
        return ()
    return tuple(args.skills_dir) or default_local_dirs()


def content_cache(args: argparse.Namespace, limits: Limits) -> ContentCache:
    """The disk cache, unless ``--no-cache``."""
    return NoCache() if args.no_cache else DiskCache(limits=limits)


def limits(args: argparse.Namespace) -> Limits:
    """The limits, with ``--timeout`` bounding every operation with a server."""
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


# --- stdio servers' logs -----------------------------------------------------------------

#: How much of a failed server's log the command line shows.
_TAIL_LINES = 10
_TAIL_BYTES = 16 * 1024


@dataclass
class ServerLogs:
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


def _server_died(error: SkillwardError) -> bool:
    """An error that means a server stopped answering (not one it answered with)."""
    return isinstance(error, TransportError) and not isinstance(error, ServerRejected)


# --- the host ----------------------------------------------------------------------------


def run(args: argparse.Namespace, terminal: Terminal, body: HostRun) -> int:
    """Run ``body`` with every server given connected, and local skills discovered.

    When a stdio server stopped answering, the last lines of its stderr log follow the
    error; ``--debug`` shows every stdio server's log.
    """
    logs = ServerLogs(terminal, server_log_dir())
    try:
        return anyio.run(_with_host, args, terminal, logs, body)
    except SkillwardError as error:
        if args.debug or not _server_died(error):
            raise
        terminal.error(error)
        logs.show(error.server)
        return error.exit_code
    finally:
        if args.debug:
            with contextlib.suppress(BrokenPipeError):
                logs.show_all()


async def _with_host(
    args: argparse.Namespace, terminal: Terminal, logs: ServerLogs, body: HostRun
) -> int:
    policy = policy_in_force(terminal, args)
    audit = audit_trail(policy)
    approver = CommandLineApprover(terminal, getattr(args, "approve_once", False), audit, policy)
    async with opened_host(args, terminal, logs, policy=policy, audit=audit, approver=approver) as (
        host,
        failed,
    ):
        status = max((error.exit_code for _, error in failed.values()), default=EXIT_OK)
        try:
            result = await body(args, Connected(host, approver, terminal, failed))
        except (UnknownServer, SkillNotFound) as error:
            blamed = _failed_servers_named(getattr(args, "ref", None), failed)
            if not blamed:
                if isinstance(error, UnknownServer):
                    error.command_hint = f"{error.hint} {adding_servers(args)}"
                raise
            _blame(error, blamed, args, terminal)
            return status
    return result or status


#: Servers connecting at once: start-up takes about the slowest one's time, not the sum.
#: Every server is held open once connected, so this bounds no resource at rest; it only
#: keeps a very long list from starting all its processes in one burst. Kept well above
#: what a host is given (a bound of 8 made ten servers start in two waves).
CONNECTING_AT_ONCE = 64


async def _connect(
    host: SkillHost, specs: Sequence[ServerSpec], terminal: Terminal, logs: ServerLogs
) -> Failures:
    """Connect the servers, several at once (in the order given, which the host keeps);
    one that fails is reported and kept, and the rest go on. Failures are reported once
    all are done, in the order given."""
    errors: dict[str, Exception] = {}
    limiter = anyio.CapacityLimiter(CONNECTING_AT_ONCE)

    async def connect(spec: ServerSpec) -> None:
        async with limiter:  # waiters go in the order they came
            try:
                await host.connect(spec)
            except Exception as error:  # each its own; one that is a bug is raised below
                errors[spec.label] = error

    async with anyio.create_task_group() as group:
        for spec in specs:
            group.start_soon(connect, spec)
    failed: Failures = {}
    for spec in specs:
        error = errors.get(spec.label)
        if error is None:
            continue
        if not isinstance(error, SkillwardError):
            raise error
        terminal.error(error)
        failed[spec.label] = (spec, error)
        if isinstance(error, TransportError | OriginError):
            logs.show(spec.label)  # it did not start, died, or spoke nonsense
    return failed


@contextlib.asynccontextmanager
async def opened_host(
    args: argparse.Namespace,
    terminal: Terminal,
    logs: ServerLogs,
    *,
    policy: EffectivePolicy,
    audit: AuditTrail,
    approver: Approver | None = None,
) -> AsyncIterator[tuple[SkillHost, Failures]]:
    """A host over the servers and local skills the command was given, as every command
    builds it, with each server connected (the failures reported and kept)."""
    config = HostConfig(limits=limits(args), local_dirs=local_dirs(args))
    # The host applies the policy's limits to both, and drops a cache the policy turns off.
    cache = content_cache(args, config.limits)
    specs = server_specs(args, terminal)
    logs.watch(specs)
    async with SkillHost(
        config=config, approver=approver, cache=cache, audit=audit, policy=policy
    ) as host:
        for note in host.notes:
            terminal.note(note)
        yield host, await _connect(host, specs, terminal, logs)


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


def _blame(
    error: SkillwardError, blamed: list[str], args: argparse.Namespace, terminal: Terminal
) -> None:
    """The reference may name what a failed server serves: that failure is the cause."""
    if args.json:
        terminal.json_error({**error_json(error, command_line=True), "failed_to_connect": blamed})
        return
    labels = ", ".join(repr(label) for label in blamed)
    terminal.note(
        f"({printable(str(error))}; {labels} failed to connect, so its skills are unknown)"
    )


# --- what list and demo show -------------------------------------------------------------


def origin_summaries(
    host: SkillHost, failed: Failures
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
                "error": error_json(error, command_line=True) if error is not None else None,
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


def show_catalog(host: SkillHost, terminal: Terminal, failed: Failures) -> None:
    """The catalog as ``list`` shows it to a person: by origin, with collisions."""
    # catalog() lists the listed records in registry order, so the two line up.
    records = [record for record in host.registry.records() if record.listed]
    terminal.catalog(
        host.catalog(),
        [host.registry.qualified_ref(record) for record in records],
        host.collisions(),
        host.declined(),
        origin_summaries(host, failed)[0],
    )
