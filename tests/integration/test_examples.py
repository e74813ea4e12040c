"""The examples in examples/ run, and do what the README says they do."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

REPO = Path(__file__).resolve().parents[2]


def run_example(name: str) -> str:
    """The example's output, run as a user would (with the test's home, from conftest)."""
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / name)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.threat("T13")
@pytest.mark.threat("T16")
@pytest.mark.threat("T38")
def test_the_agent_loop_example_runs_every_step_through_handle_tool_call() -> None:
    out = run_example("agent_loop.py")
    steps = [line for line in out.splitlines() if line.startswith("step ")]
    assert len(steps) == 6
    assert "pdf-processing  (mcp examples)" in out
    assert "result: a skill block from mcp:examples, trust=untrusted" in out
    assert "tools granted to the model while it acts on the skill: none" in out
    assert "model tools: list_skills, read_skill, read_skill_file, bash" in out
    assert "result: a file block from mcp:examples" in out
    # The model names no URI: another server's skill it never loaded reads nothing.
    assert "result: an error block from mcp:crm" in out
    assert "SkillNotActive" in out
    assert "read_resource" not in out
    assert "audit: gate denied execution examples skill://pdf-processing/SKILL.md tool=bash" in out
    assert "ExecutionDenied" in out
    assert "audit: gate allowed execution" in out
    assert out.rstrip().endswith("the host now runs its own 'bash' tool (not run here)")


def test_the_sync_example_answers_two_threads_at_once_in_the_responses_api_shape() -> None:
    out = run_example("sync_tool_loop.py")
    lines = out.splitlines()
    assert (
        lines[0]
        == "tools for the Responses API: list_skills (strict=True), read_skill (strict=True), "
        "read_skill_file (strict=True)"
    )
    assert "pdf-processing" in lines[1]
    first = lines.index("request 1")
    assert lines[first + 1].startswith("  read_skill -> a skill block from mcp:examples: ")
    assert lines[first + 2].startswith(
        "  read_skill_file -> a file block from mcp:examples: # Forms"
    )
    second = lines.index("request 2")
    assert "an error block from host: SkillNotFound" in lines[second + 1]
    assert "an error block from host: SkillNotFound" in lines[second + 2]
    assert lines[-1].startswith("closed:")


def test_the_pydantic_ai_example_asks_through_deferred_approvals_and_loads_what_was_approved() -> (
    None
):
    out = run_example("pydantic_ai_agent.py")
    lines = out.splitlines()
    assert out.count("the run pauses") == 1  # the loaded skill, asked for again, asks nobody
    assert "  the run pauses: 2 skills wait for the person" in lines
    assert "load skill 'examples:pdf-processing' from server 'examples' (4 files" in out
    assert "content sha256:" in out
    answers = lines.index("run 2, with the person's answers")
    assert lines[answers + 1 :] == [
        "  -> read_skill: a skill block from examples, trust=untrusted",
        "  -> read_skill: an error block from examples, trust=untrusted: ApprovalDenied",
        "  model calls read_skill_file({'ref': 'pdf-processing', 'path': 'references/FORMS.md'})",
        "  -> read_skill_file: a file block from examples, trust=untrusted",
        "  model calls read_skill({'ref': 'pdf-processing'})",
        "  -> read_skill: a skill block from examples, trust=untrusted",
        "the model's answer: done",
    ]


def test_the_openai_agents_example_interrupts_the_run_and_resumes_it_with_the_answers() -> None:
    out = run_example("openai_agents_agent.py")
    lines = out.splitlines()
    assert out.count("the run is interrupted") == 1
    assert "  the run is interrupted: 2 skills wait for the person" in lines
    assert "load skill 'examples:git-workflow' from server 'examples' (3 files" in out
    assert "OPENAI_API_KEY" not in out  # nothing is sent anywhere
    resumed = lines.index("run 2, resumed from its state with the person's answers")
    assert lines[resumed + 1 :] == [
        "  -> a skill block from examples, trust=untrusted",
        "  -> an error block from examples, trust=untrusted: ApprovalDenied",
        '  model calls read_skill_file({"ref":"pdf-processing","path":"references/FORMS.md"})',
        "  -> a file block from examples, trust=untrusted",
        '  model calls read_skill({"ref":"pdf-processing"})',
        "  -> a skill block from examples, trust=untrusted",
        "the model's answer: done",
    ]


def readme_embedding_snippet() -> str:
    """The README's Python code block for host developers, exactly as written."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"^```python\n(.*?)^```$", readme, flags=re.M | re.S)
    return str(block)


def test_the_readmes_embedding_snippet_runs_as_written_and_asks_once(tmp_path: Path) -> None:
    snippet = tmp_path / "host.py"
    snippet.write_text(readme_embedding_snippet(), encoding="utf-8")
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    child: pexpect.spawn[bytes] = pexpect.spawn(
        sys.executable, [str(snippet)], env=env, cwd=str(tmp_path), timeout=60
    )
    try:
        child.expect(r"eny\? .*\(d\)")  # approve once, ..., deny? (d)
        child.sendline("o")
        child.expect(pexpect.EOF)
        assert isinstance(child.before, bytes)
        after = child.before.decode()
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, after
    assert "(d)" not in after  # asked once, before the skill was loaded
    assert "<skillward:skill " in after
    assert "<skillward:file " in after
    assert after.count('verified="true"') == 2
    assert "<skillward:error" not in after
