"""Approving: ``approve``, and ``approvals list``, ``revoke`` and ``reset``.

``approve`` connects servers (it reviews what the skill's server serves now); the
``approvals`` commands work on the remembered approvals alone, and import neither
``mcp`` nor the host.
"""

from __future__ import annotations

import argparse
import functools
import sys
from typing import TYPE_CHECKING

from skillward.cli._context import EXIT_OK, add_command, audit_trail, over_host, store
from skillward.core.errors import AmbiguousName, ApprovalDenied, RememberUnavailable, SkillNotFound

if TYPE_CHECKING:
    from collections.abc import Sequence

    from skillward.cli._context import Commands
    from skillward.cli._host import Connected
    from skillward.terminal.prompts import Terminal
    from skillward.trust.approvals import (
        ActivationRequest,
        Answer,
        ApprovalRecord,
        Grants,
        Scope,
    )
    from skillward.trust.book import ApprovalBook

__all__ = [
    "add_commands",
    "approvals_list",
    "approvals_reset",
    "approvals_revoke",
    "approve",
    "record_json",
]


def add_commands(commands: Commands) -> None:
    approve_ = add_command(
        commands,
        "approve",
        approve,
        help="review a skill and approve it (remembered by default), bound to its content",
    )
    approve_.add_argument("ref", metavar="REF")
    approve_.add_argument(
        "--scope",
        choices=["once", "session", "remember"],
        default="remember",
        help="with --yes: how long the approval lasts (default: remember)",
    )
    approve_.add_argument(
        "--yes",
        action="store_true",
        help="approve without a prompt (you named the skill: that is the consent)",
    )
    approve_.add_argument(
        "--grant-tools",
        action="store_true",
        help="grant the tools its allowed-tools requests too, kept with this approval",
    )
    approvals = commands.add_parser("approvals", help="remembered approvals: list, revoke, reset")
    actions = approvals.add_subparsers(dest="approvals_command", metavar="ACTION", required=True)
    add_command(
        actions, "list", approvals_list, help="every remembered approval, revoked ones included"
    )
    revoke = add_command(
        actions,
        "revoke",
        approvals_revoke,
        help="revoke a remembered approval (it is asked again)",
    )
    revoke.add_argument("ref", metavar="REF", help="LABEL:NAME, LABEL:PATH, LABEL:URI or NAME")
    reset = add_command(
        actions,
        "reset",
        approvals_reset,
        help="forget every remembered approval and use a new key from now on",
    )
    reset.add_argument(
        "--yes", action="store_true", help="do not ask first (at a terminal, it asks)"
    )


# --- approve -----------------------------------------------------------------------------


@over_host
async def approve(args: argparse.Namespace, on: Connected) -> int:
    from skillward.trust.approvals import Decision, Grants, Scope, describe_scope

    request = await on.host.approval_request(args.ref)
    book = on.approver.book
    qualified = on.host.registry.qualified_ref(request.record)
    grants = _tool_grant(request, on.terminal) if args.grant_tools else Grants()
    if args.yes:
        answer, recorded = await _approve_now(book, request, Scope(args.scope), grants)
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
        on.terminal.json(
            {
                "qualified": qualified,
                "uri": request.key.locator,
                "scope": recorded.value,
                "requested_tools": list(request.requested_tools),
                "granted_tools": granted,
                "tools_refused": request.tools_refused if request.requested_tools else None,
            }
        )
        return EXIT_OK
    note = f"{qualified}: {describe_scope(recorded)}"
    if recorded is not Scope.REMEMBER:
        note += " (nothing is kept once this command ends)"
    if granted:
        note += f"; tools granted: {', '.join(granted)}"
    on.terminal.note(note)
    return EXIT_OK


async def _approve_now(
    book: ApprovalBook, request: ActivationRequest, scope: Scope, grants: Grants
) -> tuple[Answer, Scope]:
    """``approve --yes``: the answer, and the scope it was recorded for."""
    from skillward.trust.approvals import Answer, Decision

    answer = Answer(Decision.APPROVE, scope, grants)
    return answer, await book.grant(request, answer)


def _tool_grant(request: ActivationRequest, terminal: Terminal) -> Grants:
    """What ``--grant-tools`` grants: the tools the skill requests, if it can be granted any."""
    from skillward.trust.approvals import Grants

    tools = request.requested_tools
    if not request.record.origin.is_mcp:
        terminal.note("a local skill's allowed-tools follow the host's own rules; nothing to grant")
        return Grants()
    if not tools:
        terminal.note("it requests no tools; only the skill is approved")
        return Grants()
    refused = request.tools_refused
    if refused is not None:
        terminal.note(f"no tool can be granted ({refused}); only the skill is approved")
        return Grants()
    return Grants(tools=tools)


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


def approvals_list(args: argparse.Namespace, terminal: Terminal) -> int:
    """Every remembered approval; a store that cannot be used exits 3 saying why, never
    as a store with nothing in it."""
    kept = store(terminal)
    records = kept.records()
    why = kept.unavailable()
    if args.json:
        terminal.json({"remember_unavailable": why, "approvals": [record_json(r) for r in records]})
    else:
        if why is not None:
            terminal.error(RememberUnavailable(f"remembered approvals are unavailable: {why}"))
        if records or why is None:
            terminal.approvals(records)
    return EXIT_OK if why is None else RememberUnavailable.exit_code


def approvals_revoke(args: argparse.Namespace, terminal: Terminal) -> int:
    import anyio

    from skillward.terminal.prompts import TerminalApprover
    from skillward.trust.book import ApprovalBook

    kept = store(terminal)
    _usable(kept.unavailable())
    record = _stored_match(kept.records(), args.ref)
    book = ApprovalBook(TerminalApprover(terminal), store=kept, audit=audit_trail())
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


def approvals_reset(args: argparse.Namespace, terminal: Terminal) -> int:
    kept = store(terminal)
    _usable(kept.unavailable())
    trail = audit_trail()
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


def _usable(why: str | None) -> None:
    """Changing remembered approvals needs the store: say why it cannot be used."""

    if why is not None:
        raise RememberUnavailable(why)


def _stored_match(records: Sequence[ApprovalRecord], reference: str) -> ApprovalRecord:
    """The remembered approval ``reference`` names, from the records alone (no server)."""
    from skillward.core.registry import parse_reference

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
