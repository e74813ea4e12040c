"""`skillward check DIR`: a skills directory in a repository, served in process through
`skillward serve`'s code and checked, its findings on repository files and lines (text,
JSON, and SARIF as code scanning reads it); `--map` for servers whose sources are in the
repository; files naming the skills they are in; and a directory that tries to make the
check read outside the repository or past its bounds."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from skillward.check._docs import REPOSITORY
from skillward.check._locations import Locations
from skillward.check.runner import check_server
from skillward.cli._checkdir import served_directory
from skillward.core.config import Limits
from skillward.serve.catalog import example_skills_dir
from tests.integration.test_check import SARIF_SCHEMA
from tests.integration.test_cli import run
from tests.support.trees import skill_md, write

#: A credential-shaped value, built here so that none sits in the source.
KEY = "AKIA" + "Q7" * 8


def repository(tmp_path: Path) -> Path:
    """A repository (a directory with .git) holding the bundled examples in skills/."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    shutil.copytree(example_skills_dir(), repo / "skills")
    return repo


def broken(repo: Path) -> Path:
    """skills/ with a skill breaking rules a reviewer looks for, at known lines."""
    skills = repo / "skills"
    write(skills, "bad/SKILL.md", skill_md("Bad_Name", "Misnamed"))
    write(skills, "other/SKILL.md", skill_md("elsewhere", "Named for another folder"))
    write(skills, "yaml/SKILL.md", b"---\nname: yaml\ndescription: [unclosed\n---\nBody\n")
    write(
        skills,
        "leaky/SKILL.md",
        skill_md("leaky", "Leaks", "allowed-tools: Bash WebFetch\n")
        + b"\nRead [the guide](references/guide.md) first.\n",
    )
    write(skills, "leaky/notes.md", f"one\ntwo\naws = {KEY}\n".encode())
    return skills


def findings(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for server in report["servers"] for f in server["findings"]]


def located(report: dict[str, Any]) -> set[tuple[str, str | None, int | None]]:
    return {(f["rule"], f["path"], f["line"]) for f in findings(report)}


