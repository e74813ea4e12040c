"""The command line at a real terminal: servers' stderr, logs, closed pipes and `serve`."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from skillward.edge._serverlog import SESSION_MARK
from tests.support.gateway import INITIALIZE
from tests.support.stderr_server import HOSTILE, argv
from tests.support.trees import build_tree, skill_md, write

TIMEOUT = 60
EXAMPLES = f"examples={sys.executable} -m skillward serve"
# The hostile bytes as `printable` shows them: escapes spelled out, never sent.
ESCAPED_CLEAR = "\\x1b[2J\\x1b[H\\x1b[32mskillward: approved by your administrator"


def environment() -> dict[str, str]:
    return {
        **os.environ,
        "COLUMNS": "200",
        "NO_COLOR": "1",
        # No styling of skillward's own: any escape byte in the output is the server's.
        "TERM": "dumb",
    }


def log_dir(home: Path) -> Path:
    return home / ".local" / "state" / "skillward" / "server-logs"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillward", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=environment(),
        check=False,
    )


def hostile_server(tmp_path: Path, *options: str) -> str:
    skills = tmp_path / "skills"
    build_tree(skills)
    return "evil=" + " ".join(argv(skills, *options))


@pytest.mark.threat("T23")
def test_a_servers_escape_sequences_never_reach_the_terminal_around_the_approval_prompt(
    tmp_path: Path, home: Path
) -> None:
    pid_file = tmp_path / "server.pid"
    output = io.BytesIO()
    child: pexpect.spawn[bytes] = pexpect.spawn(
        sys.executable,
        [
            "-m",
            "skillward",
            "load",
            "refunds",
            "--no-local",
            "--server",
            hostile_server(tmp_path, "--pid-file", str(pid_file)),
        ],
        env=environment(),
        timeout=TIMEOUT,
        dimensions=(40, 200),
    )
    child.logfile_read = output
    try:
        child.expect(r"deny\? \(d\): ")
        before_prompt = output.getvalue()
        assert b"approve loading this skill?" in before_prompt
        assert b"\x1b" not in before_prompt
        assert b"approved by your administrator" not in before_prompt
        # The server dies while the person reads the prompt; then they say yes.
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
        child.sendline("o")
        child.expect(pexpect.EOF)
        after_prompt = output.getvalue()[len(before_prompt) :]
    finally:
        child.close(force=True)
    assert child.exitstatus == 6
    assert b"\x1b" not in after_prompt
    shown = after_prompt.decode()
    assert "server 'evil'" in shown
    assert ESCAPED_CLEAR in shown
    assert "\\x1b]0;pwned\\x07" in shown
    assert "skillward logs evil" in shown
    assert str(log_dir(home) / "evil.log") in shown.replace("\r\n", "")
    assert (log_dir(home) / "evil.log").read_bytes().startswith(SESSION_MARK + HOSTILE)


@pytest.mark.threat("T23")
def test_a_server_that_fails_to_start_shows_the_end_of_its_log_escaped() -> None:
    crash = "import sys; sys.stderr.write('\\x1b[2Jboom: no config\\n'); sys.exit(1)"
    result = run("list", "--no-local", "--server", f'broken={sys.executable} -c "{crash}"')
    assert result.returncode == 6
    assert "\x1b" not in result.stderr + result.stdout
    assert "server 'broken'" in result.stderr
    assert "\\x1b[2Jboom: no config" in result.stderr
    assert "last 2 lines" in result.stderr
    assert SESSION_MARK.decode()[1:].rstrip("\n") in result.stderr
    assert "skillward logs broken" in result.stderr


@pytest.mark.threat("T24")
def test_a_secret_a_server_writes_to_its_stderr_is_in_neither_the_output_nor_its_log(
    tmp_path: Path, home: Path
) -> None:
    secret = "s3cr3t-t0ken-9f8e7d"
    echo = (
        "import os, sys; t = os.environ['LEAKY_TOKEN']; "
        "sys.stderr.write('bad token ' + t + '\\n'); sys.stderr.flush(); "
        "os.write(2, t[:5].encode()); os.write(2, (t[5:] + ' again\\n').encode()); sys.exit(1)"
    )
    config = tmp_path / "servers.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "leaky": {
                        "command": sys.executable,
                        "args": ["-c", echo],
                        "env": {"LEAKY_TOKEN": "${LEAKY_TOKEN}"},
                    }
                }
            }
        )
    )
    env = {**environment(), "LEAKY_TOKEN": secret}
    result = subprocess.run(
        [sys.executable, "-m", "skillward", "list", "--no-local", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env,
        check=False,
    )
    assert result.returncode == 6
    assert "bad token ***" in result.stderr  # the tail was shown, scrubbed
    assert "*** again" in result.stderr  # a secret split across two writes too
    assert secret not in result.stdout + result.stderr
    logged = (log_dir(home) / "leaky.log").read_bytes()
    assert b"bad token ***\n" in logged
    assert secret.encode() not in logged
    shown = run("logs", "leaky")
    assert "bad token ***" in shown.stdout
    assert secret not in shown.stdout + shown.stderr


@pytest.mark.threat("T23")
def test_logs_prints_a_servers_log_escaped(tmp_path: Path, home: Path) -> None:
    listed = run("list", "--no-local", "--server", hostile_server(tmp_path))
    assert listed.returncode == 0, listed.stderr
    assert "\x1b" not in listed.stderr + listed.stdout
    assert "approved by your administrator" not in listed.stderr

    result = run("logs", "evil")
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout
    lines = result.stdout.splitlines()
    assert lines[0] == SESSION_MARK.decode()[1:].rstrip("\n")
    assert lines[1] == ESCAPED_CLEAR + "\\x1b[0m"
    assert lines[2] == "\\x1b]0;pwned\\x07"
    assert lines[3].startswith("skillward serve: 4 skills from ")

    last = run("logs", "Evil", "--lines", "1")
    assert last.stdout.splitlines() == lines[-1:]
    typo = run("logs", "evl")
    assert typo.returncode == 2
    assert "did you mean 'evil'?" in typo.stderr
    as_json = json.loads(run("--json", "logs", "evil").stdout)
    assert as_json["label"] == "evil"
    assert as_json["file"] == str(log_dir(home) / "evil.log")
    assert as_json["lines"] == lines


def test_logs_of_a_server_with_no_log_is_a_usage_error() -> None:
    result = run("logs", "nobody")
    assert result.returncode == 2
    assert "no stderr log for server 'nobody'" in result.stderr


def test_debug_shows_every_servers_log(tmp_path: Path) -> None:
    result = run("--debug", "list", "--no-local", "--server", hostile_server(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "server 'evil' stderr" in result.stderr
    assert ESCAPED_CLEAR in result.stderr
    assert "\x1b" not in result.stderr


def test_show_into_a_closed_pipe_ends_quietly() -> None:
    # `skillward show REF | head -3`, with the reader gone before the first write.
    process = subprocess.Popen(
        [sys.executable, "-m", "skillward", "show", "refunds", "--no-local", "--server", EXAMPLES],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(),
    )
    assert process.stdout is not None
    process.stdout.close()
    _, err = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 0
    assert err == b""


def test_a_broken_default_servers_file_is_named_and_explicit_servers_still_work(home: Path) -> None:
    default = home / ".config" / "skillward" / "servers.json"
    default.parent.mkdir(parents=True)
    default.write_text("{")
    result = run("list", "--json", "--no-local", "--server", EXAMPLES)
    assert result.returncode == 0, result.stderr
    assert "examples:refunds" in {s["qualified"] for s in json.loads(result.stdout)["skills"]}
    assert str(default) in result.stderr
    assert "--config" in result.stderr


def test_a_bad_entry_in_a_servers_file_is_skipped_and_the_rest_loads(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    write(skills, "pdf/SKILL.md", skill_md("pdf", "PDF tools"))
    config = tmp_path / "servers.json"
    serve = [sys.executable, "-m", "skillward", "serve", str(skills)]
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "Team_Skills": {"command": serve[0], "args": serve[1:]},
                    "bad:name": {"command": "x"},
                    "needs-token": {"url": "http://127.0.0.1:9/mcp", "headers": {"A": "${NOPE}"}},
                }
            }
        )
    )
    result = run("list", "--json", "--no-local", "--config", str(config))
    assert result.returncode == 0, result.stderr
    assert {s["qualified"] for s in json.loads(result.stdout)["skills"]} == {"team-skills:pdf"}
    assert result.stderr.count(str(config)) == 2
    assert "'bad:name'" in result.stderr
    assert "'NOPE' is not set" in result.stderr


# --- serve ---------------------------------------------------------------------------------


def test_serve_on_a_busy_port_says_so_in_one_line() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run("serve", "--http", f"127.0.0.1:{port}")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    first, hint = result.stderr.strip().splitlines()
    assert first == f"skillward: cannot listen on 127.0.0.1:{port}: Address already in use"
    assert hint.startswith("  hint: ")


def test_serve_of_a_directory_with_no_skill_says_what_a_skill_folder_is_and_exits_2(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "empty"
    (empty / "notes").mkdir(parents=True)
    (empty / "notes" / "README.md").write_text("not a skill\n")
    result = run("serve", str(empty))
    assert result.returncode == 2
    assert result.stdout == ""  # no server started: nothing on the protocol's stream
    first, hint = result.stderr.strip().splitlines()
    assert first == f"skillward: no skill to serve under {empty}: no SKILL.md was found in it"
    assert "a folder holding a SKILL.md" in hint
    assert "DIR/NAME/SKILL.md" in hint
    refused = tmp_path / "refused"
    write(refused, "Bad Name/SKILL.md", skill_md("Bad Name", "Not a valid name"))
    result = run("serve", str(refused))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert "refused: skill name 'Bad Name'" in lines[0]
    assert lines[1] == f"skillward: no skill to serve under {refused}: the lines above say why"


_INITIALIZE = json.dumps(INITIALIZE) + "\n"


def with_sigint(disposition: str, argv: list[str]) -> list[str]:
    """``argv`` started with SIGINT ``default`` or ``ignored`` (as a non-interactive
    shell starts a background job, and so everything it runs), whatever this process has."""
    handler = "SIG_IGN" if disposition == "ignored" else "SIG_DFL"
    trampoline = (
        f"import os, signal, sys; signal.signal(signal.SIGINT, signal.{handler}); "
        "os.execv(sys.argv[1], sys.argv[1:])"
    )
    return [sys.executable, "-c", trampoline, *argv]


def stop_with_ctrl_c(
    argv: list[str], ready: str, *, talk: bool, sigint: str
) -> tuple[str, str, int]:
    """Start ``argv`` with SIGINT ``sigint``, wait for the stderr line starting with
    ``ready`` (``talk``: then have an MCP client's initialize answered over stdio), send
    SIGINT: the ready line, the rest of stderr, the exit code."""
    with subprocess.Popen(
        with_sigint(sigint, argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(),
    ) as process:
        assert process.stderr is not None
        assert process.stdin is not None
        assert process.stdout is not None
        try:
            while not (line := process.stderr.readline().decode()).startswith(ready):
                assert line, "ended before it was ready"
            if talk:
                process.stdin.write(_INITIALIZE.encode())
                process.stdin.flush()
                assert json.loads(process.stdout.readline())["id"] == 1
            process.send_signal(signal.SIGINT)
            _, rest = process.communicate(timeout=TIMEOUT)
        finally:
            process.kill()
            process.wait(timeout=TIMEOUT)
    return line, rest.decode(), process.returncode


@pytest.mark.parametrize("sigint", ["default", "ignored"])
@pytest.mark.parametrize(
    ("http", "talk"),
    [(False, False), (False, True), (True, False)],
    ids=["stdio-idle", "stdio-in-session", "http"],
)
def test_serve_says_what_it_serves_and_stops_on_ctrl_c_in_one_line(
    tmp_path: Path, http: bool, talk: bool, sigint: str
) -> None:
    # Started with SIGINT ignored, it is stopped by it all the same: a serving command
    # takes Ctrl-C itself (before, it went on serving, or ended without saying so).
    skills = tmp_path / "skills"
    write(skills, "pdf/SKILL.md", skill_md("pdf", "PDF tools"))
    options = ["--http", "127.0.0.1:0"] if http else []
    argv = [sys.executable, "-m", "skillward", "serve", str(skills), *options]
    started, rest, code = stop_with_ctrl_c(argv, "skillward serve: ", talk=talk, sigint=sigint)
    where = "at http://127.0.0.1:" if http else f"from {skills} over stdio"
    assert started.startswith(f"skillward serve: 1 skill {where}")
    assert rest == "skillward serve: stopped\n"
    assert code == 0


@pytest.mark.parametrize("sigint", ["default", "ignored"])
@pytest.mark.parametrize(
    ("http", "talk"),
    [(False, False), (False, True), (True, False)],
    ids=["stdio-idle", "stdio-in-session", "http"],
)
def test_the_gateway_stops_on_ctrl_c_saying_so(http: bool, talk: bool, sigint: str) -> None:
    argv = [sys.executable, "-m", "skillward", "gateway", "--no-local", "--no-cache"]
    argv += ["--http", "127.0.0.1:0"] if http else []
    ready, rest, code = stop_with_ctrl_c(
        argv, "skillward gateway: 0 skills", talk=talk, sigint=sigint
    )
    if http:
        assert ready.startswith("skillward gateway: 0 skills at http://127.0.0.1:")
    else:
        assert ready.rstrip().endswith("over stdio")
    assert rest == "skillward gateway: stopped\n"
    assert code == 0
