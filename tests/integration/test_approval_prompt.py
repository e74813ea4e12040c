"""The approval prompt in a real pseudo-terminal, as a person meets it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from tests.support.trees import skill_md, write

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 90
# The end of the question line, "... deny? (d): ", style codes and all.
CHOICES = re.compile(r"\(d\)(?:\x1b\[[0-9;]*m)*: ")
# Distinct words, none longer than a narrow column, so wrapping never has to fold one.
WORDS = [f"word{i:03d}" for i in range(110)]
LONG_DESCRIPTION = "Use when the user asks about refunds, " + " ".join(WORDS) + " end."
NO_KEYRING = "keyring.backends.fail.Keyring"
STYLE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def environment() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in {"COLUMNS", "LINES"}}
    env.update(
        # A real terminal type (rich assumes 80 columns for "dumb"), without colour.
        TERM="xterm",
        NO_COLOR="1",
        PYTHON_KEYRING_BACKEND=NO_KEYRING,
        PYTHONPATH=str(REPO),
    )
    return env


def spawn(args: list[str], columns: int = 80) -> pexpect.spawn[str]:
    return pexpect.spawn(
        sys.executable,
        args,
        cwd=str(REPO),
        env=environment(),
        dimensions=(50, columns),
        timeout=TIMEOUT,
        encoding="utf-8",
    )


def plain(text: object) -> str:
    """Terminal output without its style codes."""
    return STYLE.sub("", str(text))


def finish(child: pexpect.spawn[str]) -> str:
    child.expect(pexpect.EOF)
    child.close()
    return plain(child.before)


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write(root, "refunds/SKILL.md", skill_md("refunds", LONG_DESCRIPTION))
    write(root, "refunds/policy.md", b"Refunds up to 250.\n")
    return root


def load(skills: Path, columns: int) -> pexpect.spawn[str]:
    server = f"team={sys.executable} -m skillward serve {skills}"
    return spawn(["-m", "skillward", "load", "refunds", "--no-local", "--server", server], columns)


@pytest.mark.threat("T23")
@pytest.mark.threat("T26")
@pytest.mark.parametrize("columns", [60, 80, 200])
def test_a_long_description_is_shown_whole_and_wrapped_at_any_width(
    skills: Path, columns: int
) -> None:
    child = load(skills, columns)
    child.expect(CHOICES)
    shown = plain(child.before)
    child.sendline("d")
    finish(child)
    assert "…" not in shown
    assert "..." not in shown
    lines = shown.splitlines()
    assert all(len(line.rstrip("\r")) <= columns for line in lines)
    flowing = " ".join(shown.split())
    assert " ".join(WORDS) + " end." in flowing
    assert "Use when the user asks about refunds," in flowing


def test_deny_loads_nothing_and_exits_3(skills: Path) -> None:
    child = load(skills, 100)
    child.expect(CHOICES)
    child.sendline("d")
    output = finish(child)
    assert child.exitstatus == 3
    assert "<skillward:skill" not in output


@pytest.mark.parametrize("choice", ["o", "s"])
def test_once_or_session_loads_the_skill(skills: Path, choice: str) -> None:
    child = load(skills, 100)
    child.expect(CHOICES)
    child.sendline(choice)
    output = finish(child)
    assert child.exitstatus == 0, output
    assert "<skillward:skill" in output


@pytest.mark.threat("T26")
def test_view_shows_the_verified_skill_md_to_the_person_then_asks_again(skills: Path) -> None:
    child = load(skills, 100)
    child.expect(CHOICES)
    child.sendline("v")
    child.expect("shown to you only")
    child.expect(CHOICES)
    viewed = plain(child.before)
    child.sendline("d")
    output = finish(child)
    assert "# refunds" in viewed  # the SKILL.md body, fetched and verified
    assert child.exitstatus == 3
    assert "<skillward:skill" not in output  # nothing reached the model's side


def test_remember_is_not_offered_without_a_keyring_and_the_prompt_says_why(skills: Path) -> None:
    child = load(skills, 120)
    child.expect(CHOICES)
    shown = " ".join(plain(child.before).split())
    child.sendline("r")  # not a choice: asked again
    child.expect(CHOICES)
    child.sendline("d")
    finish(child)
    assert "remember is not offered" in shown
    assert "fail Keyring" in shown
    assert "remember, " not in shown.rsplit("remember is not offered", 1)[-1]


def driver(directory: Path, version: str) -> pexpect.spawn[str]:
    return spawn(["-m", "tests.support.prompt_driver", str(directory), version])


@pytest.mark.parametrize(
    ("choice", "result"),
    [
        ("o", "decision: approve; stored: none"),
        ("s", "decision: approve; stored: none"),
        ("r", "decision: approve; stored: remember"),
        ("d", "decision: deny; stored: none"),
        ("", "decision: deny; stored: none"),
    ],
)
def test_each_choice_decides_and_only_remember_is_stored(
    tmp_path: Path, choice: str, result: str
) -> None:
    child = driver(tmp_path, "v1")
    child.expect(CHOICES)
    child.sendline(choice)
    assert result in finish(child)


@pytest.mark.threat("T9")
def test_after_a_change_the_prompt_shows_what_changed(tmp_path: Path) -> None:
    first = driver(tmp_path, "v1")
    first.expect(CHOICES)
    first.sendline("r")
    assert "stored: remember" in finish(first)
    again = driver(tmp_path, "v1")
    assert "decision: approve" in finish(again)  # remembered: not asked
    changed = driver(tmp_path, "v2")
    changed.expect(CHOICES)
    shown = plain(changed.before)
    changed.sendline("d")
    assert "stored: none" in finish(changed)
    assert "Changed since it was approved:" in shown
    assert "~ notes.md (changed)" in shown
    assert "templates/email.md (changed)" not in shown


def test_without_a_terminal_one_line_says_how_to_approve(skills: Path) -> None:
    server = f"team={sys.executable} -m skillward serve {skills}"
    result = subprocess.run(
        [sys.executable, "-m", "skillward", "load", "refunds", "--no-local", "--server", server],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=environment(),
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert result.returncode == 3
    assert result.stdout == ""
    error, hint = result.stderr.strip().splitlines()
    assert error.endswith("cannot ask for approval: there is no terminal to ask at")
    assert "`skillward approve team:refunds`" in hint
    assert "declined" not in result.stderr
