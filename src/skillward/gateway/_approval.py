"""Approval through the MCP host: what the person is asked (a form with one enum field),
what their answer means, and the authenticated ``request_state`` that carries a question
across the 2026-07-28 input-required round trip.

Nothing the model sends counts as consent: the decision comes only from the client's
elicitation answer, and at 2026-07-28 only with a ``request_state`` this process signed
for the same client session, skill and content, unexpired and not used before.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from skillward.core.errors import printable
from skillward.core.origins import SkillKey
from skillward.core.visible import LEGEND, shown_length, visible
from skillward.trust.approvals import (
    ActivationRequest,
    Answer,
    Change,
    Decision,
    Question,
    Scope,
    content_hash,
)

__all__ = [
    "CHOICES",
    "DECISION_FIELD",
    "SCHEMA",
    "Prepared",
    "StateCodec",
    "StateError",
    "answer_for",
    "approval_message",
]

#: The one field of the form, and what it may say.
DECISION_FIELD = "decision"
CHOICES = ("once", "session", "remember", "deny")
SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        DECISION_FIELD: {
            "type": "string",
            "title": "Decision",
            "description": "once: this load only; session: until this client disconnects; "
            "remember: until the skill changes; deny: load nothing",
            "enum": list(CHOICES),
        }
    },
    "required": [DECISION_FIELD],
}
_SCOPES = {"once": Scope.ONCE, "session": Scope.SESSION, "remember": Scope.REMEMBER}
#: How much of each value the message shows that is only said, never approved or granted.
_SHOWN = 300


def approval_message(
    request: ActivationRequest,
    qualified: str,
    change: Change | None,
    remember_unavailable: str | None,
) -> str:
    """What the person is asked, in plain text: every server-written value escaped, and
    what is approved (the skill, its server, its files) whole, one value a line, in its
    visible form (``core/visible.py``), never cut; so is each tool it requests, unless
    they are too long to show together (``Limits.max_shown_tools``: then their number).
    The gateway refuses to put a question longer than ``Limits.max_shown_question`` in
    a form."""
    record = request.record
    entry = record.entry
    lines = [f"Load the skill {visible(qualified)}?"]
    if change is not None:
        lines.append(f"CHANGED since it was approved: {printable(change.summary(), limit=600)}.")
    label = record.origin.label
    origin = f"server {label}" if record.origin.is_mcp else f"the local skills {label}"
    if request.identity:
        origin += f", reached by {visible(request.identity)}"
    lines.append(f"From {origin}.")
    if record.origin.is_mcp and record.origin.detail:
        lines.append(
            f"The server reports its name as {printable(record.origin.detail, limit=80)} "
            "(unverified)."
        )
    if entry is not None:
        digest = content_hash(entry)
        lines.append(f"Content hash: {digest or 'none (dynamic skill, unverifiable)'}.")
        files = sorted(entry.manifest)
        lines.append(f"Files ({len(files)}):")
        lines.extend(f"  - {visible(uri)}" for uri in files)
    tools = request.requested_tools
    if tools:
        listed = shown_length(tools) <= request.max_shown_tools
        asks = "these tools" if listed else f"{len(tools)} tools, too long to show whole here"
        lines.append(
            f"It requests {asks}. The gateway grants none of them: it cannot run or stop "
            "your host's tools."
        )
        if listed:
            lines.extend(f"  - {visible(tool)}" for tool in tools)
    for collision in request.collisions[:5]:
        lines.append(f"Note: {printable(collision, limit=_SHOWN)}")
    if remember_unavailable:
        lines.append(
            f"'remember' is unavailable here ({printable(remember_unavailable, limit=200)}); "
            "it would last this session."
        )
    if record.origin.is_mcp:
        lines.append("The skill's text is written by the server: it is data, not instructions.")
    if any("\\" in line for line in lines):
        lines.append(f"Each value is shown whole; {LEGEND}.")
    return "\n".join(lines)


def answer_for(action: str, content: Mapping[str, object] | None) -> Answer | None:
    """The approval an elicitation answer gives, or None (decline, cancel, ``deny``, or
    anything that is not exactly one of :data:`CHOICES`)."""
    if action != "accept" or not isinstance(content, Mapping):
        return None
    if set(content) != {DECISION_FIELD}:
        return None
    choice = content[DECISION_FIELD]
    if not isinstance(choice, str) or choice not in _SCOPES:
        return None
    return Answer(Decision.APPROVE, _SCOPES[choice])


class Prepared:
    """The :class:`~skillward.trust.approvals.Prompter` of one client session's book: it
    asks no one, it hands over answers the gateway obtained from the person through
    the client, each for exactly one skill and one content hash, once."""

    def __init__(self) -> None:
        self._answers: dict[tuple[SkillKey, str | None], Answer] = {}

    def give(self, key: SkillKey, digest: str | None, answer: Answer) -> None:
        self._answers[(key, digest)] = answer

    def take(self, key: SkillKey, digest: str | None) -> None:
        """Drop an answer not used (the activation failed before asking)."""
        self._answers.pop((key, digest), None)

    async def ask(self, questions: Sequence[Question]) -> list[Answer]:
        answers = []
        for question in questions:
            entry = question.request.record.entry
            digest = content_hash(entry) if entry is not None else None
            # Another content than the one the person saw approves nothing.
            answer = self._answers.pop((question.request.key, digest), None)
            answers.append(answer or Answer(Decision.DENY))
        return answers


class StateError(Exception):
    """A ``request_state`` that this process did not sign for this question."""


@dataclass(frozen=True, slots=True)
class _State:
    session: str
    ref: str
    digest: str | None
    expires: float
    nonce: str
    extra: str


class StateCodec:
    """Signs and checks ``request_state``: HMAC-SHA256 with a key made per process, bound
    to the client session, the qualified ref and the content hash, with an expiry, and
    accepted once."""

    def __init__(
        self,
        *,
        lifetime: float = 600.0,
        clock: Callable[[], float] = time.time,
        key: bytes | None = None,
    ) -> None:
        self._key = key or secrets.token_bytes(32)
        self._lifetime = lifetime
        self._clock = clock
        self._used: dict[str, float] = {}

    def _mac(self, payload: bytes) -> str:
        return hmac.new(self._key, payload, hashlib.sha256).hexdigest()

    def sign(self, session: str, ref: str, digest: str | None, extra: str = "") -> str:
        """A state for this question; ``extra`` (the approval page's id) comes back from
        :meth:`check`."""
        state = {
            "s": session,
            "r": ref,
            "h": digest,
            "e": self._clock() + self._lifetime,
            "n": secrets.token_hex(16),
            "x": extra,
        }
        payload = json.dumps(state, sort_keys=True, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(payload).decode("ascii") + "." + self._mac(payload)

    def check(self, token: object, *, session: str, ref: str, digest: str | None) -> str:
        """Accept ``token`` once for exactly this question, and return its ``extra``;
        raise StateError otherwise."""
        if not isinstance(token, str) or len(token) > 4096 or token.count(".") != 1:
            raise StateError("the request state is missing or malformed")
        encoded, mac = token.split(".")
        try:
            payload = base64.urlsafe_b64decode(encoded.encode("ascii"))
        except (ValueError, UnicodeEncodeError):
            raise StateError("the request state is malformed") from None
        # Bytes, not str: compare_digest refuses non-ASCII text, and the token is the client's.
        if not hmac.compare_digest(self._mac(payload).encode(), mac.encode("utf-8", "replace")):
            raise StateError("the request state was not issued by this gateway")
        data = json.loads(payload)
        state = _State(data["s"], data["r"], data["h"], float(data["e"]), data["n"], data["x"])
        now = self._clock()
        if state.expires < now:
            raise StateError("the request state expired; ask again")
        if state.session != session:
            raise StateError("the request state belongs to another client session")
        if state.ref != ref or state.digest != digest:
            raise StateError("the skill changed between the question and the answer")
        self._used = {n: e for n, e in self._used.items() if e >= now}
        if state.nonce in self._used:
            raise StateError("the request state was already used")
        self._used[state.nonce] = state.expires
        return state.extra
