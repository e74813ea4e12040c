"""The audit trail on the command line: ``skillward audit verify`` and its exit code,
export to a real OTLP/HTTP receiver from a command, and the policy's ``[audit]`` table at
start-up, at a load and in ``skillward doctor``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_cli import run
from tests.support.otlp_receiver import Receiver, free_port
from tests.support.trees import skill_md, write

WAIT = 30
FILE_KEYS = '[approvals]\nkey_store = "file"\n'


def trail_of(home: Path) -> Path:
    return home / ".local" / "state" / "skillward" / "audit.jsonl"


def config(home: Path, text: str) -> None:
    path = home / ".config" / "skillward" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def user_policy(home: Path, text: str) -> None:
    path = home / ".config" / "skillward" / "policy.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def load(home: Path, *, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    skills = home / "skills"
    if not skills.exists():
        write(skills, "notes/SKILL.md", skill_md("notes", "Keeps notes; SECRET-DESCRIPTION"))
    prefix = ("env", *(f"{k}={v}" for k, v in (env or {}).items()))
    result = run(
        "load",
        "notes",
        "--skills-dir",
        f"mine={skills}",
        "--approve-once",
        home=home,
        prefix=prefix,
    )
    return result.returncode, result.stdout, result.stderr


@pytest.mark.threat("T62")
def test_audit_verify_says_intact_then_names_the_edited_event_and_exits_7(tmp_path: Path) -> None:
    config(tmp_path, FILE_KEYS)
    for _ in range(3):
        assert load(tmp_path)[0] == 0
    intact = run("audit", "verify", home=tmp_path)
    assert intact.returncode == 0, intact.stdout + intact.stderr
    assert intact.stdout.startswith("intact: 3 events")
    path = trail_of(tmp_path)
    rows = path.read_bytes().splitlines()
    events = [i for i, row in enumerate(rows) if b'"checkpoint":' not in row]
    rows[events[1]] = rows[events[1]].replace(b'"approved"', b'"denied"')
    path.write_bytes(b"".join(row + b"\n" for row in rows))
    broken = run("audit", "verify", home=tmp_path)
    assert broken.returncode == 7
    assert broken.stdout.startswith(f"broken (edited) at line {events[1] + 1} of the chain")
    as_json = run("audit", "verify", "--json", home=tmp_path)
    assert as_json.returncode == 7
    report = json.loads(as_json.stdout)
    assert report["intact"] is False
    assert report["broken"]["how"] == "edited"
    assert report["broken"]["where"] == f"audit.jsonl:{events[1] + 1}"


@pytest.mark.threat("T62")
def test_without_a_key_store_audit_verify_says_it_cannot_vouch(tmp_path: Path) -> None:
    assert load(tmp_path)[0] == 0  # the keyring is the fail backend here
    result = run("audit", "verify", home=tmp_path)
    assert result.returncode == 7
    assert result.stdout.startswith("broken (unauthenticated)")
    assert "cannot be authenticated here" in result.stdout
    events = run("audit", "--json", home=tmp_path)  # the trail still reads
    assert [e["event"] for e in json.loads(events.stdout)["events"]] == ["approval"]


@pytest.mark.threat("T62")
def test_a_policy_requiring_a_tamper_evident_trail_refuses_loads_it_cannot_vouch_for(
    tmp_path: Path,
) -> None:
    user_policy(tmp_path, "version = 1\n[audit]\nrequire_tamper_evident = true\n")
    code, _, stderr = load(tmp_path)
    assert code == 5
    assert "skills load only with a tamper-evident audit trail" in stderr
    assert "audit.require_tamper_evident = True" in stderr
    doctor = run("doctor", "--json", home=tmp_path)
    report = json.loads(doctor.stdout)
    assert report["audit"]["tamper_evident"] is False
    assert report["audit"]["required_by"] is not None
    assert any("requires a tamper-evident audit trail" in p["problem"] for p in report["problems"])
    config(tmp_path, FILE_KEYS)  # a key store that works: the same load goes ahead
    assert load(tmp_path)[0] == 0


@pytest.mark.threat("T63")
def test_a_command_exports_its_events_to_the_collector_the_variables_name(tmp_path: Path) -> None:
    receiver = Receiver()
    with receiver.running() as url:
        code, _, stderr = load(tmp_path, env={"OTEL_EXPORTER_OTLP_ENDPOINT": url})
        assert code == 0, stderr
        (record,) = receiver.wait_for(1, WAIT)  # delivered before the command ended
    assert record.event_name == "skillward.audit.approval"
    assert record.attributes["skillward.server.label"] == "mine"
    assert record.attributes["skillward.decided_by"] == "terminal"
    assert b"SECRET-DESCRIPTION" not in b"".join(receiver.bodies)


@pytest.mark.threat("T63")
def test_a_policys_collector_that_is_down_is_said_and_the_load_goes_ahead(tmp_path: Path) -> None:
    port = free_port()
    user_policy(tmp_path, f'version = 1\n[audit]\nexport_endpoint = "http://127.0.0.1:{port}"\n')
    code, _, stderr = load(tmp_path, env={"OTEL_EXPORTER_OTLP_TIMEOUT": "1"})
    assert code == 0, stderr
    assert f"cannot send events to the collector at http://127.0.0.1:{port}/v1/logs" in stderr
    assert "Connection refused" in stderr
    trail = trail_of(tmp_path).read_text(encoding="utf-8")
    assert '"event":"approval"' in trail  # kept locally
    doctor = run("doctor", "--json", home=tmp_path)
    export = json.loads(doctor.stdout)["audit"]["export"]
    assert export["endpoint"] == f"http://127.0.0.1:{port}/v1/logs"
    assert export["works"] is False
    assert "audit.export_endpoint" in export["required_by"]
