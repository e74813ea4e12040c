"""The `skillward` command, run as a person would run it, against real servers."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from skillward.cli.demonstrating import DEMO_TAMPERED_URI
from skillward.serve.catalog import example_skills_dir
from tests.support.barrier_server import argv as barrier_argv
from tests.support.trees import build_tree, skill_md, write

TIMEOUT = 60
EXAMPLES = f"examples={sys.executable} -m skillward serve"
TAMPERED = f"{EXAMPLES} --tamper {DEMO_TAMPERED_URI}"
NO_KEYRING = "keyring.backends.fail.Keyring"
SECRET_SERVICE = "keyring.backends.SecretService.Keyring"


def environment(
    home: Path, *, columns: int = 200, keyring: str | None = NO_KEYRING
) -> dict[str, str]:
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "COLUMNS": str(columns),
        "NO_COLOR": "1",
    }
    # No keyring unless a test asks for the real one (the session's Secret Service).
    env.pop("PYTHON_KEYRING_BACKEND", None)
    if keyring is not None:
        env["PYTHON_KEYRING_BACKEND"] = keyring
    return env


def run(
    *args: str,
    home: Path,
    stdin: str = "",
    columns: int = 200,
    keyring: str | None = NO_KEYRING,
    prefix: tuple[str, ...] = (),
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "skillward", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=environment(home, columns=columns, keyring=keyring),
        input=stdin,
        check=False,
    )


def test_list_shows_the_catalog_with_origins(tmp_path: Path) -> None:
    result = run("list", "--no-local", "--server", EXAMPLES, home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "examples:refunds" in result.stdout
    assert "MCP server examples" in result.stdout


def test_list_json_reports_collisions_with_local_skills(tmp_path: Path) -> None:
    local = tmp_path / "mine"
    write(local, "git-workflow/SKILL.md", skill_md("git-workflow", "Mine"))
    result = run(
        "list", "--json", "--skills-dir", f"project={local}", "--server", EXAMPLES, home=tmp_path
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    refs = {item["ref"] for item in data["skills"]}
    assert {"examples:git-workflow", "project:git-workflow", "refunds"} <= refs
    assert any(c["subject"] == "git-workflow" for c in data["collisions"])
    mcp = next(i for i in data["skills"] if i["ref"] == "refunds")
    assert mcp["origin"] == {
        "kind": "mcp",
        "label": "examples",
        "reported_name_unverified": "skillward-serve",
    }


def test_show_prints_the_entry_and_fetches_nothing(tmp_path: Path) -> None:
    result = run("show", "refunds", "--json", "--no-local", "--server", TAMPERED, home=tmp_path)
    assert result.returncode == 0, result.stderr
    entry = json.loads(result.stdout)
    assert entry["frontmatter"]["name"] == "refunds"
    assert {r["uri"] for r in entry["resources"]} >= {DEMO_TAMPERED_URI}
    assert all(r["digest"].startswith("sha256:") for r in entry["resources"])


def test_load_with_approve_once_prints_the_tagged_activation(tmp_path: Path) -> None:
    result = run(
        "load", "refunds", "--approve-once", "--no-local", "--server", EXAMPLES, home=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("<skillward:skill ")
    assert 'server="examples"' in result.stdout
    assert 'trust="untrusted"' in result.stdout
    assert "# Refunds" in result.stdout


def test_load_json_gives_the_same_block_as_json(tmp_path: Path) -> None:
    result = run(
        "load",
        "refunds",
        "--approve-once",
        "--json",
        "--no-local",
        "--server",
        EXAMPLES,
        home=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    block = json.loads(result.stdout)
    assert block["kind"] == "skill"
    assert block["origin"]["label"] == "examples"


@pytest.mark.parametrize("closed", [False, True], ids=["piped", "closed-stdin"])
def test_load_with_no_terminal_exits_3_naming_commands_that_exist(
    tmp_path: Path, closed: bool
) -> None:
    # With descriptor 0 closed (<&-) Python has no sys.stdin at all: still no terminal.
    prefix = ("/bin/sh", "-c", 'exec "$@" <&-', "sh") if closed else ()
    args = ("load", "refunds", "--no-local", "--server", EXAMPLES)
    result = run(*args, home=tmp_path, prefix=prefix)
    assert result.returncode == 3, result.stderr
    assert result.stdout == ""
    error, hint = result.stderr.strip().splitlines()
    assert error.endswith("cannot ask for approval: there is no terminal to ask at")
    # Commands that exist: approve takes no --approve-once, load does.
    assert "`skillward approve examples:refunds`" in hint
    assert "`skillward load examples:refunds --approve-once`" in hint


def test_approve_with_no_terminal_names_how_to_approve_without_a_prompt(tmp_path: Path) -> None:
    result = run("approve", "refunds", "--no-local", "--server", EXAMPLES, home=tmp_path)
    assert result.returncode == 3
    error, hint = result.stderr.strip().splitlines()
    assert error.endswith("cannot ask for approval: there is no terminal to ask at")
    # Not itself again: the same command, answered on the command line.
    assert "`skillward approve examples:refunds --yes`" in hint
    assert "--approve-once" not in hint


def test_approve_remember_without_a_keyring_records_nothing_and_exits_3(tmp_path: Path) -> None:
    result = run("approve", "refunds", "--yes", "--no-local", "--server", EXAMPLES, home=tmp_path)
    assert result.returncode == 3
    assert "fail Keyring" in result.stderr
    assert "not remembered" in result.stderr
    listed = run("approvals", "list", "--json", home=tmp_path)
    assert listed.returncode == 3, listed.stderr
    data = json.loads(listed.stdout)
    assert data["approvals"] == []
    assert "fail Keyring" in data["remember_unavailable"]


def test_approvals_list_with_the_store_unavailable_says_why_and_exits_3(tmp_path: Path) -> None:
    result = run("approvals", "list", home=tmp_path)
    assert result.returncode == 3
    assert "No remembered approvals" not in result.stdout + result.stderr
    (error,) = (line for line in result.stderr.splitlines() if line.startswith("skillward:"))
    assert "remembered approvals are unavailable" in error
    assert "fail Keyring" in error
    assert "hint: Remembered approvals need an unlocked OS keyring" in result.stderr
    # The way out on a machine without a keyring, and where to find what works here.
    assert 'approvals.key_store = "file" in your config.toml' in result.stderr
    assert "`skillward doctor`" in result.stderr


@pytest.mark.parametrize("scope", ["once", "session"])
def test_approve_for_less_than_remember_outside_a_gateway_approves_nothing_and_exits_3(
    tmp_path: Path, scope: str
) -> None:
    argv = ("approve", "refunds", "--yes", "--scope", scope, "--no-local", "--server", EXAMPLES)
    result = run(*argv, home=tmp_path)
    assert result.returncode == 3, result.stderr
    assert f"a {scope!r} approval of 'refunds' would approve nothing" in result.stderr
    assert "Nothing was approved" in result.stderr
    assert "--scope remember" in result.stderr  # what does
    assert result.stdout == ""
    as_json = run(*argv, "--json", home=tmp_path)
    assert as_json.returncode == 3
    assert json.loads(as_json.stderr)["error"] == "ApprovalError"


def test_approve_with_no_server_and_no_gateway_waiting_says_both(tmp_path: Path) -> None:
    result = run("approve", "ex:refunds", "--no-local", home=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "no running skillward gateway waits for approval of 'ex:refunds'" in result.stderr
    assert "skillward approvals pending" in result.stderr


def test_approvals_pending_with_no_gateway_running_says_so(tmp_path: Path) -> None:
    result = run("approvals", "pending", home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Nothing waits for approval (0 gateways running)." in result.stdout
    as_json = run("approvals", "pending", "--json", home=tmp_path)
    assert json.loads(as_json.stdout) == {"gateways": 0, "pending": []}


@pytest.mark.threat("T60")
def test_a_runtime_directory_open_to_others_is_not_asked_and_the_fix_is_named(
    tmp_path: Path,
) -> None:
    runtime = Path(os.environ["XDG_RUNTIME_DIR"]) / "skillward"
    runtime.mkdir(mode=0o755)
    runtime.chmod(0o755)
    result = run("approvals", "pending", home=tmp_path)
    assert result.returncode == 0, result.stderr
    said = result.stderr.replace("\n", "")
    assert f"running gateways cannot be asked: {runtime} is open to group or others" in said
    assert f"(fix: chmod 700 {runtime})" in said


def secret_service_or_skip(home: Path) -> None:
    probe = run("approvals", "list", "--json", home=home, keyring=None)
    why = json.loads(probe.stdout)["remember_unavailable"] if probe.stdout else "?"
    if why is not None:
        pytest.skip(
            f"no usable keyring ({why}); run under dbus-run-session with an unlocked "
            "gnome-keyring-daemon, as .ci/run does"
        )


def private_bus_or_skip() -> tuple[str, ...]:
    """A command prefix running the command on its own session bus, where a Secret Service
    (gnome-keyring, started on demand) has no collection yet. Its sockets go in the test's
    own XDG_RUNTIME_DIR (conftest), where it finds no other gnome-keyring to hand over to."""
    bus = shutil.which("dbus-run-session")
    if bus is None or shutil.which("gnome-keyring-daemon") is None:
        pytest.skip("needs dbus-run-session and gnome-keyring-daemon (.ci/run installs them)")
    # No display, so the prompt to create a collection cannot be shown (it counts as
    # dismissed).
    return ("env", "-u", "DISPLAY", "-u", "WAYLAND_DISPLAY", bus, "--")


@pytest.mark.threat("T27")
def test_a_first_approval_where_the_keyring_has_no_collection_says_what_to_do_in_one_line(
    tmp_path: Path,
) -> None:
    prefix = private_bus_or_skip()
    common = ("--no-local", "--server", EXAMPLES)
    approved = run(
        "approve", "refunds", "--yes", *common, home=tmp_path, keyring=SECRET_SERVICE, prefix=prefix
    )
    assert approved.returncode == 3, approved.stderr
    (line,) = [line for line in approved.stderr.splitlines() if "not remembered" in line]
    assert "has no default keyring" in line
    assert "gnome-keyring-daemon --replace --unlock" in line
    assert "InitError" not in approved.stderr
    assert "Traceback" not in approved.stderr
    listed = run(
        "approvals", "list", "--json", home=tmp_path, keyring=SECRET_SERVICE, prefix=prefix
    )
    assert listed.returncode == 3, listed.stderr
    report = json.loads(listed.stdout)
    assert report["approvals"] == []
    assert "has no default keyring" in report["remember_unavailable"]


@pytest.mark.threat("T18")
def test_approve_then_load_uses_the_remembered_approval_until_it_is_revoked(
    tmp_path: Path,
) -> None:
    secret_service_or_skip(tmp_path)
    common = ("--no-local", "--server", EXAMPLES)
    approved = run("approve", "refunds", "--yes", *common, home=tmp_path, keyring=None)
    assert approved.returncode == 0, approved.stderr
    loaded = run("load", "refunds", *common, home=tmp_path, keyring=None)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.startswith("<skillward:skill ")
    listed = json.loads(run("approvals", "list", "--json", home=tmp_path, keyring=None).stdout)
    (record,) = listed["approvals"]
    assert record["label"] == "examples"
    assert record["uri"] == "skill://acme/billing/refunds/SKILL.md"
    assert record["identity"].startswith("stdio:")
    assert record["revoked"] is None
    revoked = run("approvals", "revoke", "examples:refunds", "--json", home=tmp_path, keyring=None)
    assert revoked.returncode == 0, revoked.stderr
    assert json.loads(revoked.stdout)["revoked"]["revoked"] is not None
    again = run("load", "refunds", *common, home=tmp_path, keyring=None)
    assert again.returncode == 3
    assert run("approve", "refunds", "--yes", *common, home=tmp_path, keyring=None).returncode == 0
    reset = run("approvals", "reset", "--yes", "--json", home=tmp_path, keyring=None)
    assert reset.returncode == 0, reset.stderr
    assert json.loads(reset.stdout)["forgotten"] >= 1
    listed = json.loads(run("approvals", "list", "--json", home=tmp_path, keyring=None).stdout)
    assert listed["approvals"] == []
    assert run("load", "refunds", *common, home=tmp_path, keyring=None).returncode == 3


def test_approvals_reset_at_a_terminal_asks_first_and_enter_keeps_them(tmp_path: Path) -> None:
    secret_service_or_skip(tmp_path)
    common = ("--no-local", "--server", EXAMPLES)
    approved = run("approve", "refunds", "--yes", *common, home=tmp_path, keyring=None)
    assert approved.returncode == 0, approved.stderr

    def reset(answer: str) -> int:
        child = pexpect.spawn(
            sys.executable,
            ["-m", "skillward", "approvals", "reset"],
            env=environment(tmp_path, keyring=None),
            timeout=TIMEOUT,
        )
        child.expect("Forget all 1 remembered approvals")
        child.expect(r"\(n\)")
        child.sendline(answer)
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus is not None
        return child.exitstatus

    def remembered() -> int:
        listed = run("approvals", "list", "--json", home=tmp_path, keyring=None)
        return len(json.loads(listed.stdout)["approvals"])

    assert reset("") == 0
    assert remembered() == 1
    assert reset("y") == 0
    assert remembered() == 0


@pytest.mark.threat("T22")
def test_a_remembered_approval_does_not_follow_the_label_to_another_server(
    tmp_path: Path,
) -> None:
    secret_service_or_skip(tmp_path)
    approved = run(
        "approve",
        "refunds",
        "--yes",
        "--no-local",
        "--server",
        EXAMPLES,
        home=tmp_path,
        keyring=None,
    )
    assert approved.returncode == 0, approved.stderr
    moved = f"{EXAMPLES} --name another-server"
    result = run("load", "refunds", "--no-local", "--server", moved, home=tmp_path, keyring=None)
    assert result.returncode == 3
    assert result.stdout == ""


def test_revoking_an_approval_that_does_not_exist_is_a_usage_error(tmp_path: Path) -> None:
    secret_service_or_skip(tmp_path)
    result = run("approvals", "revoke", "nobody:refunds", home=tmp_path, keyring=None)
    assert result.returncode == 2
    assert "no remembered approval" in result.stderr


@pytest.mark.threat("T5")
def test_a_tampered_read_exits_4_and_prints_nothing(tmp_path: Path) -> None:
    result = run(
        "read", "refunds", "templates/email.md", "--no-local", "--server", TAMPERED, home=tmp_path
    )
    assert result.returncode == 4
    assert result.stdout == ""
    assert "server 'examples'" in result.stderr
    assert DEMO_TAMPERED_URI in result.stderr
    assert len(result.stderr.strip().splitlines()) == 2  # one line, and its hint


def test_read_prints_a_verified_file(tmp_path: Path) -> None:
    result = run(
        "read", "refunds", "policy/limits.json", "--no-local", "--server", TAMPERED, home=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert '"self_service_limit": 250' in result.stdout
    assert 'verified="true"' in result.stdout


@pytest.mark.threat("T32")
def test_cache_list_shows_what_a_load_kept_and_purge_removes_it(tmp_path: Path) -> None:
    loaded = run(
        "load", "refunds", "--approve-once", "--no-local", "--server", EXAMPLES, home=tmp_path
    )
    assert loaded.returncode == 0, loaded.stderr
    listed = run("cache", "list", "--json", home=tmp_path)
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert data["root"] == str(tmp_path / ".cache" / "skillward")
    [examples] = data["labels"]
    assert examples["label"] == "examples"
    assert examples["identity"].startswith("stdio:")
    skill_md_bytes = (example_skills_dir() / "acme/billing/refunds/SKILL.md").read_bytes()
    assert (examples["files"], examples["bytes"]) == (1, len(skill_md_bytes))
    assert "examples  1 files" in run("cache", "list", home=tmp_path).stdout
    kept = run("cache", "purge", "nobody", "--json", home=tmp_path)
    assert json.loads(kept.stdout) == {
        "root": data["root"],
        "label": "nobody",
        "files": 0,
        "bytes": 0,
    }
    purged = run("cache", "purge", "Examples", home=tmp_path)
    assert purged.returncode == 0, purged.stderr
    assert "removed 1 cached files (" in purged.stderr
    assert "of examples" in purged.stderr
    assert json.loads(run("cache", "list", "--json", home=tmp_path).stdout)["labels"] == []


def test_no_cache_keeps_nothing_on_disk(tmp_path: Path) -> None:
    result = run(
        "load",
        "refunds",
        "--approve-once",
        "--no-cache",
        "--no-local",
        "--server",
        EXAMPLES,
        home=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / ".cache").exists()


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("show", "no-such-skill"), 2, "no skill matches"),
        (("show", "nobody:refunds"), 2, "no server or skill directory"),
        (("read", "refunds", "../../etc/passwd"), 2, "escapes the skill root"),
        (("show", "refunds", "--server", "bad:label=x"), 2, "server label"),
    ],
)
def test_usage_errors_exit_2_with_one_clear_line(
    tmp_path: Path, args: tuple[str, ...], code: int, message: str
) -> None:
    result = run(*args, "--no-local", "--server", EXAMPLES, home=tmp_path)
    assert result.returncode == code
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unreachable_server_exits_6(tmp_path: Path) -> None:
    result = run("list", "--no-local", "--server", "gone=http://127.0.0.1:9/mcp", home=tmp_path)
    assert result.returncode == 6
    assert "server 'gone'" in result.stderr


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    result = run(
        "--debug", "show", "no-such-skill", "--no-local", "--server", EXAMPLES, home=tmp_path
    )
    assert result.returncode != 0
    assert "Traceback" in result.stderr


def test_servers_come_from_an_mcp_servers_config_file(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    build_tree(skills)
    config = tmp_path / "servers.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "team": {
                        "command": sys.executable,
                        "args": ["-m", "skillward", "serve", str(skills)],
                    }
                }
            }
        )
    )
    result = run("list", "--json", "--no-local", "--config", str(config), home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "team:git-workflow" in {s["qualified"] for s in json.loads(result.stdout)["skills"]}


def test_a_broken_config_file_is_a_usage_error(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    config.write_text("{")
    result = run("list", "--no-local", "--config", str(config), home=tmp_path)
    assert result.returncode == 2
    assert "servers.json" in result.stderr


def test_demo_loads_a_skill_and_refuses_the_tampered_read(tmp_path: Path) -> None:
    result = run("demo", home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "<skillward:catalog " in result.stdout
    assert "<skillward:skill " in result.stdout
    assert "DigestMismatch" in result.stdout
    assert "differs from the listing" in result.stderr


def test_demo_json_gives_each_step_as_json(tmp_path: Path) -> None:
    result = run("demo", "--json", home=tmp_path)
    assert result.returncode == 0, result.stderr
    steps = json.loads(result.stdout)["steps"]
    assert [step["step"][:2] for step in steps] == ["1.", "2.", "3.", "4.", "5.", "6."]
    assert [block["kind"] for block in steps[1]["blocks"]] == ["catalog"]
    assert [block["kind"] for block in steps[2]["blocks"]] == ["skill"]
    assert [block["kind"] for block in steps[4]["blocks"]] == ["error"]
    assert "DigestMismatch" in json.dumps(steps[4]["blocks"])
    assert steps[5]["errors"]


def test_help_documents_the_exit_codes(tmp_path: Path) -> None:
    result = run("--help", home=tmp_path)
    assert result.returncode == 0
    for code in ("3 approval", "4 verification", "5 policy", "6 server"):
        assert code in result.stdout


def test_servers_connect_at_once_and_one_that_fails_leaves_the_others(tmp_path: Path) -> None:
    """Three servers that each serve only once all three have started (one after another,
    the first would wait for the others past its deadline), and one that fails to start:
    the three are listed, in label order, and the failure is reported."""
    marks = tmp_path / "marks"
    marks.mkdir()
    examples = example_skills_dir()
    options = []
    for label in ("charlie", "alpha", "bravo"):
        command = shlex.join(barrier_argv(marks, 3, examples))
        options += ["--server", f"{label}={command}"]
    options += ["--server", f"broken={sys.executable} -c 'raise SystemExit(3)'"]
    result = run("list", "--json", "--no-local", "--timeout", "20", *options, home=tmp_path)
    listed = json.loads(result.stdout)
    refs = [skill["qualified"] for skill in listed["skills"] if skill["name"] == "refunds"]
    assert refs == ["alpha:refunds", "bravo:refunds", "charlie:refunds"]
    states = {server["label"]: server["state"] for server in listed["servers"]}
    assert states == {
        "charlie": "connected",
        "alpha": "connected",
        "bravo": "connected",
        "broken": "failed",
    }
    assert [server["label"] for server in listed["servers"]][:3] == ["charlie", "alpha", "bravo"]
    assert result.returncode != 0


def test_ten_servers_connect_in_one_wave(tmp_path: Path) -> None:
    """Ten servers that each serve only once all ten have started: every one is connected.
    Connected in waves (a bound below ten at a time), the first wave would wait for the
    rest past its deadline, and start-up would be twice the slowest server's."""
    marks = tmp_path / "marks"
    marks.mkdir()
    command = shlex.join(barrier_argv(marks, 10, example_skills_dir()))
    options = [f"--server=s{index}={command}" for index in range(10)]
    result = run("list", "--json", "--no-local", "--timeout", "20", *options, home=tmp_path)
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    states = {server["label"]: server["state"] for server in listed["servers"]}
    assert states == {f"s{index}": "connected" for index in range(10)}
