"""The commands on this machine's own state: approvals, audit, cache, logs and policy.

None of them connects a server, so none imports ``mcp`` or the host: they answer at
once (``tests/integration/test_cli_startup.py``).
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Sequence

import anyio

from skillward.cache._disk import DiskCache
from skillward.core.config import Limits
from skillward.core.errors import (
    AmbiguousName,
    PolicyDenied,
    RememberUnavailable,
    SkillNotFound,
    UnknownServer,
    UsageError,
    printable,
)
from skillward.core.labels import normalise_label
from skillward.core.registry import nearest_label, parse_reference
from skillward.edge._dirs import audit_file, server_log_dir
from skillward.edge._serverlog import escaped_lines, log_path, read_log
from skillward.terminal.prompts import Terminal, TerminalApprover
from skillward.trust._policyfile import policy_keys, policy_schema
from skillward.trust._policyload import load_policy, read_policy_file
from skillward.trust._store import FileApprovalStore
from skillward.trust.approvals import ApprovalBook, ApprovalRecord
from skillward.trust.audit import AuditTrail, read_events
from skillward.trust.policy import EffectivePolicy

__all__ = [
    "COMMANDS",
    "approvals",
    "audit",
    "audit_trail",
    "cache",
    "logs",
    "policy",
    "policy_in_force",
    "record_json",
    "store",
]

EXIT_OK = 0
#: ``policy check`` found problems.
EXIT_PROBLEMS = 1


def store(terminal: Terminal) -> FileApprovalStore:
    return FileApprovalStore(report=terminal.error)


def audit_trail() -> AuditTrail:
    """The command line keeps the audit trail in the user state directory."""
    return AuditTrail(audit_file())


def policy_in_force(terminal: Terminal, args: argparse.Namespace | None = None) -> EffectivePolicy:
    """The policy in force for this command. With no one to ask, "prompt" is deny: no
    terminal, unless the command itself is the person's answer (``approve --yes``)."""
    answered = args is not None and bool(getattr(args, "yes", False))
    return load_policy(
        headless=not sys.stdin.isatty() and not answered,
        report=lambda text: terminal.note(f"policy: {text}"),
    )


# --- logs --------------------------------------------------------------------------------


def logs(args: argparse.Namespace, terminal: Terminal) -> int:
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


def cache(args: argparse.Namespace, terminal: Terminal) -> int:
    disk = DiskCache()
    if args.cache_action == "purge":
        label = None if args.label is None else normalise_label(args.label)
        files, size = disk.purge(label)
        if args.json:
            terminal.json({"root": str(disk.root), "label": label, "files": files, "bytes": size})
        else:
            whose = f"of {label}" if label else "of every server"
            terminal.note(f"removed {files} cached files ({size} bytes) {whose}")
        return EXIT_OK
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


# --- approvals ---------------------------------------------------------------------------


def record_json(record: ApprovalRecord) -> dict[str, object]:
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


def approvals(args: argparse.Namespace, terminal: Terminal) -> int:
    kept = store(terminal)
    action = args.approvals_command
    if action == "list":
        records = kept.records()
        why = kept.unavailable()
        if args.json:
            terminal.json(
                {"remember_unavailable": why, "approvals": [record_json(r) for r in records]}
            )
        else:
            if why is not None:
                terminal.note(f"remembered approvals are unavailable: {why}")
            terminal.approvals(records)
        return EXIT_OK
    why = kept.unavailable()
    if why is not None:
        raise RememberUnavailable(why)
    trail = audit_trail()
    if action == "revoke":
        record = _stored_match(kept.records(), args.ref)
        book = ApprovalBook(TerminalApprover(terminal), store=kept, audit=trail)
        reason = "revoked with `skillward approvals revoke`"
        anyio.run(functools.partial(book.revoke, record.key, reason=reason))
        stored = kept.get(record.key)
        if stored is not None and stored.revoked is None:
            # The book keeps a revocation it could not store for its process: this one ends.
            raise RememberUnavailable(
                "the revocation could not be recorded", server=record.label, uri=record.uri
            )
        if args.json:
            terminal.json({"revoked": record_json(stored or record)})
        else:
            terminal.note(f"revoked {record.label}:{record.name}; it will be asked about again")
        return EXIT_OK
    forgotten = len(kept.records())
    if not args.yes and sys.stdin.isatty():
        question = f"Forget all {forgotten} remembered approvals, and use a new key from now on?"
        if not terminal.confirm(question):
            terminal.note("nothing was forgotten")
            return EXIT_OK
    kept.reset()
    trail.record(
        "revocation",
        "revoked",
        reason=f"every remembered approval forgotten ({forgotten}) with skillward approvals reset",
    )
    if args.json:
        terminal.json({"forgotten": forgotten, "store": str(kept.path)})
    else:
        terminal.note(f"every remembered approval is forgotten; {kept.path} has a new key")
    return EXIT_OK


# --- audit -------------------------------------------------------------------------------


def audit(args: argparse.Namespace, terminal: Terminal) -> int:
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


def policy(args: argparse.Namespace, terminal: Terminal) -> int:
    if args.policy_action == "schema":
        terminal.json(policy_schema())
        return EXIT_OK
    if args.policy_action == "check":
        return _policy_check(args, terminal)
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


def _policy_check(args: argparse.Namespace, terminal: Terminal) -> int:
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


def _show_policy(
    effective: EffectivePolicy, values: list[dict[str, object]], terminal: Terminal
) -> None:
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


#: Each command of this module by name (``cli.STATE_COMMANDS``).
COMMANDS = {"approvals": approvals, "audit": audit, "cache": cache, "logs": logs, "policy": policy}
