"""The gateway's approval socket: a question the client could not be asked waits for its
client session, and ``skillward approve`` (here, its requests sent over the real socket)
answers it, once, for the content it was shown, and only for a session still there.
The gateway is the real one over a real reference server (in memory), its socket real."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest

from skillward.core.config import Limits
from skillward.edge._usersocket import exchange
from skillward.gateway._answering import ApprovalSocket
from skillward.gateway.server import Gateway
from skillward.trust._socketwire import (
    AnswerReply,
    AnswerRequest,
    ErrorReply,
    ListReply,
    ListRequest,
    encode,
    parse_reply,
)
from skillward.trust.audit import AuditTrail, read_events
from tests.integration.test_gateway_approve_in_terminal import ASKS, environment
from tests.support.gated import DEPLOY_BODY_LINE, NOTES, Served, build_gated_tree, serve
from tests.support.gateway import Asker, choose, client_of, gateway_over, text
from tests.support.listings import REPO_ROOT
from tests.support.screen import Screen

pytestmark = pytest.mark.anyio

WAIT = 20
#: The end of the question which of several to answer ("1, 2, none? (n): ").
PICK = r"\(n\)(?:\x1b\[[0-9;]*m)*: "


@pytest.fixture
def served(tmp_path: Path) -> Served:
    build_gated_tree(tmp_path / "acme", tmp_path / "marker")
    return serve(tmp_path / "acme", "acme")


@asynccontextmanager
async def answering(gateway: Gateway) -> AsyncIterator[Path]:
    """The gateway's approval socket, in this test's runtime directory."""
    socket = ApprovalSocket(
        gateway.parked,
        gateway.sessions,
        audit=gateway.host.audit,
        name="skillward-gateway",
        version="test",
        limits=gateway.host.limits,
    )
    directory = Path(os.environ["XDG_RUNTIME_DIR"]) / "skillward"
    async with anyio.create_task_group() as group:
        path = await group.start(socket.run, directory)
        gateway.approval_socket = path
        yield path
        group.cancel_scope.cancel()


async def ask(path: Path, request: Any) -> Any:
    line, _ = await exchange(path, encode(request), max_reply=Limits().message_bytes)
    return parse_reply(line)


async def waiting(path: Path, ref: str | None = None) -> ListReply:
    reply = await ask(path, ListRequest(op="pending", ref=ref))
    assert isinstance(reply, ListReply)
    return reply


def answer(
    question_id: str,
    content_hash: str | None,
    scope: Literal["once", "session", "remember"] = "once",
) -> AnswerRequest:
    return AnswerRequest(
        op="answer", id=question_id, decision="approve", scope=scope, content_hash=content_hash
    )


@pytest.mark.threat("T60")
async def test_an_answer_for_content_that_changed_after_it_was_shown_approves_nothing(
    served: Served,
) -> None:
    with anyio.fail_after(WAIT):
        async with (
            gateway_over([served.spec]) as gateway,
            answering(gateway) as path,
            client_of(gateway, "auto", name="a") as client,
            client_of(gateway, "auto", Asker([choose("once")]), name="b") as other,
        ):
            assert (await client.call_tool("read_skill", {"ref": "deploy"})).is_error
            (shown,) = (await waiting(path, "acme:deploy")).questions
            # The skill changes; the gateway learns of it through the other client's read.
            assert not (await other.call_tool("read_skill", {"ref": "deploy"})).is_error
            served.change("deploy/notes.md", b"swapped after the person saw it\n")
            await other.call_tool("read_skill_file", {"ref": "deploy", "path": "notes.md"})
            asked_again = await client.call_tool("read_skill", {"ref": "deploy"})
            (now,) = (await waiting(path)).questions
            old_question = await ask(path, answer(shown.id, shown.content_hash))
            stale = await ask(path, answer(now.id, shown.content_hash))
            still = await client.call_tool("read_skill", {"ref": "deploy"})
            current = await ask(path, answer(now.id, now.content_hash))
            loaded = await client.call_tool("read_skill", {"ref": "deploy"})
    assert asked_again.is_error
    assert now.id != shown.id
    assert now.content_hash != shown.content_hash
    assert isinstance(old_question, ErrorReply)
    assert old_question.error == "AnswerRefused"
    assert isinstance(stale, ErrorReply)
    assert stale.error == "StaleAnswer"
    assert still.is_error  # nothing was approved
    assert isinstance(current, AnswerReply)
    assert current.scope == "once"
    assert not loaded.is_error
    assert DEPLOY_BODY_LINE in text(loaded)
    assert NOTES.decode() not in text(loaded)


@pytest.mark.threat("T60")
async def test_a_question_is_answered_once_and_the_answer_is_audited_with_the_process(
    served: Served, tmp_path: Path
) -> None:
    trail = AuditTrail(tmp_path / "audit.jsonl")
    with anyio.fail_after(WAIT):
        async with (
            gateway_over([served.spec], audit=trail) as gateway,
            answering(gateway) as path,
            client_of(gateway, "auto", name="inspector") as client,
        ):
            await client.call_tool("read_skill", {"ref": "deploy"})
            (question,) = (await waiting(path)).questions
            first = await ask(path, answer(question.id, question.content_hash, "session"))
            second = await ask(path, answer(question.id, question.content_hash, "session"))
            loaded = await client.call_tool("read_skill", {"ref": "deploy"})
            left = await waiting(path)
    assert question.client == "inspector"
    assert question.facts.ref == "acme:deploy"
    assert isinstance(first, AnswerReply)
    assert first.scope == "session"
    assert isinstance(second, ErrorReply)
    assert second.error == "AnswerRefused"
    assert not loaded.is_error
    assert left.questions == ()
    approvals = [e for e in read_events(tmp_path / "audit.jsonl").events if e.event == "approval"]
    given = approvals[0]
    assert given.via == f"socket pid={os.getpid()} uid={os.geteuid()}"
    assert given.client_unverified == "inspector"
    assert given.reason == "approved with skillward approve, through the gateway's approval socket"


@pytest.mark.threat("T60")
async def test_an_answer_for_a_client_session_that_is_gone_approves_nothing(
    served: Served,
) -> None:
    with anyio.fail_after(WAIT):
        async with gateway_over([served.spec], sessions=1) as gateway, answering(gateway) as path:
            async with client_of(gateway, "auto", name="first") as client:
                await client.call_tool("read_skill", {"ref": "deploy"})
            (question,) = (await waiting(path)).questions
            async with client_of(gateway, "auto", name="second") as other:
                await other.call_tool("list_skills", {})  # the first session is closed
            gone = await ask(path, answer(question.id, question.content_hash, "session"))
            left = await waiting(path)
    assert isinstance(gone, ErrorReply)
    assert gone.error == "AnswerRefused"
    assert "session that asked is gone" in gone.message
    assert left.questions == ()


@pytest.mark.threat("T60")
async def test_remember_where_it_is_not_offered_and_what_is_no_request_are_refused(
    served: Served,
) -> None:
    with anyio.fail_after(WAIT):
        async with (
            gateway_over([served.spec]) as gateway,  # no approval store
            answering(gateway) as path,
            client_of(gateway, "auto") as client,
        ):
            await client.call_tool("read_skill", {"ref": "deploy"})
            (question,) = (await waiting(path)).questions
            refused = await ask(path, answer(question.id, question.content_hash, "remember"))
            replies = [
                parse_reply((await exchange(path, line, max_reply=4096))[0])
                for line in (b'{"op": "answer", "id": "x"}', b'{"op": "approve-everything"}')
            ]
    assert "remember" not in [scope.value for scope in question.facts.scopes]
    assert isinstance(refused, ErrorReply)
    assert "not offered" in refused.message
    for reply in replies:
        assert isinstance(reply, ErrorReply)
        assert reply.error == "UsageError"


async def test_without_its_socket_the_gateway_names_the_command_with_its_own_servers(
    served: Served,
) -> None:
    with anyio.fail_after(WAIT):
        async with gateway_over([served.spec]) as gateway, client_of(gateway, "auto") as client:
            refused = await client.call_tool("read_skill", {"ref": "deploy"})
    assert "with the server options this gateway was started with" in text(refused)
    assert "skillward approve acme:deploy, and to choose remember" in text(refused)
    assert gateway.parked.pending() == []


@pytest.mark.threat("T60")
async def test_several_questions_about_one_skill_are_listed_and_the_person_picks_one(
    served: Served,
) -> None:
    command = [sys.executable, "-m", "skillward", "approve", "acme:deploy"]

    def pick_the_second() -> tuple[str, int]:
        screen = Screen(command, env=environment(), cwd=REPO_ROOT)
        listed = screen.expect(PICK)
        screen.send("2")
        screen.expect(ASKS)
        screen.send("s")
        return listed, screen.finish()

    with anyio.fail_after(WAIT * 4):
        async with (
            gateway_over([served.spec]) as gateway,
            answering(gateway),
            client_of(gateway, "auto", name="one") as one,
            client_of(gateway, "auto", name="two") as two,
        ):
            await one.call_tool("read_skill", {"ref": "deploy"})
            await two.call_tool("read_skill", {"ref": "deploy"})
            unattended = await anyio.run_process(
                command, env=environment(), cwd=REPO_ROOT, check=False
            )
            listed, status = await anyio.to_thread.run_sync(pick_the_second)
            first = await one.call_tool("read_skill", {"ref": "deploy"})
            second = await two.call_tool("read_skill", {"ref": "deploy"})
    assert unattended.returncode == 2  # no terminal to pick at: both named, none answered
    said = unattended.stderr.decode()
    assert "2 questions about 'acme:deploy' wait in running gateways" in said
    assert "client 'one'" in said
    assert "client 'two'" in said
    assert status == 0
    assert "1. acme:deploy" in listed
    assert "2. acme:deploy" in listed
    assert first.is_error  # the first client's question still waits
    assert not second.is_error
    assert DEPLOY_BODY_LINE in text(second)
