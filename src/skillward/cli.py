"""The ``skillward`` command.

Exit codes: 0 success, 2 usage (or a reference that does not resolve),
3 approval required or denied, 4 verification failed, 5 policy denied,
6 server or transport error.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio

from skillward._dirs import default_servers_file
from skillward._local import LocalSkillDir, default_local_dirs
from skillward._store import FileApprovalStore
from skillward.approvals import (
    ActivationRequest,
    Answer,
    ApprovalBook,
    ApprovalRecord,
    ApproveOnce,
    Decision,
    Scope,
    describe_scope,
)
from skillward.config import Limits
from skillward.errors import (
    AmbiguousName,
    ApprovalDenied,
    ConfigError,
    RememberUnavailable,
    SkillNotFound,
    SkillwardError,
    UsageError,
)
from skillward.host import HostConfig, SkillHost
from skillward.origins import SkillKey
from skillward.prompts import Terminal, TerminalApprover
from skillward.registry import parse_reference
from skillward.servers import (
    ServerSpec,
    StdioTransport,
    check_label,
    load_mcp_servers,
    parse_server_option,
)

__all__ = ["EXIT_CODES", "main"]

EXIT_OK = 0
#: Documented in the README and docs/cli.md.
EXIT_CODES = {
    0: "success",
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


def _skills_dir(text: str) -> LocalSkillDir:
    label, sep, path = text.partition("=")
    if not sep or not path:
        raise argparse.ArgumentTypeError(f"expected LABEL=PATH, not {text!r}")
    try:
        return LocalSkillDir(check_label(label), Path(path))
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skillward",
        description="Security-focused host-side loader for skills served over MCP (SEP-2640).",
        epilog="Exit codes: "
        + "; ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES.items()),
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help=f"mcpServers JSON file (default: {default_servers_file()}, if it exists)",
    )
    common.add_argument(
        "--server",
        action="append",
        default=[],
        metavar="LABEL=URL_OR_COMMAND",
        help="connect a server under LABEL (repeatable); a URL for streamable HTTP, "
        "otherwise a command line for stdio",
    )
    common.add_argument(
        "--skills-dir",
        action="append",
        default=[],
        type=_skills_dir,
        metavar="LABEL=PATH",
        help="a local skills directory (repeatable); the default is ./.agents/skills "
        "as 'project' and ~/.agents/skills as 'user'",
    )
    common.add_argument("--no-local", action="store_true", help="do not discover local skills")
    common.add_argument("--json", action="store_true", help="machine-readable output")
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
    commands.add_parser(
        "demo",
        help="start the bundled example server, load a skill, and show a tampered read refused",
    )

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
    if args.http is None:
        anyio.run(server.serve_stdio, mcp_server)
        return EXIT_OK
    host, port = args.http
    server.quiet_transport_logs()

    async def run_http() -> None:
        async with server.serve_http(mcp_server, host=host, port=port) as url:
            print(
                f"skillward serve: {len(catalog.skills)} skills at {url}",
                file=sys.stderr,
                flush=True,
            )
            await anyio.sleep_forever()

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(run_http)
    return EXIT_OK


# --- host commands -------------------------------------------------------------------------


def _store(terminal: Terminal) -> FileApprovalStore:
    return FileApprovalStore(report=terminal.error)


class _CommandLineApprover:
    """Approves only what --approve-once names; otherwise uses remembered approvals, then
    asks at a terminal, or refuses when there is none."""

    def __init__(self, terminal: Terminal, approve_once: bool) -> None:
        self.prompt = TerminalApprover(terminal)
        self.book = ApprovalBook(self.prompt, store=_store(terminal), notify=terminal.note)
        self.approve_once = approve_once
        self.target: ApproveOnce | None = None

    async def decide(self, request: ActivationRequest) -> Decision:
        if self.target is not None:
            return await self.target.decide(request)
        return await self.book.decide(request)

    async def revoke(self, key: SkillKey, *, reason: str) -> None:
        await self.book.revoke(key, reason=reason)


def _server_specs(args: argparse.Namespace) -> list[ServerSpec]:
    specs: dict[str, ServerSpec] = {}
    config = args.config
    if config is None and default_servers_file().is_file():
        config = default_servers_file()
    if config is not None:
        specs.update(load_mcp_servers(config))
    for option in args.server:
        spec = parse_server_option(option)
        if spec.label in specs:
            raise ConfigError(f"server label {spec.label!r} is given twice")
        specs[spec.label] = spec
    return list(specs.values())


def _local_dirs(args: argparse.Namespace) -> tuple[LocalSkillDir, ...]:
    if args.no_local:
        return ()
    return tuple(args.skills_dir) or default_local_dirs()


async def _with_host(
    args: argparse.Namespace,
    terminal: Terminal,
    body: Callable[[SkillHost, _CommandLineApprover], Awaitable[int]],
) -> int:
    approver = _CommandLineApprover(terminal, getattr(args, "approve_once", False))
    config = HostConfig(limits=Limits(), local_dirs=_local_dirs(args))
    status = EXIT_OK
    async with SkillHost(config=config, approver=approver) as host:
        for note in host.notes:
            terminal.note(note)
        for spec in _server_specs(args):
            try:
                await host.connect(spec)
            except SkillwardError as error:
                terminal.error(error)
                status = error.exit_code
        result = await body(host, approver)
    return result or status


async def _list(
    host: SkillHost, _: _CommandLineApprover, args: argparse.Namespace, terminal: Terminal
) -> int:
    items = host.catalog()
    # catalog() lists the listed records in registry order, so the two line up.
    records = [record for record in host.registry.records() if record.listed]
    qualified = [host.registry.qualified_ref(record) for record in records]
    if args.json:
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
    else:
        terminal.catalog(items, qualified, host.collisions(), host.declined())
    return EXIT_OK


async def _show(
    host: SkillHost, _: _CommandLineApprover, args: argparse.Namespace, terminal: Terminal
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
    host: SkillHost, approver: _CommandLineApprover, args: argparse.Namespace, terminal: Terminal
) -> int:
    record = await host.lookup(args.ref)
    if approver.approve_once:
        approver.target = ApproveOnce({record.key})
    activation = await host.activate(args.ref)
    terminal.block(activation.block, as_json=args.json)
    return EXIT_OK


async def _read(
    host: SkillHost, _: _CommandLineApprover, args: argparse.Namespace, terminal: Terminal
) -> int:
    block = await host.read_file(args.ref, args.path)
    terminal.block(block, as_json=args.json)
    return EXIT_OK


async def _approve(
    host: SkillHost, approver: _CommandLineApprover, args: argparse.Namespace, terminal: Terminal
) -> int:
    request = await host.approval_request(args.ref)
    book = approver.book
    qualified = host.registry.qualified_ref(request.record)
    scope = Scope(args.scope)
    if args.yes:
        if scope is Scope.REMEMBER:
            why = await book.remember_unavailable(request)
            if why is not None:
                raise RememberUnavailable(
                    f"not remembered: {why}", server=request.key.origin, uri=request.key.locator
                )
        recorded = await book.grant(request, Answer(Decision.APPROVE, scope))
    else:
        answer = await book.review(request)
        if answer.decision is not Decision.APPROVE:
            raise ApprovalDenied(
                f"{qualified!r} was not approved",
                server=request.key.origin,
                uri=request.key.locator,
            )
        recorded = answer.scope
    if args.json:
        terminal.json({"qualified": qualified, "uri": request.key.locator, "scope": recorded.value})
        return EXIT_OK
    note = f"{qualified}: {describe_scope(recorded)}"
    if recorded is not Scope.REMEMBER:
        note += " (nothing is kept once this command ends)"
    terminal.note(note)
    return EXIT_OK


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

    def named(record: ApprovalRecord) -> bool:
        if ref.label is not None and record.label != ref.label:
            return False
        if ref.kind == "uri":
            return record.uri == ref.value
        path = record.uri.partition("://")[2].removesuffix("/SKILL.md")
        return path == ref.value if ref.kind == "path" else record.name == ref.value

    matches = [record for record in records if named(record)]
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
    if action == "revoke":
        record = _stored_match(store.records(), args.ref)
        store.revoke(record.key, reason="revoked with `skillward approvals revoke`")
        terminal.note(f"revoked {record.label}:{record.name}; it will be asked about again")
        return EXIT_OK
    store.reset()
    terminal.note(f"every remembered approval is forgotten; {store.path} has a new key")
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
    approver = _CommandLineApprover(terminal, approve_once=True)
    async with SkillHost(config=HostConfig(), approver=approver) as host:
        await host.connect(spec)
        records = [record for record in host.registry.records() if record.listed]
        terminal.catalog(
            host.catalog(),
            [host.registry.qualified_ref(r) for r in records],
            host.collisions(),
            host.declined(),
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

        terminal.heading(f"5. Read {DEMO_TAMPERED_FILE}: the server sends one wrong byte")
        try:
            await host.read_file(DEMO_SKILL, DEMO_TAMPERED_FILE)
        except SkillwardError as error:
            terminal.error(error)
            terminal.note("Refused: nothing from that read reached the model. The model sees only:")
            terminal.text(await host.read_resource_tool("examples", DEMO_TAMPERED_URI))
            return EXIT_OK
    raise AssertionError("the tampered read was not refused")  # pragma: no cover


# --- main --------------------------------------------------------------------------------

_HOST_COMMANDS = {
    "list": _list,
    "show": _show,
    "load": _load,
    "read": _read,
    "approve": _approve,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s: %(message)s")
    if args.command is None:
        parser.print_help()
        return EXIT_OK
    terminal = Terminal()
    try:
        if args.command == "serve":
            return _serve(args)
        if args.command == "demo":
            return anyio.run(_demo, terminal)
        if args.command == "approvals":
            return _approvals(args, terminal)
        command = _HOST_COMMANDS[args.command]

        async def body(host: SkillHost, approver: _CommandLineApprover) -> int:
            return await command(host, approver, args, terminal)

        return anyio.run(_with_host, args, terminal, body)
    except SkillwardError as error:
        if args.debug:
            raise
        terminal.error(error)
        return error.exit_code
