"""Parked approvals: questions put to a person and answered from outside the code that asks.

A host that cannot ask the person where it decides (the gateway, when its MCP client
has no elicitation; a web backend, whose person answers in a browser) parks the
:class:`~skillward.trust.pending.PendingApproval` in :class:`ParkedApprovals`. Whoever
reaches the person lists what waits (:meth:`ParkedApprovals.pending`), shows each
question's facts (the :class:`~skillward.trust.pending.ApprovalFacts` every prompt
renders, JSON-safe) and answers it by its id (:meth:`ParkedApprovals.answer`), naming
the content hash the person was shown.

An answer approves only the content that was shown: one given for another content hash
approves nothing (:class:`~skillward.core.errors.StaleAnswer`). A question is answered
once (a second answer is :class:`~skillward.core.errors.AnswerRefused`), and only before
it expires; one nobody answers in time is reported as a timeout
(:class:`~skillward.core.errors.ApprovalTimedOut`), never as a refusal. Answering is
safe from any thread or event loop (a web framework's handler may run on another): the
state is held under a lock, and the task waiting for the answer is woken on its own
event loop.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel

from skillward.core.errors import AnswerRefused, ApprovalTimedOut, StaleAnswer, UsageError
from skillward.core.registry import parse_reference
from skillward.trust.approvals import Answer, Decision, Scope
from skillward.trust.pending import ApprovalFacts, PendingApproval

__all__ = ["MAX_PARKED", "ParkedApproval", "ParkedApprovals"]

#: Questions parked at once, at most: past it the oldest is dropped (nobody answered it).
MAX_PARKED = 256


@dataclass(frozen=True, slots=True, eq=False)
class ParkedApproval:
    """One question waiting for a person's answer."""

    #: Random (128 bits): how an answer names it.
    id: str
    #: Who waits for the answer (the client session, the web session): opaque.
    waiter: str
    #: The name the waiting client reports for itself (unverified), when known.
    client: str | None
    #: Seconds since the epoch.
    created: float
    expires: float
    #: The decision it is about: the answer is taken for exactly its content.
    pending: PendingApproval = field(repr=False)

    @property
    def facts(self) -> ApprovalFacts:
        """What the person is shown."""
        return self.pending.facts

    @property
    def ref(self) -> str:
        """The qualified ref (``label:name``) the host's catalog names it by."""
        return self.pending.facts.ref

    @property
    def content_hash(self) -> str | None:
        """The content an answer approves (None for a dynamic or local skill)."""
        return self.pending.content_hash

    def matches(self, reference: str) -> bool:
        """Whether ``reference`` (a ref as ``skillward approve`` takes it: ``label:name``,
        ``name``, a path or a URI) names this question's skill."""
        if reference == self.ref:
            return True
        facts = self.facts
        try:
            ref = parse_reference(reference)
        except UsageError:
            return False
        if facts.uri is not None:
            return ref.names(facts.origin_label, facts.uri)
        named = ref.label in (None, facts.origin_label)
        return named and ref.kind == "name" and ref.value == facts.name

    def to_json(self) -> dict[str, Any]:
        """Its JSON form, for a web page or an API: ``id``, ``ref``, ``content_hash``,
        ``facts`` (every fact a prompt shows, server text as written: escape it for your
        medium), ``client``, ``created`` and ``expires``. The waiter is left out."""
        return {
            "id": self.id,
            "ref": self.ref,
            "content_hash": self.content_hash,
            "facts": self.facts.to_json(),
            "client": self.client,
            "created": self.created,
            "expires": self.expires,
        }


@dataclass(eq=False)
class _Slot:
    parked: ParkedApproval
    answer: Answer | None = None
    #: The waiting task's event, its event loop and that loop's thread (see :meth:`wait`).
    wake: tuple[anyio.Event, object, int] | None = None


def _decision(value: Decision | str) -> Decision:
    try:
        return Decision(value)
    except ValueError:
        raise AnswerRefused("a decision is approve or deny") from None


def _scope(value: Scope | str) -> Scope:
    try:
        return Scope(value)
    except ValueError:
        raise AnswerRefused("a scope is once, session or remember") from None


