"""Local filesystem skills: discovery in configured directories, and confined reads.

Discovery follows the Agent Skills integration guide: every folder holding a
``SKILL.md`` under a configured skills directory, bounded in depth and entries,
never through a symlink. A SKILL.md whose frontmatter cannot be parsed, or whose
name breaks the naming rules, is declined with the reason; a name that differs
from its folder is loaded with a note.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from skillward.core._fields import lint_frontmatter
from skillward.core.config import Limits
from skillward.core.errors import (
    ConfigError,
    InvalidEntry,
    InvalidUri,
    SkillTooLarge,
    SkillwardError,
    UsageError,
    printable,
)
from skillward.core.frontmatter import SkillDocument, parse_skill_md
from skillward.core.labels import check_label
from skillward.core.origins import Origin, SkillKey
from skillward.core.registry import Declined, SkillRecord
from skillward.core.uris import SKILL_FILE
from skillward.edge._tree import TreeLimits, find_skill_dirs, read_regular_file, walk_files

__all__ = [
    "LocalSkillDir",
    "default_local_dirs",
    "discover",
    "read_local_file",
    "read_skill_md",
    "skill_files",
]


@dataclass(frozen=True, slots=True, init=False)
class LocalSkillDir:
    """A directory of local skills, and the origin label its skills get.

    Checked at construction: ``label`` must be a server label and ``path`` a ``Path``
    or a non-empty ``str`` (made a ``Path``), else ConfigError.
    """

    label: str
    path: Path

    def __init__(self, label: str, path: Path | str) -> None:
        check_label(label)
        given: object = path
        if isinstance(given, str) and given:
            given = Path(given)
        if not isinstance(given, Path) or "\x00" in str(given):
            raise ConfigError(
                f"local skills directory {label!r}: the path must be a Path or a "
                f"non-empty string without NUL, not {printable(repr(path), limit=80)}"
            )
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "path", given)


def default_local_dirs(
    cwd: Path | None = None, home: Path | None = None
) -> tuple[LocalSkillDir, ...]:
    """The cross-client ``.agents/skills`` conventions: project first, then user."""
    cwd = cwd if cwd is not None else Path.cwd()
    home = home if home is not None else Path.home()
    return (
        LocalSkillDir("project", cwd / ".agents" / "skills"),
        LocalSkillDir("user", home / ".agents" / "skills"),
    )


def read_skill_md(directory: Path, *, limits: Limits, label: str) -> tuple[bytes, SkillDocument]:
    """The raw bytes of a local SKILL.md and the document parsed from those same bytes."""
    path = directory / SKILL_FILE
    try:
        data = read_regular_file(path, limits.max_skill_bytes)
    except OSError as exc:
        raise InvalidEntry(f"cannot read {path}: {exc}", server=label, local=True) from None
    try:
        return data, parse_skill_md(data, limits=limits, server=label, uri=str(path))
    except SkillwardError as exc:
        raise exc.with_context(local=True) from None


def discover(
    source: LocalSkillDir, *, limits: Limits
) -> tuple[Origin, list[SkillRecord], list[Declined], list[str]]:
    """Every skill under ``source``: (origin, records, declined, notes)."""
    tree = TreeLimits(
        max_depth=limits.max_local_scan_depth, max_entries=limits.max_local_scan_entries
    )
    origin = Origin("local", source.label, str(source.path))
    records: list[SkillRecord] = []
    declined: list[Declined] = []
    notes: list[str] = []
    if source.path.is_symlink():
        # Discovery never follows a symlink, the configured directory included.
        notes.append(
            f"{source.path}: is a symlink, so it is not scanned; configure the directory it "
            "points to instead"
        )
        return origin, records, declined, notes
    if not source.path.is_dir():
        return origin, records, declined, notes
    try:
        found, skipped = find_skill_dirs(source.path, limits=tree)
    except (OSError, OverflowError) as exc:
        notes.append(f"{source.path}: scan stopped: {exc}")
        return origin, records, declined, notes
    notes.extend(skipped)
    for parts, found_at in found:
        directory = Path(found_at)
        relative = "/".join(parts) or directory.name
        try:
            _, document = read_skill_md(directory, limits=limits, label=source.label)
            lint_frontmatter(document.frontmatter)
        except SkillwardError as exc:
            declined.append(Declined(origin, exc.with_context(uri=str(directory), local=True)))
            continue
        except ValueError as exc:
            declined.append(
                Declined(
                    origin,
                    InvalidEntry(str(exc), server=source.label, uri=str(directory), local=True),
                )
            )
            continue
        name = str(document.frontmatter["name"])
        if name != directory.name:
            notes.append(f"{directory}: skill name {name!r} differs from its folder name")
        records.append(
            SkillRecord(
                key=SkillKey(source.label, relative),
                origin=origin,
                name=name,
                description=str(document.frontmatter["description"]),
                path=relative,
                directory=str(directory),
            )
        )
    return origin, records, declined, notes


def _local_error(
    kind: type[SkillwardError], message: str, *, label: str | None, directory: Path
) -> SkillwardError:
    return kind(message, server=label, uri=str(directory), local=True)


def skill_files(directory: Path, *, limits: Limits, label: str) -> list[str]:
    """The files of a local skill, ``/``-separated, at most ``Limits.max_skill_files``."""
    try:
        paths, _ = walk_files(directory, limits=TreeLimits(max_entries=limits.max_skill_files))
    except OverflowError:
        message = f"the skill has more than {limits.max_skill_files} files"
        raise _local_error(SkillTooLarge, message, label=label, directory=directory) from None
    except OSError as exc:
        message = f"cannot list the skill's files: {exc.strerror or exc}"
        raise _local_error(UsageError, message, label=label, directory=directory) from None
    return ["/".join(parts) for parts, _ in paths]


def read_local_file(
    directory: Path, relative: str, *, limits: Limits, label: str | None = None
) -> tuple[str, bytes]:
    """Read ``relative`` (``/``-separated) inside ``directory``; (path shown, bytes)."""
    parts = PurePosixPath(relative).parts
    if (
        not relative
        or "\\" in relative
        or "\x00" in relative
        or relative.startswith("/")
        or any(part in ("..", "") for part in parts)
    ):
        message = f"{relative!r} is not a path inside the skill"
        raise _local_error(InvalidUri, message, label=label, directory=directory)
    path = directory.joinpath(*parts)
    # No component may be a symlink, so the read cannot leave the skill's folder.
    current = directory
    for part in parts[:-1]:
        current = current / part
        if current.is_symlink() or not current.is_dir():
            message = f"{relative!r} is not a file inside the skill"
            raise _local_error(UsageError, message, label=label, directory=directory)
    try:
        return str(path), read_regular_file(path, limits.max_skill_bytes)
    except OSError as exc:
        message = f"cannot read {relative!r}: {exc.strerror or exc}"
        raise _local_error(UsageError, message, label=label, directory=directory) from None
