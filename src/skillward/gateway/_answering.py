"""The gateway's approval socket: the questions it could not put through its MCP client
(a client without elicitation, a question too long for its form, one cancelled or not
answered in time), parked for the client session that asked, answered by
``skillward approve`` from any terminal of the same user.

``skillward approve REF`` lists the questions waiting here (``pending``), shows one with
the terminal's own prompt from these facts, may read its SKILL.md (``view``: fetched and
verified here, for the person only), and sends the person's answer (``answer``) with the
content hash it showed. ``once`` and ``deny`` wait for the client session's next
``read_skill`` of that skill, which loads it once, or is refused; ``session`` and
``remember`` are recorded at once in that session's book (``remember`` in the store
too), so that its next ``read_skill``, and for ``remember`` every later gateway, loads it
without asking. Each answer is audited with where it came from: the socket and the
answering process, as the kernel names it. No ``mcp``.
"""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
from anyio.abc import TaskStatus

from skillward.core.config import Limits
from skillward.core.errors import AnswerRefused, SkillwardError, UsageError
from skillward.edge._usersocket import Peer, serve_lines
from skillward.gateway._sessions import Sessions
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
    parse_request,
)
from skillward.trust.approvals import Answer, Decision, Scope
from skillward.trust.audit import AuditTrail, as_client
from skillward.trust.parking import ParkedApproval, ParkedApprovals

__all__ = ["ANSWERED", "ApprovalSocket"]

logger = logging.getLogger("skillward")

#: How an answer through the socket is audited (``via`` says which process gave it).
ANSWERED = "approved with skillward approve, through the gateway's approval socket"
DENIED = "denied with skillward approve, through the gateway's approval socket"


class ApprovalSocket:
    """Answers ``skillward approve`` about the questions in ``parked``."""

    def __init__(
        self,
        parked: ParkedApprovals,
        sessions: Sessions,
        *,
        audit: AuditTrail,
        name: str,
        version: str,
        limits: Limits,
    ) -> None:
        self.parked = parked
        self.sessions = sessions
        self.audit = audit
        self.name = name
        self.version = version
        self.limits = limits

    async def run(
        self, directory: Path, *, task_status: TaskStatus[Path] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Listen in ``directory`` until cancelled; started, it gives the socket's path."""
        await serve_lines(
            directory,
            SOCKET_PREFIX,
            self.handle,
            max_request=self.limits.max_gateway_request_bytes,
            task_status=task_status,
        )

    async def handle(self, line: bytes, peer: Peer) -> bytes:
        """One request from ``peer`` (a process of this user), answered."""
        try:
            request = parse_request(line)
            if isinstance(request, ListRequest):
                return encode(self._list(request))
            if isinstance(request, ViewRequest):
                return encode(await self._view(request))
            return encode(await self._answer(request, peer))
        except SkillwardError as error:
            return encode(ErrorReply(op="error", error=type(error).__name__, message=str(error)))

    def _list(self, request: ListRequest) -> ListReply:
        questions = tuple(
            Waiting(
                id=parked.id,
                ref=parked.ref,
                content_hash=parked.content_hash,
                facts=parked.facts,
                client=parked.client,
                created=parked.created,
                expires=parked.expires,
            )
            for parked in self.parked.pending(ref=request.ref)
        )
        return ListReply(op="pending", gateway=self.name, version=self.version, questions=questions)

    async def _view(self, request: ViewRequest) -> ViewReply:
        viewer = self.parked.get(request.id).pending.request.viewer
        if viewer is None:
            raise UsageError("the gateway cannot show this skill's SKILL.md")
        return ViewReply(op="view", skill_md=await viewer())

    async def _answer(self, request: AnswerRequest, peer: Peer) -> AnswerReply:
        parked = self.parked.get(request.id)
        session = self.sessions.find(parked.waiter)
        if session is None:
            self.parked.withdraw(parked.id)
            raise AnswerRefused(
                "the client session that asked is gone (it disconnected, or the gateway "
                "closed it to make room); nothing was approved"
            )
        via = f"socket {peer.describe()}"
        approving = request.decision == "approve"
        answer = self.parked.answer(
            parked.id,
            request.decision,
            request.scope,
            content_hash=request.content_hash,
            how=ANSWERED if approving else DENIED,
            via=via,
        )
        if approving and answer.scope is not Scope.ONCE:
            # Recorded now, in that session's book; what the rules let it record for no
            # longer than this load stays for read_skill to take.
            answer = await session.book.settle(parked.pending, answer)
            if answer.scope is not Scope.ONCE:
                self.parked.withdraw(parked.id)
        self._audit(parked, answer)
        return AnswerReply(
            op="answer",
            decision=request.decision,
            scope=answer.scope.value if approving else None,
            note=_note(parked, answer, Scope(request.scope)),
        )

    def _audit(self, parked: ParkedApproval, answer: Answer) -> None:
        """The person's answer, as given through the socket (the load it allows, if any,
        is audited when it happens)."""
        request = parked.pending.request
        key = request.key
        approved = answer.decision is Decision.APPROVE
        with as_client(parked.client):
            self.audit.record(
                "approval" if approved else "denial",
                "approved" if approved else "denied",
                reason=(answer.how or ANSWERED) if approved else DENIED,
                label=key.origin,
                identity=request.identity,
                skill_uri=key.locator,
                content_hash=parked.content_hash,
                gate="activation",
                scope=answer.scope.value if approved else None,
                via=answer.via,
            )


def _note(parked: ParkedApproval, answer: Answer, asked: Scope) -> str:
    """What the answer did, for the person who gave it (``asked``: the scope chosen)."""
    ref = parked.ref
    if answer.decision is not Decision.APPROVE:
        return f"denied: the client's next read_skill of {ref} is refused"
    if answer.scope is Scope.ONCE:
        return f"approved once: the client's next read_skill of {ref} loads it"
    if answer.scope is Scope.SESSION:
        said = f"approved for the client's session: read_skill of {ref} loads it until it ends"
        if asked is Scope.REMEMBER:
            said = "not remembered (the gateway's messages say why); " + said
        return said
    return f"approved and remembered until the skill changes: read_skill of {ref} loads it"