class ParkedApprovals:
    """The questions waiting for an answer from outside, each until it expires.

    ``lifetime``: seconds a question waits. ``clock``: seconds since the epoch.
    """

    def __init__(
        self,
        *,
        lifetime: float = 600.0,
        clock: Callable[[], float] = time.time,
        limit: int = MAX_PARKED,
    ) -> None:
        self.lifetime = lifetime
        self._clock = clock
        self._limit = limit
        self._slots: dict[str, _Slot] = {}
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        """Forget the questions past their expiry (under the lock)."""
        for key in [k for k, s in self._slots.items() if s.parked.expires < now]:
            del self._slots[key]

    def park(
        self, pending: PendingApproval, *, waiter: str = "", client: str | None = None
    ) -> ParkedApproval:
        """Park ``pending`` for ``waiter``. The same waiter's question about the same
        skill is asked once: while one about the same content waits unanswered, that one
        is returned; one about other content is withdrawn."""
        if pending.settled:
            raise ValueError("nothing to ask: that approval is settled")
        with self._lock:
            now = self._clock()
            self._expire(now)
            key = pending.request.key
            for slot in list(self._slots.values()):
                parked = slot.parked
                if parked.waiter != waiter or parked.pending.request.key != key:
                    continue
                if slot.answer is None and parked.content_hash == pending.content_hash:
                    return parked
                if slot.answer is None:
                    del self._slots[parked.id]
            while len(self._slots) >= self._limit:
                del self._slots[next(iter(self._slots))]
            parked = ParkedApproval(
                id=secrets.token_urlsafe(16),
                waiter=waiter,
                client=client,
                created=now,
                expires=now + self.lifetime,
                pending=pending,
            )
            self._slots[parked.id] = _Slot(parked)
            return parked

    def pending(self, *, ref: str | None = None, waiter: str | None = None) -> list[ParkedApproval]:
        """The questions waiting for an answer, oldest first: those about the skill
        ``ref`` names, those of ``waiter``, or all."""
        with self._lock:
            self._expire(self._clock())
            waiting = [s.parked for s in self._slots.values() if s.answer is None]
        return [
            parked
            for parked in waiting
            if (waiter is None or parked.waiter == waiter) and (ref is None or parked.matches(ref))
        ]

    def get(self, question: str, *, waiter: str | None = None) -> ParkedApproval:
        """The question ``question`` names, waiting for an answer (of ``waiter`` when
        given); AnswerRefused when no such question waits."""
        with self._lock:
            return self._waiting(question, waiter).parked

    def _waiting(self, question: str, waiter: str | None) -> _Slot:
        """The slot of a question waiting for its answer (under the lock)."""
        self._expire(self._clock())
        slot = self._slots.get(question) if isinstance(question, str) else None
        if slot is None or (waiter is not None and slot.parked.waiter != waiter):
            raise AnswerRefused(
                "no question waits with that id: it was answered, withdrawn or expired "
                "(or never asked)"
            )
        if slot.answer is not None:
            raise AnswerRefused("that question was answered already; an answer counts once")
        return slot

    def answer(
        self,
        question: str,
        decision: Decision | str,
        scope: Scope | str = Scope.ONCE,
        *,
        content_hash: str | None,
        waiter: str | None = None,
        how: str | None = None,
        via: str | None = None,
    ) -> Answer:
        """Answer the question ``question`` names, from any thread or event loop.

        ``content_hash``: the content hash the person was shown. ``waiter``: when given,
        only a question of that waiter is answered (one session cannot answer
        another's). ``how`` and ``via`` go to the audit trail with the approval (how it
        was given; where from). Raise StaleAnswer when ``content_hash`` is not the
        content waiting (nothing is approved, and the question still waits), and
        AnswerRefused when no such question waits (answered already, withdrawn,
        expired), the decision or scope is not one, or the scope was not offered.
        """
        chosen = _decision(decision)
        length = _scope(scope) if chosen is Decision.APPROVE else Scope.ONCE
        with self._lock:
            slot = self._waiting(question, waiter)
            parked = slot.parked
            if content_hash != parked.content_hash:
                raise StaleAnswer(
                    "the answer was given for other content than the question waiting: the "
                    "skill changed after it was shown, so nothing was approved",
                    server=parked.facts.origin_label,
                    uri=parked.facts.uri,
                )
            offered = parked.facts.scopes
            if length not in offered:
                why = parked.facts.remember_unavailable or "not offered"
                raise AnswerRefused(f"{length.value!r} was not offered here: {why}")
            answer = Answer(chosen, length, how=how, via=via)
            slot.answer = answer
            wake = slot.wake
        if wake is not None:
            _wake(*wake)
        return answer

    async def wait(self, parked: ParkedApproval) -> Answer:
        """The answer to ``parked``, when it comes. Raise ApprovalTimedOut at its
        expiry (nobody answered: not a refusal). The question is gone afterwards, and
        withdrawn if the waiting task is cancelled."""
        event = anyio.Event()
        with self._lock:
            slot = self._slots.get(parked.id)
            if slot is not None and slot.answer is None:
                slot.wake = (event, anyio.lowlevel.current_token(), threading.get_ident())
        try:
            if slot is not None and slot.answer is None:
                with anyio.move_on_after(max(0.0, parked.expires - self._clock())):
                    await event.wait()
        finally:
            with self._lock:
                self._slots.pop(parked.id, None)
        if slot is not None and slot.answer is not None:
            return slot.answer
        facts = parked.facts
        raise ApprovalTimedOut(
            f"nobody answered the question about {facts.ref!r} in time; nothing was approved",
            server=facts.origin_label,
            uri=facts.uri,
        )

    def take(self, pending: PendingApproval, *, waiter: str = "") -> Answer | None:
        """The answer given to ``waiter``'s question about the skill ``pending`` is
        about, once, if it was given for exactly ``pending``'s content (one given for
        other content is dropped: the skill changed since)."""
        key = pending.request.key
        with self._lock:
            self._expire(self._clock())
            for slot in list(self._slots.values()):
                parked = slot.parked
                if slot.answer is None or parked.waiter != waiter:
                    continue
                if parked.pending.request.key != key:
                    continue
                del self._slots[parked.id]
                if parked.content_hash == pending.content_hash:
                    return slot.answer
        return None

    def withdraw(self, question: str) -> None:
        """Forget the question ``question`` names, answered or not."""
        with self._lock:
            self._slots.pop(question, None)


def _wake(event: anyio.Event, token: Any, thread: int) -> None:
    """Set ``event`` on its own event loop, from this thread or another."""
    if threading.get_ident() == thread:
        event.set()
        return
    with contextlib.suppress(RuntimeError):  # that loop is gone: nobody waits any more
        anyio.from_thread.run_sync(event.set, token=token)
