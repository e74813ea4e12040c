"""One gateway session per MCP client session: its own host session (acting window,
catalog seen, gates), its own approval book (``session`` approvals), and the
remembered approvals shared with ``skillward approve`` through the one store.

The book asks no one: the gateway asks the person through the client and hands their
answer to the host's load step with the pending approval it was asked about.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from skillward.core.origins import SkillKey
from skillward.host.skillhost import SkillHost
from skillward.trust.approvals import (
    Answer,
    ApprovalRules,
    ApprovalStorage,
    Decision,
    Prompter,
    Question,
)
from skillward.trust.book import ApprovalBook

__all__ = ["BookFactory", "ClientSession", "Sessions"]

logger = logging.getLogger("skillward")

#: Client sessions held at once; past it the least recently used one is closed.
MAX_SESSIONS = 256


class _ThroughTheClient:
    """The prompter of a session's book: the gateway puts each question to the person
    through the client itself, so anything that asks the book instead is refused."""

    async def ask(self, questions: Sequence[Question]) -> list[Answer]:
        return [Answer(Decision.DENY) for _ in questions]


#: Builds a session's book, called as ``ApprovalBook`` is (another may observe or extend it).
BookFactory = Callable[..., ApprovalBook]


@dataclass
class ClientSession:
    """What one MCP client has: nothing of it is seen by another client."""

    key: str
    host: SkillHost
    book: ApprovalBook


class Sessions:
    """The client sessions over one :class:`SkillHost`'s connections."""

    def __init__(
        self,
        root: SkillHost,
        *,
        store: ApprovalStorage | None,
        rules: ApprovalRules | None = None,
        notify: Callable[[str], None] | None = None,
        limit: int = MAX_SESSIONS,
        books: BookFactory = ApprovalBook,
    ) -> None:
        self._root = root
        self._store = store
        self._rules = rules
        self._notify = notify or (lambda text: logger.warning("%s", text))
        self._limit = limit
        self._books = books
        self._sessions: OrderedDict[str, ClientSession] = OrderedDict()
        # Revocations the store could not record, held for every session's book alike.
        self._unrecorded: dict[SkillKey, str] = {}

    async def get(self, key: str) -> ClientSession:
        """The session ``key`` names, made on first use."""
        session = self._sessions.get(key)
        if session is not None:
            self._sessions.move_to_end(key)
            return session
        prompter: Prompter = _ThroughTheClient()
        book = self._books(
            prompter,
            store=self._store,
            audit=self._root.audit,
            rules=self._rules,
            notify=self._notify,
            unrecorded=self._unrecorded,
        )
        host = self._root.session(approver=book)
        session = ClientSession(key, host, book)
        # In place before anything is awaited: a second first request finds this one.
        self._sessions[key] = session
        while len(self._sessions) > self._limit:
            _, oldest = self._sessions.popitem(last=False)
            await oldest.host.aclose()  # its window only; the connections stay
        return session

    def find(self, key: str) -> ClientSession | None:
        """The session ``key`` names, if it is still held (never made)."""
        return self._sessions.get(key)

    def __len__(self) -> int:
        return len(self._sessions)

    def keys(self) -> list[str]:
        return list(self._sessions)
