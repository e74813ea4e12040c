"""The running gateways, reached over their approval sockets: the questions they wait on
(``approvals pending``), and one answered (``approve REF`` without ``--server`` or
``--config``).

Each gateway's socket is in the user's private runtime directory; one nobody listens on
any more is removed once it is old. The question is shown with the terminal's own prompt,
rendered from the facts the gateway sends (the same facts every prompt renders), and the
answer goes back with the content hash that was shown: if the skill changed meanwhile,
the gateway approves nothing. Imports neither ``mcp`` nor the host.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import anyio

from skillward.cli._context import EXIT_OK
from skillward.core.config import Limits
from skillward.core.errors import (
    AmbiguousName,
    AnswerRefused,
    ApprovalDenied,
    ApprovalError,
    InvalidApprovalToken,
    PolicyDenied,
    RememberUnavailable,
    SkillwardError,
    StaleAnswer,
    TransportError,
    UsageError,
    printable,
)
from skillward.edge._dirs import runtime_dir
from skillward.edge._usersocket import Peer, exchange, remove_stale, sockets
from skillward.terminal._render import interactive
from skillward.terminal.prompts import Terminal, TerminalApprover
from skillward.trust._socketwire import (
    SOCKET_PREFIX,
    AnswerReply,
    AnswerRequest,
    ErrorReply,
    ListReply,
    ListRequest,
    ViewReply,
    ViewRequest,
    Waiting,
    encode,
    parse_reply,
)
from skillward.trust.approvals import Answer, Decision, Scope

__all__ = ["Found", "answer_waiting", "find_waiting", "show_waiting", "why_not"]

#: Seconds a gateway has to answer a request (a view fetches SKILL.md from its server).
_TIMEOUT = 90.0
#: The errors a gateway's error reply may name, raised here as themselves.
_ERRORS: dict[str, type[SkillwardError]] = {
    error.__name__: error
    for error in (
        AnswerRefused,
        StaleAnswer,
        InvalidApprovalToken,
        ApprovalError,
        ApprovalDenied,
        RememberUnavailable,
        PolicyDenied,
        TransportError,
        UsageError,
    )
}


@dataclass(frozen=True, slots=True)
class Found:
    """One question a running gateway waits on."""

    socket: Path
    #: The gateway's process, as the kernel names it.
    peer: Peer
    #: Its name (``serverInfo.name``), as it says.
    gateway: str
    question: Waiting

    def describe(self) -> str:
        """One line: the skill, the gateway, the client waiting, since when."""
        since = time.strftime("%H:%M:%S", time.localtime(self.question.created))
        client = self.question.client
        who = f"client {client!r} (the name it reports)" if client else "its client"
        return (
            f"{self.question.ref}: gateway {self.gateway!r} (pid {self.peer.pid}), for {who}, "
            f"waiting since {since}"
        )


async def _exchange(
    path: Path, request: ListRequest | ViewRequest | AnswerRequest
) -> tuple[ListReply | ViewReply | AnswerReply | ErrorReply, Peer]:
    """The gateway's reply to ``request``, within :data:`_TIMEOUT`, and who answered."""
    try:
        with anyio.fail_after(_TIMEOUT):
            line, peer = await exchange(path, encode(request), max_reply=Limits().message_bytes)
    except TimeoutError:
        raise UsageError(f"the gateway at {path} did not answer in {_TIMEOUT:g} seconds") from None
    return parse_reply(line), peer


async def _ask(path: Path, request: ListRequest | ViewRequest | AnswerRequest) -> object:
    """The gateway's reply to ``request``; its error reply raised as the error it names."""
    reply, _ = await _exchange(path, request)
    if isinstance(reply, ErrorReply):
        raise _ERRORS.get(reply.error, UsageError)(f"the gateway said: {reply.message}")
    return reply


