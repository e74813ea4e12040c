"""`skillward check` as CI runs it: the GitHub Action (action.yml), its steps' scripts run
as the runner runs them, and the pre-commit hook (.pre-commit-hooks.yaml), its entry run
with the file names pre-commit passes."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from skillward.serve.catalog import example_skills_dir
from tests.integration.test_check import SARIF_SCHEMA
from tests.integration.test_cli import environment
from tests.support.listings import REPO_ROOT
from tests.support.trees import skill_md, write

#: The expressions the action's scripts may be given; anything else fails the test, so
#: the action stays runnable here as it is on GitHub.
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
KEY = "AKIA" + "Q7" * 8


def workspace(tmp_path: Path, *, broken: bool = False) -> Path:
    """A checked-out repository with its skills in skills/."""
    repo = tmp_path / "workspace"
    shutil.copytree(example_skills_dir(), repo / "skills")
    if broken:
        write(repo / "skills", "leaky/SKILL.md", skill_md("leaky", "Leaks"))
        write(repo / "skills", "leaky/notes.md", f"aws = {KEY}\n".encode())
        write(repo / "skills", "Wrong/SKILL.md", skill_md("wrong", "Misnamed folder"))
    return repo


def path_with_skillward() -> str:
    """PATH with this interpreter's scripts (python3, skillward) first, as setup-python
    and the install step leave it."""
    return f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


class Runner:
    """The GitHub runner, for a composite action's ``run`` steps: each script run as
    ``bash --noprofile --norc -eo pipefail`` in the workspace, its env with expressions
    substituted, step outputs read back from ``$GITHUB_OUTPUT``; ``uses`` steps (other
    actions: setup-python, upload-sarif) are skipped."""

    def __init__(self, tmp_path: Path, repo: Path, inputs: dict[str, str]) -> None:
        self.action = yaml.safe_load((REPO_ROOT / "action.yml").read_text(encoding="utf-8"))
        self.inputs = {
            name: str(spec.get("default", "")) for name, spec in self.action["inputs"].items()
        }
        self.inputs.update(inputs)
        self.repo = repo
        self.tmp = tmp_path
        self.outputs: dict[str, dict[str, str]] = {}

    def value(self, expression: str) -> str:
        if expression.startswith("inputs."):
            return self.inputs[expression.removeprefix("inputs.")]
        if expression == "github.action_path":
            return str(REPO_ROOT)
        match = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression)
        assert match, f"action.yml uses an expression this runner does not know: {expression}"
        return self.outputs.get(match.group(1), {}).get(match.group(2), "")

    def substitute(self, text: str) -> str:
        return EXPRESSION.sub(lambda m: self.value(m.group(1)), text)

    def run(self) -> list[subprocess.CompletedProcess[str]]:
        done: list[subprocess.CompletedProcess[str]] = []
        for index, step in enumerate(self.action["runs"]["steps"]):
            if "uses" in step:
                continue
            assert "if" not in step, "a run step with a condition: teach this runner"
            assert not EXPRESSION.search(step["run"]), "expressions belong in env"
            output = self.tmp / f"output-{index}"
            output.write_text("")
            env = {
                **environment(self.tmp / "home"),
                "PATH": path_with_skillward(),
                "GITHUB_OUTPUT": str(output),
                "GITHUB_WORKSPACE": str(self.repo),
                "GITHUB_ACTION_PATH": str(REPO_ROOT),
                **{name: self.substitute(str(v)) for name, v in step.get("env", {}).items()},
            }
            script = self.tmp / f"step-{index}.sh"
            script.write_text(step["run"])
            result = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=self.repo,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            done.append(result)
            if "id" in step:
                self.outputs[step["id"]] = dict(
                    line.split("=", 1) for line in output.read_text().splitlines() if line
                )
            if result.returncode != 0:
                break
        return done


def valid_sarif(path: Path) -> dict[str, Any]:
    log: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(log)
    return log


def test_the_action_checks_the_repositorys_skills_and_writes_sarif(tmp_path: Path) -> None:
    repo = workspace(tmp_path)
    runner = Runner(tmp_path, repo, {"args": "--strict"})
    steps = runner.run()
    assert [step.returncode for step in steps] == [0, 0, 0], [s.stderr for s in steps]
    # The install step found skillward from the action's own path installed already.
    assert f"skillward from {REPO_ROOT} is installed" in steps[0].stdout
    assert runner.outputs["check"] == {"sarif-file": "skillward.sarif", "exit-code": "0"}
    log = valid_sarif(repo / "skillward.sarif")
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in log["runs"][0]["results"]
    }
    assert "skills/pdf-processing/SKILL.md" in uris


def test_the_action_uploads_sarif_and_fails_as_the_check_did(tmp_path: Path) -> None:
    repo = workspace(tmp_path, broken=True)
    runner = Runner(tmp_path, repo, {"sarif-file": "out/findings.sarif"})
    (repo / "out").mkdir()
    steps = runner.run()
    # The check's own step passes, so that the upload runs; the last step fails.
    assert [step.returncode for step in steps] == [0, 0, 1], [s.stderr for s in steps]
    assert "skillward check exited 1" in steps[2].stdout
    assert runner.outputs["check"]["exit-code"] == "1"
    log = valid_sarif(repo / "out" / "findings.sarif")
    results = log["runs"][0]["results"]
    secret = next(r for r in results if r["ruleId"] == "SW-HYG-006")
    assert secret["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}
    assert KEY not in (repo / "out" / "findings.sarif").read_text()


def test_the_actions_inputs_reach_the_scripts_only_as_data(tmp_path: Path) -> None:
    repo = workspace(tmp_path)
    marker = tmp_path / "pwned"
    runner = Runner(tmp_path, repo, {"path": f"skills; touch {marker}", "baseline": "$(id)"})
    steps = runner.run()
    assert not marker.exists()
    assert runner.outputs["check"]["exit-code"] == "2", [s.stderr for s in steps]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def pre_commit(repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """The hook as pre-commit runs it: its entry, with the staged files its filters pass
    (``types: [file]``: every regular file), from the repository's root."""
    (hook,) = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text("utf-8"))
    assert hook["language"] == "python"
    assert set(hook) <= {
        "id",
        "name",
        "description",
        "entry",
        "language",
        "types",
        "require_serial",
    }
    staged = git(repo, "diff", "--cached", "--name-only").split()
    files = [name for name in staged if (repo / name).is_file()]
    env = {**environment(home), "PATH": path_with_skillward()}
    return subprocess.run(
        [*shlex.split(hook["entry"]), *hook.get("args", []), *files],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_pre_commit_hook_checks_the_skills_a_commit_touches(tmp_path: Path) -> None:
    repo = workspace(tmp_path)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    clean = pre_commit(repo, tmp_path / "home")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "3 servers checked" in " ".join(clean.stdout.split())
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "skills")
    write(repo / "skills", "leaky/SKILL.md", skill_md("leaky", "Leaks"))
    write(repo / "skills", "Wrong/SKILL.md", skill_md("wrong", "Misnamed folder"))
    write(repo, "README.md", b"# not a skill\n")
    git(repo, "add", "-A")
    failing = pre_commit(repo, tmp_path / "home")
    assert failing.returncode == 1, failing.stdout + failing.stderr
    text = " ".join(failing.stdout.split())
    assert "2 servers checked" in text
    assert "skills/Wrong/SKILL.md:2" in text
    git(repo, "reset", "-q")
    write(repo, "README.md", b"# still not a skill\n")
    git(repo, "add", "README.md")
    nothing = pre_commit(repo, tmp_path / "home")
    assert nothing.returncode == 0
    assert "nothing to check" in nothing.stdout
