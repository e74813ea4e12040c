"""Administering: ``audit``, ``logs``, ``cache``, ``pin`` and ``policy``.

The commands on this machine's own state, and on the administrator's policy. All but
``pin`` connect no server, and import neither ``mcp`` nor the host: they answer at once
(``tests/integration/test_cli_startup.py``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from skillward.cli._context import EXIT_OK, EXIT_PROBLEMS, add_command, over_host
from skillward.core.errors import PolicyDenied, UnknownServer, UsageError, printable

if TYPE_CHECKING:
    from skillward.cli._context import Commands
    from skillward.cli._host import Connected
    from skillward.terminal.prompts import Terminal
    from skillward.trust.policy import EffectivePolicy

__all__ = [
    "add_commands",
    "audit",
    "audit_verify",
    "cache_list",
    "cache_purge",
    "logs",
    "pin",
    "policy_check",
    "policy_schema",
    "policy_show",
]


def add_commands(commands: Commands) -> None:
    audit_ = add_command(
        commands,
        "audit",
        audit,
        help="the audit trail: every approval, denial, revocation, grant and gate decision",
    )
    audit_.add_argument(
        "--since",
        type=_duration,
        metavar="DURATION",
        help="only events this recent, for example 30m, 12h, 7d or 1h30m",
    )
    checks = audit_.add_subparsers(dest="audit_action", metavar="ACTION")
    add_command(
        checks,
        "verify",
        audit_verify,
        help="check that the trail is intact: nothing edited, deleted, reordered or cut short",
        description="Exit 0 when the trail is intact and its checkpoints authenticate; 7 at "
        "the first line that breaks, saying how (edited, missing, reordered, truncated, "
        "replaced, unauthenticated).",
    )
    logs_ = add_command(
        commands,
        "logs",
        logs,
        help="what a stdio server wrote to its stderr, escaped",
        description="Print the stderr log of the stdio server labelled LABEL. Every escape "
        "and control character is shown as text (\\x1b), never sent to the terminal.",
    )
    logs_.add_argument("label", metavar="LABEL")
    logs_.add_argument("--lines", type=_positive_int, metavar="N", help="only the last N lines")
    cache = commands.add_parser("cache", help="the disk cache of verified server files")
    actions = cache.add_subparsers(dest="cache_action", metavar="ACTION", required=True)
    add_command(actions, "list", cache_list, help="files and bytes kept per server label")
    purge = add_command(
        actions, "purge", cache_purge, help="remove one label's cached files, or all"
    )
    purge.add_argument("label", nargs="?", metavar="LABEL", help="a server label (default: all)")
    pin_ = add_command(
        commands,
        "pin",
        pin,
        help="print the [[pins]] block that pre-approves a skill's current content",
    )
    pin_.add_argument("ref", metavar="REF")
    policy = commands.add_parser("policy", help="administrator policy: show, check, schema")
    actions = policy.add_subparsers(dest="policy_action", metavar="ACTION", required=True)
    add_command(
        actions,
        "show",
        policy_show,
        help="the policy in force, each value with the file it came from",
    )
    check = add_command(
        actions,
        "check",
        policy_check,
        help="check policy files before deploying them (exit 1 on any problem)",
    )
    check.add_argument("files", metavar="FILE", nargs="+", type=Path)
    add_command(actions, "schema", policy_schema, help="the JSON Schema of a policy file")


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number, not {text!r}")
    return int(text)


def _duration(text: str) -> float:
    from skillward.trust.audit import parse_duration  # only when given

    try:
        return parse_duration(text)
    except UsageError as error:
        raise argparse.ArgumentTypeError(error.message) from None


# --- audit -------------------------------------------------------------------------------


def audit(args: argparse.Namespace, terminal: Terminal) -> int:
    from skillward.edge._dirs import audit_file
    from skillward.trust.audit import read_events

    path = audit_file()
    since = time.time() - args.since if args.since is not None else None
    try:
        log = read_events(path, since=since)
    except OSError as error:
        raise _unreadable(path, error) from None
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


def _unreadable(path: Path, error: OSError) -> UsageError:
    return UsageError(
        f"cannot read the audit file {path}: {error.strerror or error}",
        hint="It is written by skillward's command line; see docs/cli.md.",
    )


def audit_verify(args: argparse.Namespace, terminal: Terminal) -> int:
    from skillward.cli._context import EXIT_BROKEN
    from skillward.edge._dirs import audit_file
    from skillward.trust._keyfile import read_user_config, user_keys
    from skillward.trust.audit import verify_trail

    path = audit_file()
    keys = user_keys(path, read_user_config(), prefix="audit")
    try:
        verdict = verify_trail(path, keys=keys)
    except OSError as error:
        raise _unreadable(path, error) from None
    broken = verdict.broken
    if args.json:
        terminal.json(
            {
                "file": str(path),
                "intact": verdict.intact,
                "broken": None
                if broken is None
                else {
                    "how": broken.how,
                    "n": broken.n,
                    "where": broken.where,
                    "why": broken.message,
                },
                "events": verdict.events,
                "checkpoints": verdict.checkpoints,
                "authenticated": verdict.authenticated,
                "first": verdict.first,
                "last": verdict.last,
                "vouched": verdict.vouched,
                "before_chain": verdict.before_chain,
                "notes": list(verdict.notes),
            }
        )
    else:
        terminal.note(f"audit file: {path}")
        if broken is None and verdict.first is None:
            terminal.text("intact: the trail holds no event yet")
        elif broken is None:
            terminal.text(
                f"intact: {verdict.events} events, lines {verdict.first} to {verdict.last} of "
                f"the chain, vouched for up to line {verdict.vouched} by {verdict.authenticated} "
                f"authenticated checkpoints ({keys.description})"
            )
        else:
            shown = f"line {broken.n} of the chain" if broken.n is not None else "the trail"
            terminal.text(f"broken ({broken.how}) at {shown}, {broken.where}: {broken.message}")
        for note in verdict.notes:
            terminal.text(f"  note: {note}")
    return EXIT_OK if broken is None else EXIT_BROKEN


# --- logs --------------------------------------------------------------------------------


def logs(args: argparse.Namespace, terminal: Terminal) -> int:
    from skillward.core.config import Limits
    from skillward.core.labels import normalise_label
    from skillward.core.registry import nearest_label
    from skillward.edge._dirs import server_log_dir
    from skillward.edge._serverlog import escaped_lines, log_path, read_log

    label = normalise_label(args.label)
    directory = server_log_dir()
    data = read_log(directory, label, max_bytes=Limits().max_server_log_bytes)
    if data is None:
        near = nearest_label(label, (path.stem for path in directory.glob("*.log")))
        raise UnknownServer(
            f"no stderr log for server {label!r} in {directory}"
            + (f"; did you mean {near!r}?" if near else ""),
            hint="Logs are kept for stdio servers that skillward has started.",
        )
    lines = escaped_lines(data, limit=10_000)
    if args.lines is not None:
        lines = lines[-args.lines :]
    if args.json:
        terminal.json({"label": label, "file": str(log_path(directory, label)), "lines": lines})
    elif lines:
        terminal.text("\n".join(lines))
    return EXIT_OK


# --- cache -------------------------------------------------------------------------------


def cache_list(args: argparse.Namespace, terminal: Terminal) -> int:
    from skillward.cache._disk import DiskCache

    disk = DiskCache()
    usage = disk.usage()
    if args.json:
        terminal.json(
            {
                "root": str(disk.root),
                "labels": [
                    {"label": u.label, "identity": u.identity, "files": u.files, "bytes": u.size}
                    for u in usage
                ],
            }
        )
        return EXIT_OK
    terminal.note(f"disk cache: {disk.root}")
    for u in usage:
        identity = printable(u.identity) if u.identity is not None else "(no index)"
        terminal.text(f"{u.label}  {u.files} files  {u.size} bytes  {identity}")
    if not usage:
        terminal.note("(empty)")
    return EXIT_OK


def cache_purge(args: argparse.Namespace, terminal: Terminal) -> int:
    from skillward.cache._disk import DiskCache
    from skillward.core.labels import normalise_label

    disk = DiskCache()
    label = None if args.label is None else normalise_label(args.label)
    files, size = disk.purge(label)
    if args.json:
        terminal.json({"root": str(disk.root), "label": label, "files": files, "bytes": size})
    else:
        whose = f"of {label}" if label else "of every server"
        terminal.note(f"removed {files} cached files ({size} bytes) {whose}")
    return EXIT_OK


# --- pin ---------------------------------------------------------------------------------


@over_host
async def pin(args: argparse.Namespace, on: Connected) -> int:
    from skillward.trust.approvals import content_hash

    record = await on.host.lookup(args.ref)
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
        on.terminal.json(
            {"server": label, "skill": entry.uri, "content": digest, "grant_tools": False}
        )
        return EXIT_OK
    identity = next(s.target for s in on.host.servers() if s.label == label)
    on.terminal.text(
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


# --- policy ------------------------------------------------------------------------------


def policy_schema(args: argparse.Namespace, terminal: Terminal) -> int:
    from skillward.trust._policyfile import policy_schema as schema

    terminal.json(schema())
    return EXIT_OK


def policy_check(args: argparse.Namespace, terminal: Terminal) -> int:
    from skillward.trust._policyload import read_policy_file

    problems = [problem for path in args.files for problem in read_policy_file(path).problems]
    if args.json:
        terminal.json(
            {
                "files": [str(path) for path in args.files],
                "problems": [
                    {"file": p.source, "line": p.line, "message": p.message, "fatal": p.fatal}
                    for p in problems
                ],
            }
        )
    else:
        for problem in problems:
            terminal.text(printable(str(problem), limit=2000))
        if problems:
            terminal.note(f"{len(problems)} problem(s) in {len(args.files)} file(s)")
        else:
            terminal.note(f"{len(args.files)} file(s) checked: no problems")
    return EXIT_PROBLEMS if problems else EXIT_OK


def policy_show(args: argparse.Namespace, terminal: Terminal) -> int:
    from skillward.trust._policyload import load_policy

    effective = load_policy(report=lambda _: None)
    lockdown = effective.lockdown
    values = [
        {
            "key": s.key,
            "value": s.value.model_dump() if s.key == "pins" else s.value,
            "source": str(s.source),
        }
        for s in effective.settings()
    ]
    if args.json:
        terminal.json(
            {
                "version": effective.version,
                "lockdown": None
                if lockdown is None
                else {
                    "path": lockdown.path,
                    "reason": lockdown.reason,
                    "message": lockdown.message,
                },
                "files": [layer.parsed.source for layer in effective.layers],
                "values": values,
                "problems": [str(p) for p in effective.problems],
            }
        )
    else:
        _show_policy(effective, values, terminal)
    return EXIT_OK if lockdown is None else PolicyDenied.exit_code


def _show_policy(
    effective: EffectivePolicy, values: list[dict[str, object]], terminal: Terminal
) -> None:
    from skillward.trust._policyfile import policy_keys

    if effective.lockdown is not None:
        terminal.error(PolicyDenied(effective.lockdown.message, hint=effective.lockdown.hint))
    files = ", ".join(layer.parsed.source for layer in effective.layers) or "none"
    terminal.note(f"policy files: {files}")
    terminal.note(f"policy version: {effective.version}")
    for value in values:
        shown = printable(f"{value['key']} = {value['value']!r}", limit=1000)
        terminal.text(f"{shown}    ({printable(str(value['source']))})")
    given = {str(value["key"]) for value in values}
    unset = [key for key in policy_keys() if key not in given]
    if unset:
        terminal.note("unset, so unrestricted: " + ", ".join(unset))
    for problem in effective.problems:
        terminal.note(f"warning: {printable(str(problem), limit=1000)}")
