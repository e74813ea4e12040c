"""``skillward check DIR``: a skills directory in the repository, checked in place.

The directory is served in this process by the very code of ``skillward serve`` (its
catalog, with its bounds: no link followed, files read within the skill's limits), with
skills whose entries break a rule served anyway, and checked over the in-memory
transport as any server is; what the catalog cannot serve at all becomes a finding of
its own. Every finding is located at its repository file (and line), relative to the
repository the directory is in (the nearest ``.git`` above it; else the current
directory).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from skillward.check._audit import Finding
from skillward.check._locations import Locations
from skillward.check.rules import rule
from skillward.core.config import Limits
from skillward.core.errors import ConfigError, UsageError, printable
from skillward.core.labels import normalise_label
from skillward.core.uris import SKILL_FILE
from skillward.edge._tree import encode_segment
from skillward.edge.servers import InMemoryTransport, ServerSpec
from skillward.serve.catalog import Refusal, SkillCatalog

__all__ = [
    "Directory",
    "directory_label",
    "parse_map",
    "repository_path",
    "served_directory",
    "skills_of_files",
]

#: What the catalog's refusals break when no rule of the SEP does.
_UNSERVED = "SW-SRC-001"


@dataclass(frozen=True, slots=True)
class Directory:
    """A skills directory served for checking: its server, where its URIs are in the
    repository, and what it holds that cannot be served."""

    spec: ServerSpec
    target: str
    locations: Locations
    found: tuple[Finding, ...]


def repository_root(start: Path) -> Path:
    """The repository ``start`` is in (the nearest directory above it holding ``.git``),
    or the current directory when it is in none."""
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return Path.cwd().resolve()


def repository_path(path: Path, root: Path | None = None) -> str:
    """``path`` relative to the repository it is in, as a POSIX path (``.`` for the root);
    absolute when it lies outside that repository."""
    resolved = path.resolve()
    base = root if root is not None else repository_root(resolved)
    relative = os.path.relpath(resolved, base)
    if relative == ".." or relative.startswith(".." + os.sep):
        return resolved.as_posix()
    return Path(relative).as_posix()


def parse_map(text: str) -> tuple[str, str]:
    """``--map PREFIX=DIR``: a URI prefix and the repository path of the directory its
    files are in."""
    prefix, sep, directory = text.partition("=")
    if not sep or "://" not in prefix or not directory:
        raise UsageError(
            f"--map takes PREFIX=DIR, for example skill://acme=skills/acme, not {text!r}"
        )
    return prefix, repository_path(Path(directory))


def _is_skill(directory: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(directory / SKILL_FILE).st_mode)
    except OSError:
        return False


def skills_of_files(files: Iterable[Path]) -> list[Path]:
    """The skill each file is part of: the outermost directory above it, within the
    repository the command runs in, holding a SKILL.md (a nested skill's files are its
    enclosing skill's too). Files in no skill are left out, and so are files that are,
    or lie behind, links out of that repository: no link is followed out of it."""
    base = repository_root(Path.cwd().resolve())
    found: dict[Path, None] = {}
    for file in files:
        resolved = file.resolve()
        if not resolved.is_relative_to(base):
            continue
        outermost: Path | None = None
        for directory in (resolved.parent, *resolved.parent.parents):
            if _is_skill(directory):
                outermost = directory
            if directory == base:
                break
        if outermost is not None:
            found.setdefault(outermost)
    return list(found)


def served_directory(path: Path, label: str, limits: Limits) -> Directory:
    """The skills under ``path``, served in process as ``label``; see the module."""
    from skillward.serve.server import build_server

    root = _unlinked(Path(os.path.abspath(path)), shown=path).resolve()
    if not root.is_dir():
        raise UsageError(f"{path} is not a directory")
    catalog = SkillCatalog.from_directory(root, limits=limits, admit_invalid=True)
    if not catalog.skills and not catalog.refusals:
        raise UsageError(
            f"no skill to check under {path}: no SKILL.md was found in it",
            hint="A skill is a folder holding a SKILL.md that starts with YAML frontmatter "
            "naming it and saying what it does, as DIR/NAME/SKILL.md.",
        )
    here = repository_path(root)
    own: list[str] = []
    if _is_skill(root):
        segment = _segment(root.name)
        if segment is None:
            raise UsageError(
                f"{printable(str(path))} is a skill whose folder name no skill URI can "
                "carry (a control character, or not UTF-8); rename the folder"
            )
        own = [segment]
    maps = [("skill://", here)]
    if own:
        # A tree whose root is a skill publishes it under the root's name.
        maps.append((f"skill://{own[0]}", here))
    server = build_server(catalog, name="skillward-check")
    spec = ServerSpec(label=label, transport=InMemoryTransport(server=server))

    def uri_of(found: str) -> str | None:
        try:
            # Never resolved: the link itself is what is reported, not where it points.
            parts = Path(os.path.abspath(found)).relative_to(root).parts
            segments = [*own, *(encode_segment(part) for part in parts)]
        except ValueError:
            return None  # outside the tree, or a name no URI can carry: the skill's
        return "skill://" + "/".join(segments) if segments else None

    found = tuple(_finding(refusal, uri_of, str(root), here) for refusal in catalog.refusals)
    return Directory(spec, str(path), Locations.of(maps, home=here), found)


def _finding(
    refusal: Refusal, uri_of: Callable[[str], str | None], root: str, here: str
) -> Finding:
    rule_id = refusal.rule or _UNSERVED
    skill = None
    if refusal.skill_path is not None:
        segments = [_segment(part) for part in refusal.skill_path.split("/")]
        named = [segment for segment in segments if segment is not None]
        if len(named) == len(segments):  # else the message names the skill by its path
            skill = "skill://" + "/".join([*named, SKILL_FILE])
    uri = uri_of(refusal.path)
    message = refusal.message
    if uri is None and refusal.path != root:
        message = f"{refusal.path}: {message}"  # no URI says which file: the message does
    # Paths as the repository has them, not as this machine does; a file's name escaped
    # as every server string is (a repository checked may be hostile).
    message = printable(message.replace(root, here), limit=600)
    return Finding(rule_id, rule(rule_id).severity, skill, None if uri == skill else uri, message)


def _unlinked(absolute: Path, *, shown: Path) -> Path:
    """``absolute``, refused when it is, or lies behind, a link within the repository the
    command runs in: a pull request can turn the directory a workflow checks into a link
    out of the repository, and nothing behind a link is read."""
    base = repository_root(Path.cwd().resolve())
    if not absolute.is_relative_to(base):
        return absolute  # named outside the repository: checked where it is
    current = base
    for part in absolute.relative_to(base).parts:
        current = current / part
        if current.is_symlink():
            raise UsageError(
                f"{printable(str(shown))} is, or lies behind, a link "
                f"({printable(current.relative_to(base).as_posix())}); a check does not "
                "follow links in the repository",
                hint="Check the directory the link points to by its own path.",
            )
    return absolute


def _segment(name: str) -> str | None:
    """``name`` as a skill URI segment, or None when no URI can carry it."""
    try:
        return encode_segment(name)
    except ValueError:
        return None


def directory_label(path: Path, taken: set[str]) -> str:
    """A label for a checked directory: its name, made a label, unique among ``taken``."""
    try:
        base = normalise_label(path.resolve().name)
    except ConfigError:
        base = "skills"
    label, n = base, 1
    while label in taken:
        n += 1
        label = f"{base}-{n}"
    taken.add(label)
    return label
