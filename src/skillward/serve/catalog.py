"""The skills ``skillward serve`` publishes: a snapshot of a directory tree of skills
(every folder holding a ``SKILL.md``, nested paths allowed), each file's exact bytes,
digest and MIME type, and the skills refused with a reason: those that break the Agent
Skills rules or SEP-2640's invariants, which no host would accept.

``skillward check DIR`` serves a tree through the same code, with ``admit_invalid``: a
skill whose entry breaks a rule is served anyway, for the check to report every rule it
breaks; what cannot be served at all (no frontmatter, files past the bounds, links and
other files that are not regular) is kept, each as a :class:`Refusal`.

Imports no ``mcp``: :mod:`skillward.serve.server` serves a catalog over the SDK.
"""

from __future__ import annotations

import functools
import mimetypes
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from skillward.core._entries import check_frontmatter_bounds, name_mismatch
from skillward.core._fields import DIRECTORY_MIME_TYPE, LIM_BYTES, LIM_FILES, lint_frontmatter
from skillward.core.config import Limits
from skillward.core.errors import FrontmatterError, InvalidEntry, InvalidUri, SkillTooLarge
from skillward.core.frontmatter import parse_skill_md
from skillward.core.rules import RuleError
from skillward.core.uris import MAX_URI_LENGTH, SKILL_FILE, skill_root_of
from skillward.core.verify import sha256_digest
from skillward.edge._tree import (
    FileTooLarge,
    Listings,
    TreeLimits,
    descend,
    encode_segment,
    find_skill_dirs,
    open_directory,
    read_regular_file,
    walk_files,
)

__all__ = ["Refusal", "ServedFile", "ServedSkill", "SkillCatalog", "example_skills_dir"]

# An authority with none of what a URI authority may not hold as it stands (":", "@",
# percent-encodings): the first segment of a canonical path that parses as one.
_PLAIN_AUTHORITY = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=]+\Z")
_SERVE_TREE = TreeLimits(max_depth=16, max_entries=1_000_000)


def example_skills_dir() -> Path:
    """The example skills bundled with skillward (used by ``skillward demo``)."""
    return Path(__file__).parent.parent / "examples"


@functools.lru_cache(maxsize=8)
def _skill_tree(max_files: int) -> TreeLimits:
    """The walk of one skill: room to see, and refuse, a skill past its file limit, as
    deep as the walk that found it goes."""
    return TreeLimits(max_depth=_SERVE_TREE.max_depth, max_entries=max_files * 4)


@functools.lru_cache(maxsize=1024)
def _mime_type(name: str) -> str:
    if name.endswith(".md"):
        return "text/markdown"
    guessed, _ = mimetypes.guess_type(name, strict=False)
    return guessed or "application/octet-stream"


class ServedFile(NamedTuple):
    """One file as served: its URI, exact bytes, digest and MIME type."""

    # A named tuple, not a frozen dataclass: as immutable, and much cheaper to make for
    # the tens of thousands of files a large tree holds.
    uri: str
    name: str
    data: bytes
    digest: str
    mime_type: str

    @property
    def size(self) -> int:
        return len(self.data)


class Refusal(NamedTuple):
    """Something under the tree that is not served, and why: ``path`` on disk (a file, or
    a skill's folder); ``skill_path``, the skill it is of, if known; ``rule``, the rule of
    docs/check.md it breaks, if one does."""

    path: str
    message: str
    skill_path: str | None = None
    rule: str | None = None


@dataclass(frozen=True, slots=True)
class ServedSkill:
    """One skill as served: its SKILL.md URI, verbatim frontmatter and files."""

    uri: str
    frontmatter: Mapping[str, Any]
    files: tuple[ServedFile, ...]
    listed: bool = True

    @property
    def name(self) -> str:
        # Always a string, but in a catalog that admits invalid skills (check's).
        return str(self.frontmatter.get("name", ""))

    @property
    def description(self) -> str:
        return str(self.frontmatter.get("description", ""))

    def entry(self) -> dict[str, Any]:
        """The SEP-2640 entry, as sent on the wire."""
        return {
            "uri": self.uri,
            "frontmatter": dict(self.frontmatter),
            "resources": [{"uri": f.uri, "digest": f.digest, "size": f.size} for f in self.files],
        }


@dataclass(slots=True)
class _ReadSkill:
    """A skill's files as read from disk, before its SKILL.md is parsed and its entry
    checked; or why they cannot be served."""

    skill_path: str
    directory: str | Path
    listed: bool
    uri: str = ""
    files: tuple[ServedFile, ...] = ()
    skill_md: ServedFile | None = None
    notes: list[str] = field(default_factory=list)
    refused: str | None = None
    #: The rule a refusal breaks, and the file it is about, when there is one.
    rule: str | None = None
    refused_path: str | None = None


