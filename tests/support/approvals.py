"""Entries, requests, a scripted prompter, and a store and a book that count what they
do, for approval tests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from skillward.core.origins import Origin, SkillKey
from skillward.core.registry import SkillRecord
from skillward.core.verify import sha256_digest
from skillward.core.wire import SkillEntry, parse_entry
from skillward.trust.approvals import (
    ActivationRequest,
    Answer,
    ApprovalRecord,
    ApprovalStorage,
    Decision,
    Prompter,
    Question,
    Scope,
    Verdict,
)
from skillward.trust.book import ApprovalBook

ROOT = "skill://acme/billing/refunds"
SKILL_MD = f"{ROOT}/SKILL.md"
HTTP = "http:https://acme.example/mcp"


def make_entry(
    files: dict[str, bytes] | None = None,
    *,
    root: str = ROOT,
    dynamic: bool = False,
    extra: dict[str, Any] | None = None,
) -> SkillEntry:
    """An entry for the skill at ``root``; ``files`` maps paths below it to their bytes,
    ``extra`` adds frontmatter fields."""
    name = root.rsplit("/", 1)[-1]
    fields: dict[str, Any] = {"name": name, "description": "Refund policy", **(extra or {})}
    files = {"SKILL.md": b"---\nname: x\n---\nbody\n", **(files or {})}
    resources: Any = (
        "dynamic"
        if dynamic
        else [
            {"uri": f"{root}/{path}", "digest": sha256_digest(data), "size": len(data)}
            for path, data in files.items()
        ]
    )
    return parse_entry({"uri": f"{root}/SKILL.md", "frontmatter": fields, "resources": resources})


def make_request(
    entry: SkillEntry, *, label: str = "acme", identity: str | None = HTTP
) -> ActivationRequest:
    record = SkillRecord.from_entry(Origin("mcp", label, "Acme"), entry)
    return ActivationRequest(record, identity=identity)


@dataclass
class Scripted:
    """A Prompter that answers from a script, in order, and keeps every question."""

    answers: list[Answer] = field(default_factory=list)
    asked: list[list[Question]] = field(default_factory=list)

    async def ask(self, questions: Sequence[Question]) -> list[Answer]:
        self.asked.append(list(questions))
        return [self.answers.pop(0) if self.answers else Answer(Decision.DENY) for _ in questions]

    @property
    def questions(self) -> list[Question]:
        return [q for batch in self.asked for q in batch]


def yes(scope: Scope) -> Answer:
    return Answer(Decision.APPROVE, scope)


@dataclass
class CountedStore:
    """An ApprovalStorage over a real one that counts each record it is asked for."""

    store: ApprovalStorage
    gets: int = 0

    def unavailable(self) -> str | None:
        return self.store.unavailable()

    def get(self, key: SkillKey) -> ApprovalRecord | None:
        self.gets += 1
        return self.store.get(key)

    def put(self, record: ApprovalRecord, *, replaces: ApprovalRecord | None = None) -> None:
        self.store.put(record, replaces=replaces)

    def revoke(self, key: SkillKey, *, reason: str) -> bool:
        return self.store.revoke(key, reason=reason)

    def records(self) -> list[ApprovalRecord]:
        return self.store.records()

    def reset(self) -> None:
        self.store.reset()


class CountingBook(ApprovalBook):
    """The real book, counting how often it computes a verdict from its records."""

    def __init__(self, prompter: Prompter, **options: Any) -> None:
        super().__init__(prompter, **options)
        self.verdicts = 0

    async def verdict(self, request: ActivationRequest) -> Verdict:
        self.verdicts += 1
        return await super().verdict(request)
