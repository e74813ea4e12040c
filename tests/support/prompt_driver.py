"""The terminal approver and the approval book in a process of their own, for pty tests.

    python -m tests.support.prompt_driver DIR VERSION

asks about the ``refunds`` skill as served at VERSION (``v1`` or ``v2``, which rotates
one file), remembering approvals in DIR, and prints the decision and the scope stored.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from skillward.core.origins import Origin
from skillward.core.registry import SkillRecord
from skillward.terminal.prompts import Terminal, TerminalApprover
from skillward.trust._store import FileApprovalStore
from skillward.trust.approvals import ActivationRequest
from skillward.trust.book import ApprovalBook
from tests.support.approvals import HTTP, make_entry
from tests.support.keys import FileKeys

VERSIONS = {
    "v1": {"notes.md": b"original notes\n", "templates/email.md": b"Hello\n"},
    "v2": {"notes.md": b"rotated notes\n", "templates/email.md": b"Hello\n"},
}
SKILL_MD_TEXT = "---\nname: refunds\n---\n# Refunds\n\nStep one: read the policy.\n"


async def main(directory: Path, version: str) -> None:
    terminal = Terminal()
    store = FileApprovalStore(directory / "approvals.json", keys=FileKeys(directory / "keys.json"))
    book = ApprovalBook(TerminalApprover(terminal), store=store, notify=terminal.note)
    entry = make_entry(VERSIONS[version])
    record = SkillRecord.from_entry(Origin("mcp", "acme", "Acme"), entry)

    async def view() -> str:
        return SKILL_MD_TEXT

    decision = await book.decide(ActivationRequest(record, identity=HTTP, viewer=view))
    stored = store.get(record.key)
    shown = stored.scope.value if stored and stored.revoked is None else "none"
    print(f"decision: {decision.value}; stored: {shown}", flush=True)


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]), sys.argv[2])