@dataclass
class SkillCatalog:
    """An immutable-once-served snapshot of the skills a server publishes."""

    scheme: str = "skill"
    limits: Limits = field(default_factory=Limits)
    skills: dict[str, ServedSkill] = field(default_factory=dict)
    files: dict[str, ServedFile] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    #: Serve a skill whose entry breaks a rule (for ``skillward check`` to report it).
    admit_invalid: bool = False
    #: What :attr:`problems` says, each with its path and rule.
    refusals: list[Refusal] = field(default_factory=list)

    @classmethod
    def from_directory(
        cls,
        root: Path | str,
        *,
        unlisted: Collection[str] = (),
        limits: Limits | None = None,
        admit_invalid: bool = False,
    ) -> SkillCatalog:
        """Scan ``root`` for skills. ``unlisted`` skill paths are served but not listed."""
        catalog = cls(limits=limits or Limits(), admit_invalid=admit_invalid)
        catalog.add_tree(Path(root), unlisted=unlisted)
        return catalog

    def _noted(self, notes: list[str], skill_path: str | None = None) -> None:
        """Walk notes (``PATH: what was skipped``) as problems and refusals."""
        self.problems.extend(notes)
        for note in notes:
            path, _, reason = note.rpartition(": ")
            self.refusals.append(Refusal(path, reason, skill_path))

    def add_tree(self, root: Path, *, unlisted: Collection[str] = ()) -> None:
        root = root.resolve()
        # Each directory is listed once: the skills' own walks reuse the scan's listings.
        listings: Listings = {}
        try:
            # Every folder below is opened through its parent's descriptor, from here: a
            # folder swapped for a link while the tree is read is never followed.
            top = open_directory(root)
        except OSError as exc:
            self.problems.append(f"{root}: cannot scan: {exc}")
            self.refusals.append(Refusal(str(root), f"cannot scan: {exc}"))
            return
        try:
            try:
                # The operator chose this tree, so the walk may be large; it is still bounded.
                found, notes = find_skill_dirs(root, at=top, limits=_SERVE_TREE, keep=listings)
            except (OSError, OverflowError) as exc:
                self.problems.append(f"{root}: cannot scan: {exc}")
                self.refusals.append(Refusal(str(root), f"cannot scan: {exc}"))
                return
            self._noted(notes)
            read = []
            for parts, directory in found:
                # A tree whose root is itself a skill publishes it under the root's name.
                skill_path = "/".join(parts or (root.name,))
                listed = skill_path not in unlisted
                read.append(self._read(skill_path, directory, listed, listings, (top, parts)))
        finally:
            os.close(top)
        # Every skill's files are read first, and then each skill is checked: two tight
        # loops run markedly faster than one that alternates between them.
        for files in read:
            self._admit(files)

    def add_skill(self, skill_path: str, directory: Path, *, listed: bool = True) -> bool:
        """Add the skill in ``directory`` at ``skill_path``; record why when refused."""
        read = _ReadSkill(skill_path, directory, listed)
        try:
            # The folder the server's author named may be reached through a link (as the
            # root of a tree may be); nothing below it is.
            top = open_directory(directory.resolve())
        except OSError as exc:
            read.refused = str(exc)
        else:
            try:
                read = self._read(skill_path, directory, listed, None, (top, ()))
            finally:
                os.close(top)
        return self._admit(read)

    def _read(
        self,
        skill_path: str,
        directory: str | Path,
        listed: bool,
        listings: Listings | None,
        at: tuple[int, tuple[str, ...]],
    ) -> _ReadSkill:
        """The files of the skill in ``directory`` (the folder ``at`` names: a descriptor
        and the parts below it), read; or why they cannot be served."""
        limits = self.limits
        read = _ReadSkill(skill_path, directory, listed)
        # The skill's folder, and the folder of the file being read: no more are held
        # open, however many folders a skill has.
        folders: dict[tuple[str, ...], int] = {}
        try:
            segments = skill_path.strip("/").split("/")
            root_uri = f"{self.scheme}://" + "/".join(map(encode_segment, segments))
            read.uri = f"{root_uri}/{SKILL_FILE}"
            top, parts_of_skill = at
            folders[()] = folder = descend(top, parts_of_skill)
            paths, read.notes = walk_files(
                directory, at=folder, limits=_skill_tree(limits.max_skill_files), listings=listings
            )
            if len(paths) > limits.max_skill_files:
                read.refused = f"{len(paths)} files; at most {limits.max_skill_files} are allowed"
                read.rule = LIM_FILES
                return read
            budget = limits.max_skill_bytes
            files: list[ServedFile] = []
            for parts, path in paths:
                read.refused_path = str(path)
                where = parts[:-1]
                parent = folders.get(where)
                if parent is None:
                    for held in [held for held in folders if held]:
                        os.close(folders.pop(held))
                    folders[where] = parent = descend(folder, where)
                try:
                    data = read_regular_file(parts[-1], budget, snapshot=True, dir_fd=parent)
                except FileTooLarge:
                    read.rule = LIM_BYTES
                    raise ValueError(
                        f"its files are larger than {limits.max_skill_bytes} bytes together"
                    ) from None
                budget -= len(data)
                uri = root_uri + "/" + "/".join(map(encode_segment, parts))
                name = parts[-1]
                served = ServedFile(uri, name, data, sha256_digest(data), _mime_type(name))
                if uri == read.uri:
                    read.skill_md = served
                files.append(served)
            read.files = tuple(files)
            read.refused_path = None
        except (ValueError, OSError, OverflowError) as exc:
            read.refused = str(exc)
        finally:
            for fd in folders.values():
                os.close(fd)
        return read

    def _admit(self, read: _ReadSkill) -> bool:
        """Serve the skill ``read`` holds if every host would accept its entry; else
        record why not."""
        self._noted(read.notes, read.skill_path)
        reason = read.refused
        rule = read.rule
        path = read.refused_path
        if reason is None:
            try:
                skill = self._load_skill(read)
            except (InvalidEntry, SkillTooLarge, FrontmatterError) as exc:
                reason, rule = exc.message, exc.rule
                if isinstance(exc, FrontmatterError):
                    path = str(Path(read.directory) / SKILL_FILE)
            except (ValueError, OSError, OverflowError) as exc:
                reason = str(exc)
            else:
                if skill.uri not in self.skills:
                    self.skills[skill.uri] = skill
                    for served in skill.files:
                        self.files.setdefault(served.uri, served)
                    return True
                reason = f"{skill.uri} is already served"
        self.problems.append(
            f"{read.directory} ({self.scheme}://{read.skill_path}): refused: {reason}"
        )
        self.refusals.append(
            Refusal(path or str(read.directory), f"refused: {reason}", read.skill_path, rule)
        )
        return False

    def _load_skill(self, read: _ReadSkill) -> ServedSkill:
        if read.skill_md is None:
            raise ValueError(f"no regular {SKILL_FILE}")
        document = parse_skill_md(read.skill_md.data, limits=self.limits)
        skill = ServedSkill(read.uri, document.frontmatter, read.files, read.listed)
        if not self.admit_invalid:
            lint_frontmatter(document.frontmatter)
            self._check_entry(skill)
        return skill

    def _check_entry(self, skill: ServedSkill) -> None:
        """Raise InvalidEntry unless every host would accept ``skill``'s entry
        (:func:`~skillward.core.wire.parse_entry`).

        Only what building the entry does not already guarantee is checked here. The
        entry is built from one walk: its file URIs are the skill's URI and then path
        segments :func:`encode_segment` made canonical, so they are distinct, inside the
        skill, and valid if not too long; digests and sizes are of the bytes read; file
        count and total bytes were capped while reading; the frontmatter passed
        :func:`lint_frontmatter` and the SKILL.md caps. Left: the skill URI as a host
        parses it (its first segment is an authority, with stricter rules), the name as
        its final segment, each URI's length, and the frontmatter's size as JSON.
        tests/unit/test_server_catalog.py holds this to parse_entry over generated trees.
        """
        limits = self.limits
        authority, _, path = skill.uri[len(self.scheme) + 3 :].partition("/")
        # Plain names (the usual kind) make a URI every host parses; anything else is
        # parsed as a host would, to learn whether it can be served.
        plain = self.scheme == "skill" and _PLAIN_AUTHORITY.match(authority)
        if not plain or len(skill.uri) > MAX_URI_LENGTH:
            try:
                skill_root_of(skill.uri)
            except InvalidUri as exc:
                raise InvalidEntry(f"invalid skill entry: uri: {exc.message}") from None
        segment = (authority + "/" + path).removesuffix("/" + SKILL_FILE).rpartition("/")[2]
        if segment != skill.name:
            raise InvalidEntry(f"invalid skill entry: {name_mismatch(segment, skill.name)}")
        longest = max(len(served.uri) for served in skill.files)
        if longest > MAX_URI_LENGTH:
            raise InvalidEntry(
                f"invalid skill entry: a file URI is {longest} characters; hosts accept at "
                f"most {MAX_URI_LENGTH}"
            )
        try:
            check_frontmatter_bounds(skill.frontmatter, limits)
        except RuleError as exc:
            raise InvalidEntry(f"invalid skill entry: frontmatter: {exc.message}") from None

    # --- queries ------------------------------------------------------------------------

    def listed(self) -> list[ServedSkill]:
        return [self.skills[uri] for uri in sorted(self.skills) if self.skills[uri].listed]

    def summary(self) -> str:
        """What is served, for a person: ``1 skill``, ``4 skills (1 unlisted)``."""
        total = len(self.skills)
        unlisted = total - len(self.listed())
        text = "1 skill" if total == 1 else f"{total} skills"
        return text + (f" ({unlisted} unlisted)" if unlisted else "")

    def directory_children(self, uri: str) -> list[tuple[str, str, str | None]] | None:
        """Direct children of directory ``uri`` as (uri, name, mime type), or None."""
        prefix = uri + "/"
        children: dict[str, tuple[str, str, str | None]] = {}
        for file_uri, served in self.files.items():
            if not file_uri.startswith(prefix):
                continue
            head, slash, _ = file_uri[len(prefix) :].partition("/")
            if slash:
                children[prefix + head] = (prefix + head, head, DIRECTORY_MIME_TYPE)
            else:
                children[file_uri] = (file_uri, served.name, served.mime_type)
        if not children:
            return None
        return [children[key] for key in sorted(children)]
