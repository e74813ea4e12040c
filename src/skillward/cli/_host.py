"""The commands that connect servers: list, show, load, read, approve, pin and demo.

Only these import the host, and so ``mcp``; the command line imports this module when
one of them runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from skillward.cache._disk import DiskCache
from skillward.cache.seam import ContentCache, NoCache
from skillward.cli._state import audit_trail, policy_in_force, store
from skillward.core.config import Limits
from skillward.core.context import ContextBlock
from skillward.core.errors import (
    ApprovalDenied,
    ConfigError,
    OriginError,
    RememberUnavailable,
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
from skillward.terminal.prompts import OriginSummary, Terminal, TerminalApprover, error_json
from skillward.trust.approvals import (
    ActivationRequest,
    Answer,
    ApprovalBook,
    ApproveOnce,
    Decision,
    Grants,
    Scope,
    content_hash,
    describe_scope,
)
from skillward.trust.audit import AuditTrail
from skillward.trust.policy import EffectivePolicy

__all__ = ["COMMANDS", "DEMO_TAMPERED_URI", "demo", "run"]

EXIT_OK = 0

DEMO_SKILL = "refunds"
DEMO_GOOD_FILE = "policy/limits.json"
DEMO_TAMPERED_FILE = "templates/email.md"
DEMO_TAMPERED_URI = "skill://acme/billing/refunds/" + DEMO_TAMPERED_FILE


class _CommandLineApprover:
    """Approves only what --approve-once names (granting nothing more); otherwise uses
    remembered approvals, then asks at a terminal, or refuses when there is none."""

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
    audit = audit_trail()
    policy = policy_in_force(terminal, args)
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


@dataclass
class _Story:
    """The demo's steps, told to a person, or kept for one JSON document (``--json``)."""

    terminal: Terminal
    as_json: bool
    steps: list[dict[str, list[object] | str]] = field(default_factory=list)

    def step(self, title: str) -> None:
        if self.as_json:
            self.steps.append({"step": title, "notes": [], "blocks": [], "errors": []})
        else:
            self.terminal.heading(title)

    def _keep(self, kind: str, item: object) -> None:
        kept = self.steps[-1][kind]
        assert isinstance(kept, list)
        kept.append(item)

    def note(self, text: str) -> None:
        if self.as_json:
            self._keep("notes", text)
        else:
            self.terminal.note(text)

    def block(self, block: ContextBlock) -> None:
        if self.as_json:
            self._keep("blocks", block.to_json())
        else:
            self.terminal.text(block.text())

    def error(self, error: SkillwardError) -> None:
        if self.as_json:
            self._keep("errors", error_json(error))
        else:
            self.terminal.error(error)

    def end(self) -> None:
        if self.as_json:
            self.terminal.json({"steps": self.steps})


async def demo(args: argparse.Namespace, terminal: Terminal) -> int:
    """Start the bundled example server, load a skill, and show a tampered read refused."""
    spec = ServerSpec(
        label="examples",
        transport=StdioTransport(
            command=sys.executable,
            args=("-m", "skillward", "serve", "--tamper", DEMO_TAMPERED_URI),
        ),
    )
    story = _Story(terminal, args.json)
    story.step("1. Connect the bundled example skills server (stdio) under the label 'examples'")
    story.note(f"$ skillward serve --tamper {DEMO_TAMPERED_URI}")
    story.note(
        "(the demo server flips one byte of that file, while its listing keeps the true digest)"
    )
    audit = audit_trail()
    policy = policy_in_force(terminal)
    approver = _CommandLineApprover(terminal, approve_once=True, audit=audit, policy=policy)
    async with SkillHost(
        config=HostConfig(limits=_limits(args)), approver=approver, audit=audit, policy=policy
    ) as host:
        await host.connect(spec)
        records = [record for record in host.registry.records() if record.listed]
        if not args.json:
            terminal.catalog(
                host.catalog(),
                [host.registry.qualified_ref(r) for r in records],
                host.collisions(),
                host.declined(),
                _origin_summaries(host, {})[0],
            )
        story.step("2. The catalog, as the model sees it (listing read no files)")
        story.block(host.catalog_block())

        story.step(f"3. Load '{DEMO_SKILL}': the demo approves this one skill, as if you said yes")
        record = host.resolve(DEMO_SKILL)
        approver.target = ApproveOnce({record.key})
        activation = await host.activate(DEMO_SKILL)
        story.note("SKILL.md matched the listing: size, SHA-256 digest and frontmatter")
        story.block(activation.block)

        story.step(f"4. Read {DEMO_GOOD_FILE}: verified against the entry held since loading")
        story.block(await host.read_file(DEMO_SKILL, DEMO_GOOD_FILE))

        story.step(f"5. The model reads {DEMO_TAMPERED_FILE}: the server sends one wrong byte")
        refused = await host.read_resource_block("examples", DEMO_TAMPERED_URI)
        if refused.kind != "error":  # pragma: no cover
            raise AssertionError("the tampered read was not refused")
        story.note("Refused: nothing from that read reached the model. The model sees only:")
        story.block(refused)

        story.step(
            f"6. '{DEMO_SKILL}' stays in the acting window, but nothing more is read under it"
        )
        try:
            await host.read_file(DEMO_SKILL, DEMO_GOOD_FILE)
        except SkillwardError as error:
            story.error(error)
        story.note(
            "Its gates still apply; loading it again asks for approval again, against "
            "whatever the server serves now."
        )
        story.end()
        return EXIT_OK


#: The commands that connect servers, each run by :func:`run` with a host.
COMMANDS = {
    "list": _list,
    "show": _show,
    "load": _load,
    "read": _read,
    "approve": _approve,
    "pin": _pin,
}


def run(args: argparse.Namespace, terminal: Terminal) -> int:
    """Run ``args.command``, one of :data:`COMMANDS` or ``demo``.

    When a stdio server stopped answering, the last lines of its stderr log follow the
    error; ``--debug`` shows every stdio server's log.
    """
    if args.command == "demo":
        return anyio.run(demo, args, terminal)
    command = COMMANDS[args.command]
    logs = _ServerLogs(terminal, server_log_dir())

    async def body(host: SkillHost, approver: _CommandLineApprover, failed: _Failures) -> int:
        return await command(host, approver, args, terminal, failed)

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
