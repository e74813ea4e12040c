"""Audit events exported to an OpenTelemetry collector: a real OTLP/HTTP receiver on
127.0.0.1 decoding every request with ``opentelemetry-proto``; the collector down, then
back; one that hangs; and what a record holds (the event's fields, never content)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import mcp_types as types
import pytest

from skillward.core.config import Limits
from skillward.trust.audit import AuditExport, AuditTrail, read_events, verify_trail
from tests.support.gated import (
    DEPLOY_BODY_LINE,
    DEPLOY_DESCRIPTION,
    NOTES,
    Served,
    build_gated_tree,
    serve,
)
from tests.support.gateway import Asker, choose, client_of, gateway_over
from tests.support.keys import Keyring, MemoryKeys
from tests.support.otlp_receiver import Receiver, free_port

pytestmark = pytest.mark.threat("T63")

WAIT = 30
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


@contextmanager
def said(text: str) -> Iterator[threading.Event]:
    """An event set once the ``skillward`` logger says something containing ``text``."""
    heard = threading.Event()

    class Listener(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if text in record.getMessage():
                heard.set()

    listener = Listener(logging.WARNING)
    log = logging.getLogger("skillward")
    log.addHandler(listener)
    try:
        yield heard
    finally:
        log.removeHandler(listener)


def exporting(path: Path, url: str, *, retry: float = 0.05, **limits: int) -> AuditTrail:
    export = AuditExport(endpoint=url, timeout=2, retry=retry)
    return AuditTrail(path, keys=MemoryKeys(Keyring()), export=export, limits=Limits(**limits))


def record(trail: AuditTrail, count: int, start: int = 0) -> None:
    for n in range(start, start + count):
        trail.record("gate", "denied", gate="execution", tool="Bash", label="acme", reason=f"e{n}")


def test_each_event_arrives_as_one_log_record_with_its_fields(tmp_path: Path) -> None:
    receiver = Receiver()
    with receiver.running() as url:
        trail = exporting(tmp_path / "audit.jsonl", url)
        trail.record(
            "approval",
            "approved",
            reason="approved when asked",
            label="acme",
            identity="http:https://skills.acme.example:8443/mcp",
            skill_uri="skill://acme/deploy/SKILL.md",
            content_hash="sha256:" + "a" * 64,
            gate="activation",
            scope="session",
        )
        (got,) = receiver.wait_for(1, WAIT)
        trail.close()
    assert receiver.paths[-1] == "/v1/logs"
    assert got.event_name == "skillward.audit.approval"
    assert got.severity_text == "INFO"
    assert got.attributes == {
        "skillward.event": "approval",
        "skillward.decision": "approved",
        "skillward.decided_by": "terminal",
        "skillward.reason": "approved when asked",
        "skillward.server.label": "acme",
        "skillward.server.identity": "http:https://skills.acme.example:8443/mcp",
        "skillward.skill.uri": "skill://acme/deploy/SKILL.md",
        "skillward.skill.content_hash": "sha256:" + "a" * 64,
        "skillward.gate": "activation",
        "skillward.scope": "session",
        "mcp.resource.uri": "skill://acme/deploy/SKILL.md",
        "server.address": "skills.acme.example",
        "server.port": 8443,
    }
    assert got.resource["service.name"] == "skillward"
    assert got.resource["host.name"]
    assert got.trace_id == ""  # decided in no traced request


def test_a_collector_that_is_down_costs_a_bounded_buffer_and_gets_the_newest_when_it_is_back(
    tmp_path: Path,
) -> None:
    port = free_port()
    path = tmp_path / "audit.jsonl"
    with said("cannot send events to the collector") as down:
        # The collector is asked again a moment after it fails, however many events come.
        url = f"http://127.0.0.1:{port}"
        trail = exporting(path, url, retry=1.0, max_audit_export_events=5)
        assert down.wait(WAIT)  # said at start-up, before any event
    record(trail, 8)  # every call returns: nothing waits on the collector
    status = trail.export_status()
    assert status is not None
    assert status["dropped"] == 3
    assert status["buffered"] == 5
    receiver = Receiver(port=port)
    with said("takes events again") as back, receiver.running():
        records = receiver.wait_for(5, WAIT)
        assert back.wait(WAIT)
        trail.close()
    assert [r.attributes["skillward.reason"] for r in records] == [f"e{n}" for n in range(3, 8)]
    status = trail.export_status()
    assert status is not None
    assert status["delivered"] == 5
    assert status["failing"] is None
    # Losing the collector lost nothing locally.
    assert [e.reason for e in read_events(path).events] == [f"e{n}" for n in range(8)]
    assert verify_trail(path, keys=trail._keys).intact


def test_a_collector_that_hangs_never_holds_a_decision(tmp_path: Path) -> None:
    hold = threading.Event()
    receiver = Receiver(hold=hold)
    with receiver.running() as url:
        trail = exporting(tmp_path / "audit.jsonl", url)
        record(trail, 3)  # the collector holds every request: these return all the same
        assert len(read_events(tmp_path / "audit.jsonl").events) == 3
        hold.set()
        assert len(receiver.wait_for(3, WAIT)) == 3
        trail.close()


def test_without_a_collector_named_a_required_export_is_said_at_start_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", raising=False)
    with said("cannot be exported") as heard:
        trail = AuditTrail(
            tmp_path / "audit.jsonl",
            keys=MemoryKeys(Keyring()),
            export=AuditExport(required_by="audit.require_export = True in policy.toml:3"),
        )
    assert heard.is_set()
    assert trail.export_problem is not None
    assert "no collector is named" in trail.export_problem
    assert "policy.toml:3" in trail.export_problem
    trail.record("gate", "allowed", reason="r")  # and the trail still records
    assert len(read_events(tmp_path / "audit.jsonl").events) == 1


@pytest.fixture
def served(tmp_path: Path) -> Served:
    root = tmp_path / "acme"
    build_gated_tree(root, tmp_path / "marker")
    return serve(root, "acme")


@pytest.mark.anyio
@pytest.mark.threat("T64")
async def test_a_gateway_load_exports_who_decided_in_which_trace_and_no_content(
    tmp_path: Path, served: Served
) -> None:
    receiver = Receiver()
    with receiver.running() as url:
        trail = exporting(tmp_path / "audit.jsonl", url)
        asker = Asker([choose("once")])
        with anyio.fail_after(WAIT):
            async with (
                gateway_over([served.spec], audit=trail) as gateway,
                client_of(gateway, "auto", asker, name="claude-code") as client,
            ):
                traced = types.RequestParamsMeta(traceparent=TRACEPARENT)  # type: ignore[typeddict-unknown-key]
                loaded = await client.call_tool("read_skill", {"ref": "deploy"}, meta=traced)
                assert not loaded.is_error
                notes = await client.call_tool(
                    "read_skill_file", {"ref": "deploy", "path": "notes.md"}
                )
                assert not notes.is_error
        records = await anyio.to_thread.run_sync(receiver.wait_for, 1, WAIT)
        trail.close()
    (approval,) = [r for r in records if r.event_name == "skillward.audit.approval"]
    assert approval.trace_id == TRACE_ID
    assert approval.span_id == "00f067aa0ba902b7"
    assert approval.attributes["mcp.method.name"] == "tools/call"
    assert approval.attributes["gen_ai.tool.name"] == "read_skill"
    assert approval.attributes["skillward.decided_by"] == "elicitation"
    assert approval.attributes["skillward.client.name"] == "claude-code"
    sent = b"".join(receiver.bodies)
    for content in (DEPLOY_DESCRIPTION.encode(), DEPLOY_BODY_LINE.encode(), NOTES.strip()):
        assert content not in sent
