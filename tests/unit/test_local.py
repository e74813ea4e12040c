"""Local skill directories: bounded discovery, declined skills, confined reads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skillward.core.config import Limits
from skillward.core.errors import (
    ConfigError,
    FrontmatterError,
    InvalidEntry,
    InvalidUri,
    SkillwardError,
    UsageError,
)
from skillward.core.registry import SkillRecord
from skillward.edge._local import (
    LocalSkillDir,
    default_local_dirs,
    discover,
    read_local_file,
    read_skill_md,
    skill_files,
)
from tests.support.trees import skill_md, write

LIMITS = Limits()


def found(root: Path, path: str) -> SkillRecord:
    """The skill discovered at ``path`` under ``root`` (labelled ``project``)."""
    _, records, _, _ = discover(LocalSkillDir("project", root), limits=LIMITS)
    (record,) = [r for r in records if r.path == path]
    return record


def test_default_directories_follow_the_agents_skills_convention(tmp_path: Path) -> None:
    project, user = default_local_dirs(cwd=tmp_path / "repo", home=tmp_path / "home")
    assert (project.label, project.path) == ("project", tmp_path / "repo" / ".agents" / "skills")
    assert (user.label, user.path) == ("user", tmp_path / "home" / ".agents" / "skills")


def test_skills_are_discovered_with_name_description_and_relative_path(tmp_path: Path) -> None:
    write(tmp_path, "pdf/SKILL.md", skill_md("pdf", "PDF tools"))
    write(tmp_path, "team/review/SKILL.md", skill_md("review", "Code review"))
    write(tmp_path, "README.md", b"not a skill")
    origin, records, declined, _ = discover(LocalSkillDir("project", tmp_path), limits=LIMITS)
    assert origin.kind == "local"
    assert [(r.name, r.path, r.description) for r in records] == [
        ("pdf", "pdf", "PDF tools"),
        ("review", "team/review", "Code review"),
    ]
    assert declined == []


def test_a_missing_directory_is_simply_empty(tmp_path: Path) -> None:
    _, records, declined, notes = discover(
        LocalSkillDir("user", tmp_path / "absent"), limits=LIMITS
    )
    assert (records, declined, notes) == ([], [], [])


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (b"no frontmatter", FrontmatterError),
        (b"---\nname: Bad_Name\ndescription: d\n---\n", InvalidEntry),
        (b"---\nname: x\n---\n", InvalidEntry),
        (b"---\nname: &a x\ndescription: d\n---\n", FrontmatterError),
    ],
)
def test_unusable_skills_are_declined_with_the_reason(
    tmp_path: Path, content: bytes, error: type[Exception]
) -> None:
    write(tmp_path, "x/SKILL.md", content)
    _, records, declined, _ = discover(LocalSkillDir("project", tmp_path), limits=LIMITS)
    assert records == []
    assert isinstance(declined[0].error, error)
    assert declined[0].error.server == "project"


def test_a_name_differing_from_its_folder_loads_with_a_note(tmp_path: Path) -> None:
    write(tmp_path, "folder/SKILL.md", skill_md("other-name"))
    _, records, _, notes = discover(LocalSkillDir("project", tmp_path), limits=LIMITS)
    assert [r.name for r in records] == ["other-name"]
    assert any("differs from its folder" in n for n in notes)


@pytest.mark.threat("T10")
def test_symlinked_skill_folders_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "evil/SKILL.md", skill_md("evil"))
    skills = tmp_path / "skills"
    skills.mkdir()
    os.symlink(outside / "evil", skills / "evil")
    _, records, _, notes = discover(LocalSkillDir("project", skills), limits=LIMITS)
    assert records == []
    assert any("not followed" in n for n in notes)


def test_discovery_is_bounded(tmp_path: Path) -> None:
    for i in range(50):
        write(tmp_path, f"s{i}/SKILL.md", skill_md(f"s{i}"))
    _, records, _, notes = discover(
        LocalSkillDir("project", tmp_path), limits=Limits(max_local_scan_entries=20)
    )
    assert records == []
    assert any("scan stopped" in n for n in notes)


def test_files_inside_the_skill_are_read(tmp_path: Path) -> None:
    write(tmp_path, "s/SKILL.md", skill_md("s"))
    write(tmp_path, "s/ref/guide.md", b"guide")
    shown, data = read_local_file(found(tmp_path, "s"), "ref/guide.md", limits=LIMITS)
    assert data == b"guide"
    assert shown.endswith("ref/guide.md")


@pytest.mark.threat("T10")
@pytest.mark.parametrize(
    "path", ["../secret", "/etc/passwd", "ref/../../secret", "a\\b", "", "ref//x"]
)
def test_paths_leaving_the_skill_are_refused(tmp_path: Path, path: str) -> None:
    write(tmp_path, "secret", b"secret")
    write(tmp_path, "s/SKILL.md", skill_md("s"))
    write(tmp_path, "s/ref/guide.md", b"guide")
    with pytest.raises((InvalidUri, UsageError)):
        read_local_file(found(tmp_path, "s"), path, limits=LIMITS)


@pytest.mark.threat("T10")
def test_reads_never_pass_through_a_symlink(tmp_path: Path) -> None:
    write(tmp_path, "outside/secret.md", b"secret")
    write(tmp_path, "s/SKILL.md", skill_md("s"))
    os.symlink(tmp_path / "outside", tmp_path / "s" / "link")
    os.symlink(tmp_path / "outside" / "secret.md", tmp_path / "s" / "direct.md")
    for path in ("link/secret.md", "direct.md"):
        with pytest.raises(UsageError):
            read_local_file(found(tmp_path, "s"), path, limits=LIMITS)


def test_a_fifo_in_a_skill_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    write(tmp_path, "pdf/SKILL.md", skill_md("pdf"))
    os.mkfifo(tmp_path / "pdf" / "pipe.md")
    with pytest.raises(UsageError, match="not a regular file") as info:
        read_local_file(found(tmp_path, "pdf"), "pipe.md", limits=LIMITS)
    assert "local skills 'project'" in str(info.value)


INSIDE, OUTSIDE = b"inside the skills directory", b"OUTSIDE the skills directory"
# Each folder or file on the way to the skill's files, from the skills directory down.
LEVELS = ["team", "team/review", "team/review/ref", "team/review/ref/notes.md"]


@pytest.mark.threat("T10")
@pytest.mark.parametrize("swapped", LEVELS)
def test_a_symlink_swapped_in_at_any_level_after_discovery_is_never_followed(
    tmp_path: Path, swapped: str
) -> None:
    skills, outside = tmp_path / "skills", tmp_path / "outside"
    for root, text in ((skills, INSIDE), (outside, OUTSIDE)):
        write(root, "team/review/SKILL.md", skill_md("review", text.decode()))
        write(root, "team/review/ref/notes.md", text)
    record = found(skills, "team/review")
    (skills / swapped).rename(tmp_path / "moved-aside")
    (skills / swapped).symlink_to(outside / swapped)

    with pytest.raises(UsageError) as read:  # a file's read passes through every level
        read_local_file(record, "ref/notes.md", limits=LIMITS)
    refusals: list[SkillwardError] = [read.value]
    if swapped in ("team", "team/review"):  # on the way to SKILL.md too
        with pytest.raises(InvalidEntry) as loaded:
            read_skill_md(record, limits=LIMITS)
        with pytest.raises(UsageError) as listed:
            skill_files(record, limits=LIMITS)
        refusals += [loaded.value, listed.value]
    else:
        data, _ = read_skill_md(record, limits=LIMITS)
        assert INSIDE in data
        assert skill_files(record, limits=LIMITS) == ["SKILL.md"]
    for error in refusals:
        assert error.server == "project"
        assert error.local
        assert f"{skills / swapped} is a symlink" in error.message
        assert OUTSIDE.decode() not in str(error)


@pytest.mark.threat("T10")
def test_discovery_lists_every_folder_through_its_parent_s_descriptor(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    write(skills, "team/review/SKILL.md", skill_md("review"))
    write(tmp_path / "outside", "evil/SKILL.md", skill_md("evil"))
    (skills / "team" / "link").symlink_to(tmp_path / "outside")
    _, records, declined, notes = discover(LocalSkillDir("project", skills), limits=LIMITS)
    assert [r.path for r in records] == ["team/review"]
    assert declined == []
    assert any("team/link: symlinked directory not followed" in note for note in notes)


def test_a_configured_directory_that_is_a_symlink_is_not_scanned(tmp_path: Path) -> None:
    write(tmp_path, "real/pdf/SKILL.md", skill_md("pdf"))
    (tmp_path / "link").symlink_to(tmp_path / "real")
    _, records, _, notes = discover(LocalSkillDir("project", tmp_path / "link"), limits=LIMITS)
    assert records == []
    assert any("symlink" in note for note in notes)


def test_a_string_path_is_made_a_path_at_construction(tmp_path: Path) -> None:
    write(tmp_path, "proj/.agents/skills/pdf/SKILL.md", skill_md("pdf", "PDF tools"))
    source = LocalSkillDir("project", str(tmp_path / "proj/.agents/skills"))
    assert source.path == tmp_path / "proj/.agents/skills"
    _, records, _, _ = discover(source, limits=LIMITS)
    assert [r.name for r in records] == ["pdf"]


@pytest.mark.parametrize(
    ("label", "path"),
    [("Project", "skills"), ("a:b", "skills"), ("project", ""), ("project", 3), ("p", "a\x00b")],
)
def test_a_bad_local_skills_dir_is_refused_at_construction(label: str, path: object) -> None:
    with pytest.raises(ConfigError):
        LocalSkillDir(label, path)  # type: ignore[arg-type]
