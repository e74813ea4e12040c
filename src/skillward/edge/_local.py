"""Local filesystem skills: discovery in configured directories, and confined reads.

Discovery follows the Agent Skills integration guide: every folder holding a
``SKILL.md`` under a configured skills directory, bounded in depth and entries,
never through a symlink. A SKILL.md whose frontmatter cannot be parsed, or whose
name breaks the naming rules, is declined with the reason; a name that differs
from its folder is loaded with a note.

Every listing and read, at discovery and after it, starts from a descriptor of the
skills directory and opens each folder through its parent's (``_tree.descend``), and
each file with ``O_NOFOLLOW`` in its folder's: a symlink swapped in at any level, at any
moment, is refused, never followed, so nothing outside the skills directory is read.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Collection, Iterator
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
from skillward.edge._tree import (
    NotRegularFile,
    TreeLimits,
    descend,
    find_skill_dirs,
    open_directory,
    read_regular_file,
    walk_files,
)

__all__ = [
    "LocalSkillDir",
    "default_local_dirs",
    "discover",
    "overlap",
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


def overlap(ours: Collection[str], directory: Path) -> tuple[str, str] | None:
    """Where one of ``ours`` (a directory's absolute forms) lies inside ``directory`` or
    holds it: that form, and the form of ``directory`` it overlaps; None when none does.

    ``directory`` is compared as given and with every symlink resolved, so a link in
    either direction cannot hide an overlap: what skillward keeps (the disk cache, the
    file key store) is never where skills are discovered.
    """
    theirs = (os.path.abspath(directory), os.path.realpath(directory))
    for mine in ours:
        for other in theirs:
            if os.path.commonpath([mine, other]) in (mine, other):
                return mine, other
    return None


def _refusal(exc: OSError, root: Path) -> str:
    """What an open refused, naming the path (``exc.filename``, relative to ``root``)."""
    shown = root / str(exc.filename) if exc.filename else root
    if isinstance(exc, NotRegularFile):
        return f"{shown} is not a regular file"
    if exc.errno == errno.ENOTDIR:  # what O_DIRECTORY | O_NOFOLLOW gives a symlink
        return f"{shown} is a symlink or not a folder, and is not followed"
    if exc.errno in (errno.ELOOP, errno.EMLINK):  # O_NOFOLLOW (EMLINK on FreeBSD)
        return f"{shown} is a symlink, and is not followed"
    return f"cannot read {shown}: {exc.strerror or exc}"


def _located(record: SkillRecord) -> tuple[Path, tuple[str, ...]]:
    """A local skill's skills directory, and the names of its folder below it."""
    assert not record.origin.is_mcp
    assert record.directory is not None
    assert record.origin.detail is not None
    root = Path(record.origin.detail)
    return root, Path(record.directory).relative_to(root).parts


@contextlib.contextmanager
def _opened(directory: Path) -> Iterator[int]:
    """A descriptor of a skills directory (never a symlink itself)."""
    top = open_directory(directory)
    try:
        yield top
    finally:
        os.close(top)


def _read(top: int, names: tuple[str, ...], *, limits: Limits) -> bytes:
    """The regular file ``names`` names below ``top``, each folder on the way opened through
    its parent's descriptor (OSError, its ``filename`` the names up to the one refused)."""
    folder = descend(top, names[:-1])
    try:
        return read_regular_file(names[-1], limits.max_skill_bytes, dir_fd=folder)
    except OSError as exc:
        exc.filename = "/".join(names)
        raise
    finally:
        os.close(folder)


def _skill_md(
    top: int, root: Path, parts: tuple[str, ...], *, limits: Limits, label: str
) -> tuple[bytes, SkillDocument]:
    try:
        data = _read(top, (*parts, SKILL_FILE), limits=limits)
    except OSError as exc:
        raise InvalidEntry(_refusal(exc, root), server=label, local=True) from None
    uri = str(root.joinpath(*parts, SKILL_FILE))
    try:
        return data, parse_skill_md(data, limits=limits, server=label, uri=uri)
    except SkillwardError as exc:
        raise exc.with_context(local=True) from None


def read_skill_md(record: SkillRecord, *, limits: Limits) -> tuple[bytes, SkillDocument]:
    """The raw bytes of a local skill's SKILL.md and the document parsed from those bytes."""
    root, parts = _located(record)
    label = record.origin.label
    try:
        with _opened(root) as top:
            return _skill_md(top, root, parts, limits=limits, label=label)
    except OSError as exc:
        raise InvalidEntry(_refusal(exc, root), server=label, local=True) from None


def discover(
    source: LocalSkillDir, *, limits: Limits
) -> tuple[Origin, list[SkillRecord], list[Declined], list[str]]:
    """Every skill under ``source``: (origin, records, declined, notes)."""
    origin = Origin("local", source.label, str(source.path))
    if source.path.is_symlink():
        # Discovery never follows a symlink, the configured directory included.
        note = (
            f"{source.path}: is a symlink, so it is not scanned; configure the directory it "
            "points to instead"
        )
        return origin, [], [], [note]
    try:
        top = open_directory(source.path)
    except (FileNotFoundError, NotADirectoryError):  # no such directory: no skills
        return origin, [], [], []
    except OSError as exc:
        return origin, [], [], [f"{source.path}: scan stopped: {exc.strerror or exc}"]
    try:
        return (origin, *_scan(top, source, origin, limits=limits))
    finally:
        os.close(top)


def _scan(
    top: int, source: LocalSkillDir, origin: Origin, *, limits: Limits
) -> tuple[list[SkillRecord], list[Declined], list[str]]:
    """The skills below ``top``, a descriptor of ``source.path``."""
    records: list[SkillRecord] = []
    declined: list[Declined] = []
    tree = TreeLimits(
        max_depth=limits.max_local_scan_depth, max_entries=limits.max_local_scan_entries
    )
    try:
        found, notes = find_skill_dirs(source.path, at=top, limits=tree)
    except (OSError, OverflowError) as exc:
        return records, declined, [f"{source.path}: scan stopped: {exc}"]
    for parts, found_at in found:
        directory = Path(found_at)
        relative = "/".join(parts) or directory.name
        try:
            _, document = _skill_md(top, source.path, parts, limits=limits, label=source.label)
            lint_frontmatter(document.frontmatter)
        except SkillwardError as exc:
            declined.append(Declined(origin, exc.with_context(uri=str(directory), local=True)))
            continue
        except ValueError as exc:
            problem = InvalidEntry(str(exc), server=source.label, uri=str(directory), local=True)
            declined.append(Declined(origin, problem))
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
    return records, declined, notes


def _local_error(
    kind: type[SkillwardError], message: str, *, label: str | None, directory: Path
) -> SkillwardError:
    return kind(message, server=label, uri=str(directory), local=True)


def skill_files(record: SkillRecord, *, limits: Limits) -> list[str]:
    """The files of a local skill, ``/``-separated, at most ``Limits.max_skill_files``."""
    root, parts = _located(record)
    label, directory = record.origin.label, root.joinpath(*parts)
    tree = TreeLimits(max_entries=limits.max_skill_files)
    try:
        with _opened(root) as top:
            folder = descend(top, parts)
            try:
                paths, _ = walk_files(directory, at=folder, limits=tree)
            finally:
                os.close(folder)
    except OverflowError:
        message = f"the skill has more than {limits.max_skill_files} files"
        raise _local_error(SkillTooLarge, message, label=label, directory=directory) from None
    except OSError as exc:
        message = f"cannot list the skill's files: {_refusal(exc, root)}"
        raise _local_error(UsageError, message, label=label, directory=directory) from None
    return ["/".join(parts) for parts, _ in paths]


def read_local_file(record: SkillRecord, relative: str, *, limits: Limits) -> tuple[str, bytes]:
    """Read ``relative`` (``/``-separated) inside a local skill's folder; (path shown, bytes)."""
    root, parts = _located(record)
    label, directory = record.origin.label, root.joinpath(*parts)
    names = PurePosixPath(relative).parts
    if (
        not relative
        or "\\" in relative
        or "\x00" in relative
        or relative.startswith("/")
        or any(name in ("..", "") for name in names)
    ):
        message = f"{relative!r} is not a path inside the skill"
        raise _local_error(InvalidUri, message, label=label, directory=directory)
    try:
        with _opened(root) as top:
            data = _read(top, (*parts, *names), limits=limits)
    except OSError as exc:
        message = f"cannot read {relative!r}: {_refusal(exc, root)}"
        raise _local_error(UsageError, message, label=label, directory=directory) from None
    return str(directory.joinpath(*names)), data
