"""Machines without a keyring: the file key store, opted in to in the user's config, lets
the `skillward` command remember approvals; `skillward doctor` says what works here, why
not, and the fix. Every command runs with the ``fail`` keyring backend, as on a machine
with no Secret Service."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_cli import EXAMPLES, run

pytestmark = pytest.mark.threat("T58")

COMMON = ("--no-local", "--server", EXAMPLES)


def opt_in(home: Path) -> Path:
    """The user's config choosing the file key store; its path."""
    config = home / ".config" / "skillward" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[approvals]\nkey_store = "file"\n', encoding="utf-8")
    return config


def key_directory(home: Path) -> Path:
    return home / ".local" / "state" / "skillward" / "keys"


def key_file(home: Path) -> Path:
    (found,) = key_directory(home).glob("approvals-key-*")
    return found


def store_file(home: Path) -> Path:
    return home / ".local" / "share" / "skillward" / "approvals.json"


def doctor(home: Path, *args: str) -> tuple[int, Any]:
    result = run("doctor", "--json", *args, home=home)
    assert result.stdout, result.stderr
    return result.returncode, json.loads(result.stdout)


def approved(home: Path) -> subprocess.CompletedProcess[str]:
    return run("approve", "refunds", "--yes", "--scope", "remember", *COMMON, home=home)


@pytest.mark.threat("T18")
def test_without_a_keyring_the_file_key_store_remembers_and_a_later_load_asks_nothing(
    tmp_path: Path,
) -> None:
    opt_in(tmp_path)
    result = approved(tmp_path)
    assert result.returncode == 0, result.stderr
    loaded = run("load", "refunds", *COMMON, home=tmp_path)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.startswith("<skillward:skill ")
    assert stat.S_IMODE(key_directory(tmp_path).stat().st_mode) == 0o700
    assert stat.S_IMODE(key_file(tmp_path).stat().st_mode) == 0o600
    listed = run("approvals", "list", "--json", home=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)["approvals"]) == 1


@pytest.mark.threat("T18")
def test_a_store_changed_outside_skillward_is_refused_with_the_file_key_store(
    tmp_path: Path,
) -> None:
    opt_in(tmp_path)
    assert approved(tmp_path).returncode == 0
    store = store_file(tmp_path)
    store.write_bytes(store.read_bytes().replace(b'"revoked":null', b'"revoked":nul '))
    loaded = run("load", "refunds", *COMMON, home=tmp_path)
    assert loaded.returncode == 3
    assert loaded.stdout == ""
    assert "does not match its authentication code" in loaded.stderr
    assert list(store.parent.glob("approvals.json.untrusted-*"))


def test_a_key_file_others_can_read_refuses_to_remember_and_says_chmod_600(
    tmp_path: Path,
) -> None:
    opt_in(tmp_path)
    assert approved(tmp_path).returncode == 0
    key = key_file(tmp_path)
    key.chmod(0o644)
    again = approved(tmp_path)
    assert again.returncode == 3
    assert f"chmod 600 {key}" in again.stderr
    assert run("load", "refunds", *COMMON, home=tmp_path).returncode == 3
    code, report = doctor(tmp_path)
    assert code == 3
    fixes = [p["fix"] for p in report["problems"]]
    assert any(f"chmod 600 {key}" in str(fix) for fix in fixes)


@pytest.mark.threat("T40")
def test_a_policy_forbidding_the_file_key_store_makes_remember_unavailable_naming_its_file(
    tmp_path: Path,
) -> None:
    config = opt_in(tmp_path)
    policy = tmp_path / ".config" / "skillward" / "policy.toml"
    policy.write_text("version = 1\n[keyring]\nrequire_recommended = true\n", encoding="utf-8")
    result = approved(tmp_path)
    assert result.returncode == 5, result.stderr
    assert "file key store" in result.stderr
    assert f"{policy}:3" in result.stderr
    assert not store_file(tmp_path).exists()
    code, report = doctor(tmp_path)
    assert code == 3
    remember = report["scopes"]["remember"]
    assert remember["works"] is False
    assert f"{policy}:3" in remember["why_not"]
    assert str(config) in remember["why_not"]


def test_doctor_with_no_keyring_names_the_problem_and_the_fix(tmp_path: Path) -> None:
    config = tmp_path / ".config" / "skillward" / "config.toml"
    text = run("doctor", home=tmp_path)
    assert text.returncode == 3
    assert "fail Keyring" in text.stdout
    assert 'key_store = "file"' in text.stdout
    assert str(config) in text.stdout
    code, report = doctor(tmp_path)
    assert code == 3
    assert report["remember_works"] is False
    store = report["key_store"]
    assert store["kind"] == "keyring"
    assert store["works"] is False
    assert "fail Keyring" in store["backend"]
    assert store["recommended"] is False
    scopes = report["scopes"]
    assert scopes["once"]["works"] is True
    assert scopes["session"]["works"] is True
    assert "fail Keyring" in scopes["remember"]["why_not"]
    (problem,) = report["problems"]
    assert "fail Keyring" in problem["problem"]
    assert "PYTHON_KEYRING_BACKEND" in problem["fix"]
    assert 'key_store = "file"' in problem["fix"]
    assert str(config) in problem["fix"]
    paths = report["paths"]
    assert paths["config"] == str(config)
    assert paths["approval_store"] == str(store_file(tmp_path))
    assert paths["audit_trail"].startswith(str(tmp_path))


def test_doctor_with_the_file_key_store_says_remember_works_and_where_the_key_is(
    tmp_path: Path,
) -> None:
    config = opt_in(tmp_path)
    code, report = doctor(tmp_path)
    assert code == 0, report
    assert report["remember_works"] is True
    store = report["key_store"]
    assert store["kind"] == "file"
    assert store["works"] is True
    assert str(config) in store["chosen_in"]
    assert store["directory"] == str(key_directory(tmp_path))
    assert store["directory_mode"] == "0700"
    assert report["scopes"]["remember"] == {"works": True, "why_not": None}
    assert report["problems"] == []
    assert approved(tmp_path).returncode == 0
    _, after = doctor(tmp_path)
    assert after["key_store"]["key_file"] == str(key_file(tmp_path))
    assert after["key_store"]["key_file_mode"] == "0600"
    text = run("doctor", home=tmp_path)
    assert text.returncode == 0, text.stderr
    assert str(key_file(tmp_path)) in text.stdout


def test_a_key_directory_inside_the_workspace_is_refused_and_doctor_says_why(
    tmp_path: Path,
) -> None:
    opt_in(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    state = project / ".state"
    moved = run(
        "doctor",
        "--json",
        home=tmp_path,
        cwd=project,
        prefix=("env", f"XDG_STATE_HOME={state}"),
    )
    assert moved.returncode == 3, moved.stderr
    report = json.loads(moved.stdout)
    assert report["key_store"]["works"] is False
    assert "key directory" in report["key_store"]["problem"]
    assert str(project) in report["key_store"]["problem"]
    assert not (state / "skillward" / "keys").exists()
