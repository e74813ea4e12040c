"""The gateway's ``read_skill`` decides once per call, and says what became of the question.

The host decides (``prepare``: policy, pin, the verdict from the records, once), the
gateway asks the person through the client only when nothing settles it, and hands their
answer to the host's ``load``; a declined, cancelled or unanswered question is reported
and audited as what it was. Real parts: the gateway, the SDK's client in both eras with an
elicitation callback that answers each way, the reference server upstream, the file store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext

from skillward.trust._store import FileApprovalStore
from skillward.trust.audit import AuditEvent, AuditTrail, read_events
from tests.support.approvals import CountedStore, CountingBook
from tests.support.gated import DEPLOY_BODY_LINE, Served, build_gated_tree, serve
from tests.support.gateway import MODES, Asker, choose, client_of, gateway_over, meta, text
from tests.support.keys import MemoryKeys

pytestmark = pytest.mark.anyio

WAIT = 30


@pytest.fixture
def served(tmp_path: Path) -> Served:
    root = tmp_path / "acme"
    build_gated_tree(root, tmp_path / "marker")
    return serve(root, "acme")


class Books:
    """Builds each client session's book as a CountingBook, and keeps them."""

    def __init__(self) -> None:
        self.made: list[CountingBook] = []

    def __call__(self, *args: Any, **options: Any) -> CountingBook:
        book = CountingBook(*args, **options)
        self.made.append(book)
        return book


def events(trail: Path, kind: str) -> list[AuditEvent]:
    return [e for e in read_events(trail).events if e.event == kind]


@pytest.mark.parametrize("mode", MODES)
async def test_a_read_skill_computes_the_verdict_once_and_reads_the_store_once_a_call(
    served: Served, tmp_path: Path, mode: str
) -> None:
    store = CountedStore(FileApprovalStore(tmp_path / "approvals.json", keys=MemoryKeys()))
    books = Books()
    # 2026-07-28 asks in two calls (the question, then the retry with the answer).
    calls = 2 if mode == "auto" else 1
    with anyio.fail_after(WAIT):
        async with gateway_over([served.spec], store=store, books=books) as gateway:
            async with client_of(gateway, mode, Asker([choose("remember")]), name="a") as a:
                first = await a.call_tool("read_skill", {"ref": "deploy"})
            asked = (books.made[0].verdicts, store.gets)
            async with client_of(gateway, mode, Asker(), name="b") as b:
                again = await b.call_tool("read_skill", {"ref": "deploy"})
    assert DEPLOY_BODY_LINE in text(first)
    assert asked == (calls, calls)
    # An approval already remembered: one call, one verdict, one read of the store.
    assert DEPLOY_BODY_LINE in text(again)
    assert books.made[1].verdicts == 1
    assert store.gets == calls + 1


async def never(context: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
    """A client that puts the question up and never answers it."""
    await anyio.sleep_forever()


@pytest.mark.threat("T46")
@pytest.mark.parametrize("mode", MODES)
async def test_each_way_a_question_ends_unapproved_is_reported_and_audited_as_what_it_was(
    served: Served, tmp_path: Path, mode: str
) -> None:
    trail = tmp_path / "audit.jsonl"
    replies = {"decline": ("decline", None), "cancel": ("cancel", None), "deny": choose("deny")}
    results = {}
    with anyio.fail_after(WAIT):
        async with gateway_over([served.spec], audit=AuditTrail(trail)) as gateway:
            for name, reply in replies.items():
                async with client_of(gateway, mode, Asker([reply]), name=name) as client:
                    results[name] = await client.call_tool("read_skill", {"ref": "deploy"})
    said = {name: (meta(r)["error"], text(r)) for name, r in results.items()}
    assert said["decline"][0] == "ApprovalDenied"
    assert "was not approved (the person declined)" in said["decline"][1]
    assert said["deny"][0] == "ApprovalDenied"
    assert "was not approved (the person chose deny)" in said["deny"][1]
    # Nobody answered a cancelled question: it is not reported as a refusal.
    assert said["cancel"][0] == "ApprovalError"
    assert "was not approved: the question was cancelled (no answer)" in said["cancel"][1]
    assert "skillward approve acme:deploy" in said["cancel"][1]
    assert all(DEPLOY_BODY_LINE not in shown for _, shown in said.values())
    assert [(e.client_unverified, e.reason) for e in events(trail, "denial")] == [
        ("decline", "not approved through the client: the person declined"),
        ("cancel", "not approved through the client: the question was cancelled (no answer)"),
        ("deny", "not approved through the client: the person chose deny"),
    ]
    assert events(trail, "approval") == []


async def test_a_question_nobody_answers_in_time_is_reported_as_timed_out_never_as_declined(
    served: Served, tmp_path: Path
) -> None:
    trail = tmp_path / "audit.jsonl"
    with anyio.fail_after(WAIT):
        async with gateway_over([served.spec], audit=AuditTrail(trail)) as gateway:
            gateway.approval_timeout = 0.2
            async with client_of(gateway, "legacy", never) as client:
                result = await client.call_tool("read_skill", {"ref": "deploy"})
    assert meta(result)["error"] == "ApprovalTimedOut"
    assert "was not approved: no answer in time" in text(result)
    assert "skillward approve acme:deploy" in text(result)
    (denial,) = events(trail, "denial")
    assert denial.reason == "not approved through the client: no answer in time"


@pytest.mark.threat("T59")
@pytest.mark.parametrize("mode", MODES)
async def test_an_approval_through_the_client_is_audited_as_such_with_the_clients_name(
    served: Served, tmp_path: Path, mode: str
) -> None:
    # A hook of the host may have given this answer, not the person: the trail says how
    # it came, and from which client, so that an administrator can tell.
    trail = tmp_path / "audit.jsonl"
    with anyio.fail_after(WAIT):
        async with (
            gateway_over([served.spec], audit=AuditTrail(trail)) as gateway,
            client_of(gateway, mode, Asker([choose("once")]), name="claude-code") as client,
        ):
            loaded = await client.call_tool("read_skill", {"ref": "deploy"})
    assert not loaded.is_error
    (approval,) = events(trail, "approval")
    assert approval.reason == "approved through the client's elicitation"
    assert approval.client_unverified == "claude-code"
    assert approval.scope == "once"
