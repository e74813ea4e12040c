"""`skillward policy` and `skillward pin`, and policy denials on the command line."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import anyio
import pytest

from skillward.edge.servers import ServerSpec, StdioTransport
from skillward.host.skillhost import SkillHost
from skillward.trust.approvals import DenyAll, content_hash
from tests.integration.test_cli import EXAMPLES, run
from tests.support.policies import ALLOWED, PolicyDirs, url_named_executable

REPO = Path(__file__).resolve().parents[2]
BUNDLED = sorted((REPO / "policies").glob("*.toml"))


def user_policy(home: Path, text: str) -> Path:
    path = home / ".config" / "skillward" / "policy.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_every_bundled_policy_is_there() -> None:
    assert [p.name for p in BUNDLED] == ["default.toml", "fleet-pinned.toml", "strict.toml"]


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
def test_policy_check_passes_every_bundled_policy(path: Path, tmp_path: Path) -> None:
    result = run("policy", "check", str(path), home=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


@pytest.mark.threat("T41")
def test_policy_check_exits_1_with_a_file_and_line_for_each_problem(tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text("version = 1\n")
    bad = tmp_path / "bad.toml"
    bad.write_text('version = 1\n[servers]\nalow = ["acme"]\ndeny = ["evil", 3]\n')
    broken = tmp_path / "broken.toml"
    broken.write_text("version = 1\n[grants\n")
    result = run("policy", "check", str(good), str(bad), str(broken), home=tmp_path)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == f"{bad}:3: unknown key 'servers.alow' is ignored"
    assert lines[1].startswith(f"{bad}:4: servers.deny: entry 2 (3) is not valid")
    assert lines[1].endswith("; every server is denied")
    assert lines[2].startswith(f"{broken}:2: not valid TOML")
    assert len(lines) == 3
    missing = run("policy", "check", str(tmp_path / "nope.toml"), home=tmp_path)
    assert missing.returncode == 1
    assert "nope.toml: cannot be read" in missing.stdout
    as_json = run("policy", "check", str(good), str(bad), "--json", home=tmp_path)
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    assert report["files"] == [str(good), str(bad)]
    assert [(p["file"], p["line"]) for p in report["problems"]] == [(str(bad), 3), (str(bad), 4)]
    assert report["problems"][0]["message"] == "unknown key 'servers.alow' is ignored"


def test_policy_schema_prints_the_json_schema(tmp_path: Path) -> None:
    result = run("policy", "schema", home=tmp_path)
    assert result.returncode == 0, result.stderr
    schema = json.loads(result.stdout)
    assert set(schema["properties"]) >= {"version", "contact", "servers", "skills", "pins"}


def test_policy_show_names_the_file_each_value_came_from(tmp_path: Path) -> None:
    path = user_policy(
        tmp_path, 'version = 1\ncontact = "me"\n[grants]\nexecution = "never"\nbogus = 1\n'
    )
    result = run("policy", "show", "--json", home=tmp_path)
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["lockdown"] is None
    assert shown["files"] == [str(path)]
    assert {"key": "grants.execution", "value": "never", "source": f"{path}:4"} in shown["values"]
    assert shown["problems"] == [f"{path}:5: unknown key 'grants.bogus' is ignored"]
    text = run("policy", "show", home=tmp_path)
    assert "grants.execution = 'never'" in text.stdout
    assert f"{path}:4" in text.stdout


@pytest.mark.threat("T41")
def test_a_policy_that_cannot_be_used_stops_every_server_with_exit_5(tmp_path: Path) -> None:
    path = user_policy(tmp_path, "version = 1\n[servers\n")
    listed = run("list", "--no-local", "--server", EXAMPLES, home=tmp_path)
    assert listed.returncode == 5
    assert str(path) in listed.stderr
    assert "cannot be used at line 2" in listed.stderr
    loaded = run("load", "refunds", "--no-local", "--server", EXAMPLES, home=tmp_path)
    assert loaded.returncode == 5
    shown = run("policy", "show", home=tmp_path)
    assert shown.returncode == 5
    assert "no server may connect" in shown.stderr


@pytest.mark.threat("T40")
def test_a_denied_skill_exits_5_naming_the_rule_file_and_contact(tmp_path: Path) -> None:
    path = user_policy(
        tmp_path, 'version = 1\ncontact = "IT desk"\n[skills]\ndeny = ["skill://acme/**"]\n'
    )
    result = run("load", "refunds", "--no-local", "--server", EXAMPLES, home=tmp_path)
    assert result.returncode == 5
    assert "skills.deny = 'skill://acme/**'" in result.stderr
    assert f"{path}:4" in result.stderr
    assert "contact: IT desk" in result.stderr
    approve = run("approve", "refunds", "--yes", "--no-local", "--server", EXAMPLES, home=tmp_path)
    assert approve.returncode == 5


def test_a_server_denied_by_the_users_own_file_names_that_file_not_the_administrator(
    tmp_path: Path,
) -> None:
    path = user_policy(tmp_path, 'version = 1\n[servers]\ndeny = ["examples"]\n')
    result = run("list", "--no-local", "--server", EXAMPLES, home=tmp_path)
    assert result.returncode == 5
    assert f"servers.deny = 'examples' in {path}:3 (your own policy file)" in result.stderr
    assert f"hint: The rule is in your own policy file, {path}: edit it" in result.stderr
    assert "administrator" not in result.stderr
    as_json = run("list", "--json", "--no-local", "--server", EXAMPLES, home=tmp_path)
    (failed,) = json.loads(as_json.stdout)["servers"]
    assert failed["error"]["hint"].startswith(f"The rule is in your own policy file, {path}")


@pytest.mark.threat("T40")
def test_approve_beyond_the_scope_the_policy_allows_exits_5(tmp_path: Path) -> None:
    user_policy(tmp_path, 'version = 1\n[approvals]\npersist = "session"\n')
    argv = ("approve", "refunds", "--yes", "--no-local", "--server", EXAMPLES)
    result = run(*argv, home=tmp_path)
    assert result.returncode == 5
    assert "approvals.persist = 'session'" in result.stderr
    # The policy allows a session approval; outside a gateway, one approves nothing (3).
    session = run(*argv, "--scope", "session", home=tmp_path)
    assert session.returncode == 3, session.stderr
    assert "approvals.persist" not in session.stderr


@pytest.mark.threat("T40")
def test_a_url_allow_entry_refuses_a_cloned_repositorys_command_of_that_name(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    started = tmp_path / "started"
    url_named_executable(repo, started)
    config = repo / ".mcp.json"
    config.write_text(json.dumps({"mcpServers": {"acme": {"command": ALLOWED}}}))
    user_policy(tmp_path, f'version = 1\n[servers]\nallow = ["{ALLOWED}"]\n')
    result = run("list", "--no-local", "--config", str(config), home=tmp_path, cwd=repo)
    assert result.returncode == 5, result.stdout + result.stderr
    assert "server 'acme'" in result.stderr
    assert "not in servers.allow" in result.stderr
    assert not started.exists()


@pytest.mark.threat("T41")
def test_policy_check_reports_a_server_pattern_that_can_never_match(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(
        'version = 1\n[servers]\ndeny = [\n  "https://u@evil.example/*",\n'
        '  "https://evil.example/mcp?x=1",\n  "https://evil.example/*",\n]\n'
    )
    result = run("policy", "check", str(path), home=tmp_path)
    assert result.returncode == 1
    first, second = result.stdout.splitlines()
    assert first.startswith(f"{path}:4: servers.deny: entry 1 ")
    assert "user name or password" in first
    assert second.startswith(f"{path}:5: servers.deny: entry 2 ")
    assert "query or fragment" in second


@pytest.mark.threat("T42")
def test_pin_prints_a_block_that_pre_approves_exactly_that_skill(tmp_path: Path) -> None:
    result = run("pin", "examples:refunds", "--no-local", "--server", EXAMPLES, home=tmp_path)
    assert result.returncode == 0, result.stderr
    block = result.stdout
    assert block.startswith("[[pins]]\n# refunds, ")
    (pin,) = tomllib.loads(block)["pins"]
    assert pin["server"] == "examples"
    assert pin["skill"] == "skill://acme/billing/refunds/SKILL.md"
    assert pin["grant_tools"] is False
    dirs = PolicyDirs(tmp_path / "policy")
    dirs.admin("version = 1\n" + block, "50-pins.toml")
    policy = dirs.load(headless=True)
    assert dirs.reports == []
    spec = ServerSpec(
        label="examples",
        transport=StdioTransport(
            command=sys.executable,
            args=("-m", "skillward", "serve"),
            log_dir=tmp_path / "logs",
        ),
    )

    async def load() -> str | None:
        with anyio.fail_after(60):
            async with SkillHost(approver=DenyAll(), policy=policy) as host:
                await host.connect(spec)
                activation = await host.activate("refunds")
                assert activation.entry is not None
                return content_hash(activation.entry)

    assert anyio.run(load) == pin["content"]


def test_pin_refuses_a_local_skill(tmp_path: Path) -> None:
    local = tmp_path / "mine" / "notes"
    local.mkdir(parents=True)
    (local / "SKILL.md").write_text("---\nname: notes\ndescription: Mine\n---\nbody\n")
    result = run("pin", "notes", "--skills-dir", f"project={tmp_path / 'mine'}", home=tmp_path)
    assert result.returncode == 2
    assert "only skills served by MCP servers are pinned" in result.stderr