async def find_waiting(ref: str | None, terminal: Terminal) -> tuple[list[Found], int]:
    """The questions the running gateways wait on (about the skill ``ref`` names, or all),
    and how many gateways answered. A socket nobody listens on is passed over (removed
    once it is old); one that fails is noted and passed over."""
    try:
        paths = sockets(runtime_dir(), SOCKET_PREFIX)
    except (OSError, UsageError) as why:
        terminal.note(f"running gateways cannot be asked: {why_not(why)}")
        return [], 0
    found: list[Found] = []
    reached = 0
    for path in paths:
        try:
            reply, peer = await _exchange(path, ListRequest(op="pending", ref=ref))
        except ConnectionRefusedError:
            remove_stale(path)  # its gateway is gone
            continue
        except (OSError, UsageError) as why:
            terminal.note(f"the gateway at {path} did not answer: {printable(str(why))}")
            continue
        if not isinstance(reply, ListReply):
            terminal.note(f"the gateway at {path} did not list what waits")
            continue
        reached += 1
        found += [Found(path, peer, reply.gateway, question) for question in reply.questions]
    return found, reached


def why_not(error: OSError | UsageError) -> str:
    """What went wrong, with the fix where there is one."""
    if isinstance(error, UsageError):
        return error.message + (f" (fix: {error.hint})" if error.hint else "")
    return str(error)


def show_waiting(found: list[Found], reached: int, terminal: Terminal, *, as_json: bool) -> None:
    """``approvals pending``: each question, with the command that answers it."""
    if as_json:
        terminal.json(
            {
                "gateways": reached,
                "pending": [
                    {
                        "ref": item.question.ref,
                        "id": item.question.id,
                        "content_hash": item.question.content_hash,
                        "client_unverified": item.question.client,
                        "gateway": item.gateway,
                        "pid": item.peer.pid,
                        "socket": str(item.socket),
                        "created": item.question.created,
                        "expires": item.question.expires,
                        "command": f"skillward approve {item.question.ref}",
                    }
                    for item in found
                ],
            }
        )
        return
    if not found:
        running = f"{reached} gateway{'s' if reached != 1 else ''} running"
        terminal.plain(f"Nothing waits for approval ({running}).")
        return
    for item in found:
        terminal.plain(printable(item.describe(), limit=2000))
        terminal.plain(f"  answer it: skillward approve {printable(item.question.ref)}")


def _one(found: list[Found], ref: str, terminal: Terminal) -> Found:
    """The question to answer: the only one, or the one the person picks."""
    if len(found) == 1:
        return found[0]
    shown = [item.describe() for item in found]
    if len(found) > 9 or not interactive(sys.stdin):
        raise AmbiguousName(
            f"{len(found)} questions about {ref!r} wait in running gateways",
            candidates=[printable(line, limit=300) for line in shown],
        )
    picked = terminal.pick(f"{len(found)} questions about {ref!r} wait; which one?", shown)
    if picked is None:
        raise ApprovalDenied(f"no question about {ref!r} was chosen; nothing was answered")
    return found[picked]


async def answer_waiting(args: argparse.Namespace, terminal: Terminal, found: list[Found]) -> int:
    """Show one question (the terminal's prompt, from the gateway's facts), and send the
    person's answer with the content hash shown."""
    item = _one(found, args.ref, terminal)
    question = item.question
    if args.grant_tools:
        terminal.note("the gateway grants no tools; only the skill is answered")
    if args.yes:  # the person named the skill: that is the consent
        answer = Answer(Decision.APPROVE, Scope(args.scope))
    else:
        terminal.note(f"a question {item.describe()}")

        async def view() -> str:
            reply = await _ask(item.socket, ViewRequest(op="view", id=question.id))
            assert isinstance(reply, ViewReply)
            return reply.skill_md

        answer = await TerminalApprover(terminal).ask_facts(question.facts, viewer=view)
    approving = answer.decision is Decision.APPROVE
    reply = await _ask(
        item.socket,
        AnswerRequest(
            op="answer",
            id=question.id,
            decision="approve" if approving else "deny",
            scope=answer.scope.value,
            content_hash=question.content_hash,
        ),
    )
    assert isinstance(reply, AnswerReply)
    if not approving:
        raise ApprovalDenied(f"{question.ref!r} was not approved; {reply.note}")
    if args.json:
        terminal.json(
            {
                "qualified": question.ref,
                "uri": question.facts.uri,
                "scope": reply.scope,
                "gateway": item.gateway,
                "pid": item.peer.pid,
                "client_unverified": question.client,
                "note": reply.note,
            }
        )
    else:
        terminal.note(f"{question.ref}: {reply.note}")
    return EXIT_OK
