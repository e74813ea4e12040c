"""What runs while a server works on a read: the client edge's ``after_send``, and the
approval of a load, recorded once the read of SKILL.md is sent (not before, so the write
overlaps the server's work) and always before the content is used."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from skillward.cache._disk import DiskCache
from skillward.core.errors import (
    FrontmatterError,
    IntegrityError,
    ServerDisconnected,
    ServerRejected,
)
from skillward.edge._transport import Unanswered, _ToChild
from skillward.edge.client import SkillsClient
from skillward.edge.servers import ServerSpec
from skillward.host.skillhost import SkillHost
from skillward.trust.audit import AuditEvent, AuditTrail, EventKind, Outcome, read_events
from tests.support.doubles import Approving
from tests.support.hostile import build_hostile_tree
from tests.support.misbehaving import misbehaving_argv
from tests.support.servers import TRANSPORTS, serve_tree, stdio_spec
from tests.support.trees import skill_md, write

pytestmark = pytest.mark.anyio


def stalling() -> ServerSpec:
    """``skillward serve`` on the examples that never answers ``resources/read``."""
    return stdio_spec("slow", misbehaving_argv("stall-read"))


def hostile(tmp_path: Path, *options: str) -> ServerSpec:
    """The hostile server over stdio (label ``h``), on a tree of its skills made here."""
    build_hostile_tree(tmp_path / "hostile")
    module = "tests.support.hostile"
    return stdio_spec("h", [sys.executable, "-m", module, str(tmp_path / "hostile"), *options])


class Count:
    def __init__(self) -> None:
        self.calls = 0
        self.event = anyio.Event()

    def __call__(self) -> None:
        self.calls += 1
        self.event.set()


@contextmanager
def approvals_heard() -> Iterator[anyio.Event]:
    """An event set when the ``skillward.audit`` logger hears an approval."""
    heard = anyio.Event()

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            event = getattr(record, "audit", None)
            if event is not None and event.event == "approval":
                heard.set()

    logger = logging.getLogger("skillward.audit")
    handler, level = Handler(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield heard
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


# --- the client edge ------------------------------------------------------------------------


async def test_work_after_send_runs_while_a_stdio_server_still_holds_its_answer() -> None:
    after = Count()
    with anyio.fail_after(30):
        async with SkillsClient.connect(stalling()) as client, anyio.create_task_group() as tg:
            tg.start_soon(lambda: client.read_resource("skill://x/SKILL.md", after_send=after))
            await after.event.wait()  # the server never answers: only the write can set it
            tg.cancel_scope.cancel()
    assert after.calls == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_work_after_send_runs_once_per_read_on_every_transport_even_when_it_fails(
    tmp_path: Path, transport: str
) -> None:
    write(tmp_path / "skills", "one/SKILL.md", skill_md("one", "One skill"))
    with anyio.fail_after(60):
        async with (
            serve_tree(tmp_path / "skills", transport) as spec,
            SkillsClient.connect(spec) as client,
        ):
            read, failed = Count(), Count()
            data = await client.read_resource("skill://one/SKILL.md", after_send=read)
            with pytest.raises(ServerRejected):
                await client.read_resource("skill://none/SKILL.md", after_send=failed)
            # Later messages on the same session run nothing more.
            await client.list_skills()
    assert data == skill_md("one", "One skill")
    assert (read.calls, failed.calls) == (1, 1)


async def test_a_server_that_stops_reading_ends_the_session_rather_than_leave_it_waiting() -> None:
    script = "import os, sys, time; os.close(0); print('closed', flush=True); time.sleep(30)"
    process = await anyio.open_process([sys.executable, "-c", script])
    sink, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        with anyio.fail_after(30):
            assert b"closed" in await process.stdout.receive()
            outgoing = _ToChild(process.stdin, sink, Unanswered(64))
            ping = types.JSONRPCRequest(jsonrpc="2.0", id=1, method="ping")
            with pytest.raises(anyio.BrokenResourceError):
                await outgoing.send(SessionMessage(ping))
            # The session's read side ends too: whoever waits for an answer hears of it.
            with pytest.raises(anyio.EndOfStream):
                await incoming.receive()
    finally:
        process.kill()
        await process.aclose()
        incoming.close()


# --- the host ---------------------------------------------------------------------------------


@pytest.mark.threat("T36")
async def test_an_approval_is_on_record_while_the_server_still_holds_the_skill(
    tmp_path: Path,
) -> None:
    trail = tmp_path / "audit.jsonl"
    async with SkillHost(approver=Approving(), audit=AuditTrail(trail)) as host:
        with anyio.fail_after(30):
            await host.connect(stalling())
        with approvals_heard() as heard, anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(host.activate, "refunds")
                await heard.wait()  # recorded without waiting for an answer that never comes
                tg.cancel_scope.cancel()
    events = [(e.event, e.skill_uri) for e in read_events(trail).events]
    assert events == [("approval", "skill://acme/billing/refunds/SKILL.md")]


@pytest.mark.threat("T36")
async def test_an_approval_is_recorded_once_and_before_the_failure_of_what_was_sent(
    tmp_path: Path,
) -> None:
    trail = tmp_path / "audit.jsonl"
    spec = hostile(tmp_path)
    async with SkillHost(approver=Approving(), audit=AuditTrail(trail)) as host:
        with anyio.fail_after(60):
            await host.connect(spec)
            with pytest.raises((IntegrityError, FrontmatterError)):
                await host.activate("alias-bomb")
            await host.activate("good")
    events = [(e.event, e.decision, e.skill_uri) for e in read_events(trail).events]
    assert events == [
        ("approval", "approved", "skill://alias-bomb/SKILL.md"),
        ("verification_failure", "failed", "skill://alias-bomb/SKILL.md"),
        ("approval", "approved", "skill://good/SKILL.md"),
    ]
    assert host.granted_tools() == ()


@pytest.mark.threat("T36")
async def test_two_loads_at_once_on_one_connection_each_record_their_own_approval_once(
    tmp_path: Path,
) -> None:
    trail = tmp_path / "audit.jsonl"
    spec = hostile(tmp_path)
    names = ["good", "wrong-digest", "wrong-size", "rotating", "extra-file", "forged"]
    async with SkillHost(approver=Approving(), audit=AuditTrail(trail)) as host:
        with anyio.fail_after(60):
            await host.connect(spec)
            async with anyio.create_task_group() as tg:
                for name in names:
                    tg.start_soon(host.activate, name)
    approved = sorted(e.skill_uri or "" for e in read_events(trail).events)
    assert approved == sorted(f"skill://{name}/SKILL.md" for name in names)


class Unrecordable(AuditTrail):
    """A trail that cannot record approvals (as a broken sink would raise)."""

    def record(self, event: EventKind, decision: Outcome, **fields: Any) -> AuditEvent:
        if event == "approval":
            raise OSError("the trail is gone")
        return super().record(event, decision, **fields)


@pytest.mark.threat("T36")
async def test_a_load_whose_approval_cannot_be_recorded_uses_nothing_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    spec = hostile(tmp_path)
    audit = Unrecordable(tmp_path / "audit.jsonl")
    async with SkillHost(approver=Approving(), audit=audit) as host:
        with anyio.fail_after(60):
            await host.connect(spec)
            with pytest.raises(OSError, match="the trail is gone"):
                await host.activate("good")
            assert host.active() == []
            # Raised in the loading task, not inside the SDK's send: the session goes on.
            await host.refresh("h")


@pytest.mark.threat("T36")
async def test_a_load_served_from_the_disk_cache_records_its_approval_too(tmp_path: Path) -> None:
    trail, log = tmp_path / "audit.jsonl", tmp_path / "requests.jsonl"
    spec = hostile(tmp_path, "--log", str(log))
    for _ in range(2):  # the second host finds SKILL.md in the cache the first filled
        cache = DiskCache(tmp_path / "cache", discovery=())
        async with SkillHost(approver=Approving(), audit=AuditTrail(trail), cache=cache) as host:
            with anyio.fail_after(60):
                await host.connect(spec)
                await host.activate("good")
    reads = [line for line in log.read_text().splitlines() if "resources/read" in line]
    assert reads == ['["resources/read", "skill://good/SKILL.md"]']
    events = [(e.event, e.skill_uri) for e in read_events(trail).events]
    assert events == [("approval", "skill://good/SKILL.md")] * 2


@pytest.mark.threat("T36")
async def test_an_approval_that_cannot_be_recorded_is_said_even_when_the_read_fails_too(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spec = stdio_spec("dies", misbehaving_argv("die-on-read"))
    async with SkillHost(approver=Approving(), audit=Unrecordable(tmp_path / "a.jsonl")) as host:
        with anyio.fail_after(60):
            await host.connect(spec)
            with pytest.raises(ServerDisconnected):
                await host.activate("refunds")
    said = [r for r in caplog.records if "could not be recorded" in r.getMessage()]
    assert [(r.levelname, r.getMessage()) for r in said] == [
        ("ERROR", "the approval of this load could not be recorded: OSError")
    ]
    assert host.active() == []