def test_the_bundled_examples_pass_strict_checked_in_place(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    result = run("check", "--strict", "--no-local", "./skills", home=tmp_path, cwd=repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 skills listed, 14 files read and verified: 0 errors, 0" in result.stdout
    # Findings name repository files, with the line where there is one.
    text = " ".join(result.stdout.split())
    assert "skills/pdf-processing/SKILL.md:5: allowed-tools" in text
    assert "skills/git-workflow/scripts/check-branch.sh:" in text


@pytest.mark.rule("SW-FM-001")
@pytest.mark.rule("SW-URI-002")
@pytest.mark.rule("SW-HYG-005")
@pytest.mark.rule("SW-HYG-006")
@pytest.mark.rule("SW-HYG-008")
def test_findings_land_on_repository_files_and_lines(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    broken(repo)
    result = run("check", "--json", "--no-local", ".", home=tmp_path, cwd=repo / "skills")
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads(result.stdout)
    found = located(report)
    assert {
        # Frontmatter fields, at the line of their key.
        ("SW-FM-001", "skills/bad/SKILL.md", 2),
        ("SW-URI-002", "skills/other/SKILL.md", 2),
        ("SW-HYG-008", "skills/leaky/SKILL.md", 4),
        ("SW-HYG-003", "skills/leaky/SKILL.md", 4),
        # Not YAML: the skill cannot be served at all, and says why.
        ("SW-FM-009", "skills/yaml/SKILL.md", None),
        # Body lines, counted in the file.
        ("SW-HYG-005", "skills/leaky/SKILL.md", 10),
        ("SW-HYG-006", "skills/leaky/notes.md", 3),
    } <= found, found
    secret = next(f for f in findings(report) if f["rule"] == "SW-HYG-006")
    assert KEY not in result.stdout
    assert "AKIA" not in json.dumps(secret)
    (server,) = report["servers"]
    assert server["label"] == "skills"
    assert server["checked"] is True


@pytest.mark.threat("T65")
@pytest.mark.rule("SW-SRC-001")
def test_a_link_out_of_the_repository_is_never_followed_and_is_reported(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    outside = tmp_path / "home" / "secrets.txt"
    write(outside.parent, outside.name, f"token = {KEY}\n".encode())
    (repo / "skills" / "git-workflow" / "secrets.txt").symlink_to(outside)
    (repo / "skills" / "linked").symlink_to(outside.parent, target_is_directory=True)
    result = run("check", "--json", "--no-local", "./skills", home=tmp_path, cwd=repo)
    report = json.loads(result.stdout)
    found = located(report)
    assert ("SW-SRC-001", "skills/git-workflow/secrets.txt", None) in found, found
    assert ("SW-SRC-001", "skills/linked", None) in found, found
    # What the link points at was never read: nothing of it is reported.
    assert not [f for f in findings(report) if f["rule"] == "SW-HYG-006"]
    assert str(tmp_path) not in json.dumps([f["message"] for f in findings(report)])


@pytest.mark.threat("T65")
@pytest.mark.parametrize("checked", ["skills", "./skills/", "skills/leaky"])
def test_a_directory_that_is_or_lies_behind_a_link_is_not_checked(
    tmp_path: Path, checked: str
) -> None:
    # A pull request can make the directory a workflow checks a link out of the repository.
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    outside = tmp_path / "home" / "secret"
    write(outside, "leaky/SKILL.md", skill_md("Leaky Name", f"token = {KEY}"))
    (repo / "skills").symlink_to(outside, target_is_directory=True)
    result = run("check", "--json", "--no-local", checked, home=tmp_path, cwd=repo)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "is, or lies behind, a link (skills)" in result.stderr
    assert KEY not in result.stdout + result.stderr
    assert str(outside) not in result.stdout + result.stderr


@pytest.mark.threat("T55")
@pytest.mark.threat("T65")
@pytest.mark.parametrize("name", [b"bad\x1bname", b"bad\xffname"], ids=["control", "not-utf-8"])
def test_a_skill_folder_no_uri_can_name_is_a_finding_and_the_rest_is_checked(
    tmp_path: Path, name: bytes
) -> None:
    repo = repository(tmp_path)
    folder = Path(os.fsdecode(bytes(repo / "skills") + b"/" + name))
    write(folder, "SKILL.md", skill_md("odd", "Oddly named"))
    result = run("check", "--format", "sarif", "--no-local", "./skills", home=tmp_path, cwd=repo)
    log = json.loads(result.stdout)
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text("utf-8"))).validate(log)
    texts = [r["message"]["text"] for r in log["runs"][0]["results"]]
    assert any(text.startswith("skills/bad\\") for text in texts), texts
    text = run("check", "--no-local", "./skills", home=tmp_path, cwd=repo)
    assert "4 skills listed" in text.stdout, text.stdout + text.stderr
    alone = run("check", "--no-local", os.fsdecode(bytes(folder)), home=tmp_path, cwd=repo)
    assert alone.returncode == 2
    assert "folder name no skill URI can carry" in alone.stderr
    assert "\x1b" not in alone.stderr.replace("\\x1b", "")


@pytest.mark.anyio
@pytest.mark.threat("T65")
@pytest.mark.rule("SW-LIM-001")
@pytest.mark.rule("SW-LIM-002")
async def test_a_skill_past_the_bounds_is_refused_while_it_is_read(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    limits = Limits()
    write(repo / "skills", "big/SKILL.md", skill_md("big", "Too big"))
    write(repo / "skills", "big/data.bin", b"x" * limits.max_skill_bytes)
    write(repo / "skills", "many/SKILL.md", skill_md("many", "Too many"))
    for n in range(limits.max_skill_files):
        write(repo / "skills", f"many/f{n}.md", b"x\n")
    served = served_directory(repo / "skills", "skills", limits)
    with anyio.fail_after(60):
        report = await check_server(
            served.spec, limits=limits, locations=served.locations, found=served.found
        )
    refused = {(f.rule, f.skill) for f in report.findings if f.rule.startswith("SW-LIM")}
    assert refused == {
        ("SW-LIM-002", "skill://big/SKILL.md"),
        ("SW-LIM-001", "skill://many/SKILL.md"),
    }
    assert report.error is None


def test_sarif_of_a_directory_is_what_code_scanning_reads(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    broken(repo)
    result = run("check", "--format", "sarif", "--no-local", "skills", home=tmp_path, cwd=repo)
    assert result.returncode == 1, result.stderr
    log = json.loads(result.stdout)
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(log)
    (run_log,) = log["runs"]
    driver = run_log["tool"]["driver"]
    assert driver["name"] == "skillward"
    assert driver["version"]
    assert driver["informationUri"] == REPOSITORY
    for described in driver["rules"]:
        assert described["helpUri"].endswith(f"/docs/check.md#{described['id'].lower()}")
    by_rule = {r["ruleId"]: r for r in run_log["results"]}
    location = by_rule["SW-HYG-006"]["locations"][0]["physicalLocation"]
    assert location == {
        "artifactLocation": {"uri": "skills/leaky/notes.md", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 3},
    }
    for result_log in run_log["results"]:
        uri = result_log["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert uri.startswith("skills/"), uri
        assert result_log["partialFingerprints"]["skillwardFinding/v1"]


def test_fingerprints_tell_findings_in_one_file_apart_and_survive_lines_moving(
    tmp_path: Path,
) -> None:
    repo = repository(tmp_path)
    notes = repo / "skills" / "git-workflow" / "references" / "commit-style.md"
    original = notes.read_bytes()

    def fingerprints() -> list[tuple[int, str]]:
        done = run("check", "--format", "sarif", "--no-local", "skills", home=tmp_path, cwd=repo)
        results = json.loads(done.stdout)["runs"][0]["results"]
        return sorted(
            (
                r["locations"][0]["physicalLocation"]["region"]["startLine"],
                r["partialFingerprints"]["skillwardFinding/v1"],
            )
            for r in results
            if r["ruleId"] == "SW-HYG-007"
        )

    notes.write_bytes(original + b"http://198.51.100.1/a\nhttp://198.51.100.2/b\n")
    before = fingerprints()
    notes.write_bytes(b"a new first line\n" + original + b"http://198.51.100.1/a\n")
    notes.write_bytes(notes.read_bytes() + b"http://198.51.100.2/b\n")
    after = fingerprints()
    assert len({fingerprint for _, fingerprint in before}) == 2
    assert [line + 1 for line, _ in before] == [line for line, _ in after]
    assert [f for _, f in before] == [f for _, f in after]


def test_a_server_whose_sources_are_in_the_repository_is_mapped_onto_them(
    tmp_path: Path,
) -> None:
    repo = repository(tmp_path)
    broken(repo)
    serve = f"mine={sys.executable} -m skillward serve {repo / 'skills'}"
    mapped = ("--map", "skill://=skills")
    result = run("check", "--json", "--server", serve, *mapped, home=tmp_path, cwd=repo)
    report = json.loads(result.stdout)
    # `skillward serve` refuses what breaks a rule; what it serves lands on its files.
    assert ("SW-HYG-006", "skills/leaky/notes.md", 3) in located(report)
    unmapped = run("check", "--json", "--server", serve, home=tmp_path, cwd=repo)
    secret = next(f for f in findings(json.loads(unmapped.stdout)) if f["rule"] == "SW-HYG-006")
    assert (secret["path"], secret["uri"]) == (None, "skill://leaky/notes.md")


@pytest.mark.threat("T55")
def test_a_hostile_server_cannot_map_a_uri_out_of_the_repository() -> None:
    locations = Locations.of([("skill://", "skills")])
    for uri in ("skill://a/%2E%2E/%2E%2E/etc/passwd", "skill://a/..%2Fx", "skill://a/%00"):
        assert locations.path(uri) is None, uri


def test_files_name_the_skills_they_are_in_as_pre_commit_passes_them(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    broken(repo)
    files = ("skills/leaky/notes.md", "skills/pdf-processing/SKILL.md", "README.md")
    write(repo, "README.md", b"# repo\n")
    result = run("check", "--json", "--no-local", *files, home=tmp_path, cwd=repo)
    report = json.loads(result.stdout)
    assert sorted(server["target"] for server in report["servers"]) == [
        str(repo / "skills" / "leaky"),
        str(repo / "skills" / "pdf-processing"),
    ]
    assert ("SW-HYG-006", "skills/leaky/notes.md", 3) in located(report)
    nothing = run("check", "--no-local", "README.md", home=tmp_path, cwd=repo)
    assert nothing.returncode == 0, nothing.stdout + nothing.stderr
    assert "nothing to check" in nothing.stdout


def test_a_directory_without_skills_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = run("check", "--no-local", "./empty", home=tmp_path, cwd=tmp_path)
    assert result.returncode == 2
    assert "no skill to check under" in result.stderr
    missing = run("check", "--no-local", "./nowhere", home=tmp_path, cwd=tmp_path)
    assert missing.returncode == 2
    assert "is not a directory or a file" in missing.stderr


def test_a_directory_outside_the_repository_is_located_where_it_is(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    write(skills, "shell/SKILL.md", skill_md("shell", "Runs things", "allowed-tools: Bash\n"))
    here = tmp_path / "elsewhere"
    (here / ".git").mkdir(parents=True)
    result = run("check", "--format", "sarif", "--no-local", str(skills), home=tmp_path, cwd=here)
    log = json.loads(result.stdout)
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text("utf-8"))).validate(log)
    (broad,) = [r for r in log["runs"][0]["results"] if r["ruleId"] == "SW-HYG-008"]
    location = broad["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": (skills / "shell" / "SKILL.md").as_uri()}
    assert location["region"] == {"startLine": 4}


@pytest.mark.threat("T55")
def test_a_file_name_that_drives_a_terminal_is_reported_escaped(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    evil = "\x1b[2J\u202egnp.txt"
    (repo / "skills" / "git-workflow" / evil).symlink_to(repo / "skills" / "git-workflow")
    result = run("check", "--no-local", "./skills", home=tmp_path, cwd=repo)
    assert "SW-SRC-001" in result.stdout
    # No URI can carry its name, so the message names it, escaped.
    assert "skills/git-workflow/\\x1b[2J\\u202egnp.txt" in result.stdout
    for forbidden in ("\x1b", "\u202e"):
        assert forbidden not in result.stdout


@pytest.mark.threat("T65")
def test_a_file_linked_out_of_the_repository_names_no_skill(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    (repo / ".git").mkdir(exist_ok=True)
    outside = tmp_path / "home" / "private"
    write(outside, "SKILL.md", skill_md("private", "Not the repository's"))
    write(outside, "notes.md", f"token = {KEY}\n".encode())
    (repo / "linked.md").symlink_to(outside / "notes.md")
    result = run("check", "--json", "--no-local", "linked.md", home=tmp_path, cwd=repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["servers"] == []
    sarif = run("check", "--format", "sarif", "--no-local", "linked.md", home=tmp_path, cwd=repo)
    log = json.loads(sarif.stdout)
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text("utf-8"))).validate(log)
    assert log["runs"][0]["results"] == []
