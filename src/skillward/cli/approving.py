"""Approving: ``approve``, and ``approvals list``, ``revoke`` and ``reset``.

``approve`` connects servers (it reviews what the skill's server serves now); the
``approvals`` commands work on the remembered approvals alone, and import neither
``mcp`` nor the host.
"""

from __future__ import annotations

import argparse
import functools
import shlex
import sys
from typing import TYPE_CHECKING

from skillward.cli._context import EXIT_OK, add_command, audit_trail, over_host, store
from skillward.core.errors import (
    AmbiguousName,
    ApprovalDenied,
    ApprovalError,
    NoTerminal,
    RememberUnavailable,
    SkillNotFound,
    UnknownServer,
)

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
    "approvals_pending",
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
        help="review a skill and approve it (remembered by default), bound to its content; "
        "without --server or --config, first the question a running gateway waits on",
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
    add_command(
        actions,
        "pending",
        approvals_pending,
        help="the questions running gateways wait on (answer one with skillward approve REF)",
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


def approve(args: argparse.Namespace, terminal: Terminal) -> int:
    """A running gateway's question about REF, when no server option names where to
    review it and one waits; otherwise the skill as the servers given serve it now."""
    import anyio

    from skillward.cli._gateways import answer_waiting, find_waiting
    from skillward.core.registry import parse_reference

    parse_reference(args.ref)  # a reference that is none is a usage error, asking no one
    asked_gateways = not _servers_named(args)
    if asked_gateways:
        found, _ = anyio.run(find_waiting, args.ref, terminal)
        if found:
            return anyio.run(answer_waiting, args, terminal, found)
    if args.yes and args.scope != "remember":
        raise _approves_nothing(args.scope, args.ref, asked_gateways=asked_gateways)
    try:
        return _approve_on_host(args, terminal)
    except (UnknownServer, SkillNotFound) as error:
        if not asked_gateways:
            raise
        raise type(error)(
            f"{error.message}; and no running skillward gateway waits for approval of "
            f"{args.ref!r} (skillward approvals pending lists what they wait on)",
            server=error.server,
            uri=error.uri,
            hint=error.hint,
            command_hint=error.command_hint,
        ) from None


def _servers_named(args: argparse.Namespace) -> bool:
    """Whether the command was told where to review the skill (a server or a skills
    directory of its own), so no gateway is asked."""
    return bool(args.config or args.server or args.skills_dir)


def _approves_nothing(scope: str, ref: str, *, asked_gateways: bool) -> ApprovalError:
    """Why an approval for ``scope`` outside a gateway approves nothing."""
    where = "no running skillward gateway waits for it, and " if asked_gateways else ""
    return ApprovalError(
        f"a {scope!r} approval of {ref!r} would approve nothing: {where}it would last only "
        "while this command runs, and this command loads nothing. Nothing was approved",
        command_hint="Remember it (--scope remember, the default), so that every later load "
        "finds it; or, for a gateway that waits on it, run `skillward approve REF` without "
        "--server or --config while the gateway runs.",
    )


@over_host
async def _approve_on_host(args: argparse.Namespace, on: Connected) -> int:
    from skillward.trust.approvals import Decision, Grants, Scope, describe_scope

    request = await on.host.approval_request(args.ref)
    book = on.approver.book
    qualified = on.host.registry.qualified_ref(request.record)
    grants = _tool_grant(request, on.terminal) if args.grant_tools else Grants()
    if args.yes:
        answer, recorded = await _approve_now(book, request, Scope(args.scope), grants)
    else:
        try:
            answer = await book.review(request, grant_tools=bool(grants.tools))
        except NoTerminal as error:  # its own hint would send the person back here
            raise NoTerminal(
                error.message,
                server=error.server,
                uri=error.uri,
                command_hint="Run it in a terminal, or approve without a prompt (you name "
                f"the skill: that is the consent): `skillward approve {shlex.quote(qualified)} "
                "--yes`.",
            ) from None
        if answer.decision is not Decision.APPROVE:
            raise ApprovalDenied(
                f"{qualified!r} was not approved",
                server=request.key.origin,
                uri=request.key.locator,
            )
        recorded = answer.scope
        if recorded is not Scope.REMEMBER:
            raise _approves_nothing(recorded.value, qualified, asked_gateways=False)
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
    on.terminal.note(f"{qualified}: {describe_scope(recorded)}")
    if granted:
        on.terminal.grants(granted)
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


def approvals_pending(args: argparse.Namespace, terminal: Terminal) -> int:
    """What the running gateways wait on, each with the command that answers it."""
    import anyio

    from skillward.cli._gateways import find_waiting, show_waiting

    found, reached = anyio.run(find_waiting, None, terminal)
    show_waiting(found, reached, terminal, as_json=args.json)
    return EXIT_OK


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
    from skillward.terminal._render import interactive

    if not args.yes and interactive(sys.stdin):
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
