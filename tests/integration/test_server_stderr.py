"""A stdio server's stderr, over real subprocesses: logged and capped, never shown raw."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest
from pydantic import ValidationError

from skillward.core.config import Limits
from skillward.edge._serverlog import SESSION_MARK, escaped_lines, note, read_log
from skillward.edge.client import SkillsClient
from skillward.edge.servers import ServerSpec, StdioTransport
from tests.support.stderr_server import HOSTILE, argv
from tests.support.trees import build_tree

pytestmark = pytest.mark.anyio
TIMEOUT = 60


def stdio_spec(
    label: str, directory: Path, *options: str, logs: Path, stderr: str = "log"
) -> ServerSpec:
    command = argv(directory, *options)
    transport = StdioTransport(
        command=command[0], args=tuple(command[1:]), stderr=stderr, log_dir=logs
    )
    return ServerSpec(label=label, transport=transport)


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    build_tree(tmp_path / "skills")
    return tmp_path / "skills"


async def list_once(spec: ServerSpec) -> None:
    """Connect, list (the server answers), and disconnect, within the test's bound."""
    with anyio.fail_after(TIMEOUT):
        async with SkillsClient.connect(spec) as client:
            assert (await client.list_skills()).entries


def log_sizes(directory: Path, label: str) -> tuple[int, int]:
    current = directory / f"{label}.log"
    rotated = directory / f"{label}.log.1"
    return (
        current.stat().st_size if current.exists() else 0,
        rotated.stat().st_size if rotated.exists() else 0,
    )


@pytest.mark.threat("T23")
async def test_a_servers_stderr_goes_to_its_log_never_to_the_terminal(
    tmp_path: Path, skills: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "logs"
    await list_once(stdio_spec("evil", skills, logs=logs))
    captured = capfd.readouterr()
    assert "\x1b" not in captured.out + captured.err
    assert "approved by your administrator" not in captured.out + captured.err
    assert (logs / "evil.log").read_bytes().startswith(SESSION_MARK + HOSTILE)


@pytest.mark.threat("T23")
async def test_a_server_cannot_write_a_line_that_reads_as_skillwards_own(
    tmp_path: Path, skills: Path
) -> None:
    logs = tmp_path / "logs"
    await list_once(stdio_spec("evil", skills, "--forge", logs=logs))
    note(logs / "evil.log", "the server stopped", max_bytes=Limits().max_server_log_bytes)
    data = read_log(logs, "evil", max_bytes=Limits().max_server_log_bytes)
    assert data is not None
    lines = escaped_lines(data)
    mark = SESSION_MARK.decode()[1:].rstrip("\n")
    # skillward's two lines, and only they, read as skillward's.
    assert lines[0] == mark
    assert lines[-1] == "--- skillward: the server stopped ---"
    assert [line for line in lines if line.startswith("---")] == [lines[0], lines[-1]]
    assert lines[3:6] == [
        "\\x2d" + mark[1:],
        "\\x1e" + mark,
        "\\x2d-- skillward: the administrator approved every skill ---",
    ]


@pytest.mark.threat("T23")
async def test_a_log_that_cannot_be_kept_drops_the_stderr_never_shows_it(
    tmp_path: Path,
    skills: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "not-a-directory").write_text("")
    logs = tmp_path / "not-a-directory" / "logs"
    with caplog.at_level(logging.WARNING, logger="skillward"):
        await list_once(stdio_spec("evil", skills, logs=logs))
    assert "\x1b" not in capfd.readouterr().err
    assert any("its stderr is dropped" in r.getMessage() for r in caplog.records)


@pytest.mark.threat("T23")
async def test_unsafe_inherit_warns_every_time_and_names_the_risk(
    tmp_path: Path,
    skills: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    spec = stdio_spec("debugging", skills, logs=tmp_path / "logs", stderr="unsafe-inherit")
    with caplog.at_level(logging.WARNING, logger="skillward"):
        for _ in range(2):
            await list_once(spec)
    warnings = [r for r in caplog.records if "stderr='unsafe-inherit'" in r.getMessage()]
    assert len(warnings) == 2
    assert all("escape sequences" in r.getMessage() for r in warnings)
    assert "'debugging'" in warnings[0].getMessage()
    assert not (tmp_path / "logs").exists()
    capfd.readouterr()  # the raw bytes went to this process's stderr, as asked


@pytest.mark.threat("T23")
def test_raw_stderr_is_given_only_under_its_unsafe_name() -> None:
    with pytest.raises(ValidationError):
        StdioTransport(command="x", stderr="inherit")
    assert StdioTransport(command="x", stderr="unsafe-inherit").stderr == "unsafe-inherit"


async def test_discard_keeps_nothing(
    tmp_path: Path, skills: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    await list_once(stdio_spec("quiet", skills, logs=tmp_path / "logs", stderr="discard"))
    assert not (tmp_path / "logs").exists()
    assert "\x1b" not in capfd.readouterr().err


@pytest.mark.threat("T11")
@pytest.mark.threat("T23")
async def test_a_server_writing_endlessly_to_stderr_stays_under_the_log_cap(
    tmp_path: Path, skills: Path
) -> None:
    logs = tmp_path / "logs"
    cap = 64 * 1024
    # Four MiB pass through the pipe before the server answers, and more follow.
    spec = stdio_spec("noisy", skills, "--flood", str(4 * 1024 * 1024), "--endless", logs=logs)
    limits = Limits(max_server_log_bytes=cap)
    with anyio.fail_after(TIMEOUT):
        async with SkillsClient.connect(spec, limits=limits) as client:
            # The server is never blocked on a full stderr pipe: it still answers.
            assert (await client.list_skills()).entries
            current, rotated = log_sizes(logs, "noisy")
            assert rotated > 0
            assert current + rotated <= cap
            assert (await client.list_skills()).entries
    current, rotated = log_sizes(logs, "noisy")
    assert current + rotated <= cap
