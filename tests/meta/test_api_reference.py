"""docs/api.md is the public API as the code defines it, and every documented name exists."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import skillward
from skillward._apidoc import INTEGRATIONS, render

REPO = Path(__file__).resolve().parents[2]


def test_the_api_reference_matches_the_code() -> None:
    documented = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    assert documented == render(), (
        "docs/api.md is out of date: run `python -m skillward._apidoc > docs/api.md`"
    )


def test_every_public_name_exists_and_is_documented() -> None:
    documented = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    for name in skillward.__all__:
        assert hasattr(skillward, name), name
        assert re.search(rf"^### `(async )?{re.escape(name)}\b", documented, re.M), name


#: ``from skillward import A, B`` or ``from skillward import (`` and one name a line.
IMPORT = re.compile(r"from skillward import (?:\(([^)]*)\)|([^\n]+))")


def test_names_the_guides_import_from_skillward_are_exported() -> None:
    imported: set[str] = set()
    for path in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        for match in IMPORT.finditer(path.read_text("utf-8")):
            names = (match.group(1) or match.group(2)).replace("\n", ",").split(",")
            imported |= {n.strip(" ()") for n in names if n.strip(" ()")}
    assert {"ApprovalBook", "TerminalApprover"} <= imported  # the multi-line imports too
    assert sorted(imported - set(skillward.__all__)) == []


#: The guides a host's code and an administrator follow: every class they cite bare, and
#: every name they cite as ``module.name`` of a public module, is one ``skillward`` exports
#: (``_keys.OsKeyring``, of an internal module, is cited as such). ``architecture.md``
#: names internals on purpose; ``api.md`` is generated.
GUIDES = ("host.md", "admin-guide.md")
#: A name in backticks, maybe after one module name, maybe called: `Name`, `mod.name(...)`.
CITED = re.compile(r"`(?:([A-Za-z_]\w*)\.)?([A-Za-z_]\w*)(?:\([^`]*\))?`")


def public_names() -> dict[str, set[str]]:
    """Each name some module of the library lists in its ``__all__``: the short names of
    the modules that do (the command line's modules are no library)."""
    where: dict[str, set[str]] = {}
    for info in pkgutil.walk_packages(skillward.__path__, "skillward."):
        if info.name.startswith(("skillward.cli", "skillward.examples", "skillward.__main__")):
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            where.setdefault(name, set()).add(info.name.rsplit(".", 1)[1])
    return where


def test_the_guides_cite_no_public_name_skillward_does_not_export() -> None:
    public = public_names()
    # The integrations' names, documented apart (each needs its framework's extra).
    integrations = {
        name for module in INTEGRATIONS for name in importlib.import_module(module).__all__
    }
    unexported = []
    for guide in GUIDES:
        for match in CITED.finditer((REPO / "docs" / guide).read_text("utf-8")):
            module, name = match.groups()
            if name in skillward.__all__ or name in integrations or name not in public:
                continue
            if module is None and name[0].isupper() and not name.isupper():
                unexported.append(f"{guide}: {match.group(0)}")  # a class cited bare
            elif module is not None and not module.startswith("_") and module in public[name]:
                unexported.append(f"{guide}: {match.group(0)}")  # approvals.content_hash
    assert unexported == []


def test_every_blocking_method_says_what_it_raises() -> None:
    # Every call can raise UsageError (from async code, once closed) on top of what the
    # async method raises: the docstring, which api.md shows, says so in its summary.
    silent = []
    for name, member in vars(skillward.SyncSkillHost).items():
        if name.startswith("_") or not callable(getattr(member, "fget", member)):
            continue
        doc = inspect.getdoc(getattr(member, "fget", member)) or ""
        summary = doc.split("\n\n", 1)[0]
        if not re.search(r"\braises\b", summary, re.I) or "UsageError" not in summary:
            silent.append(name)
    assert sorted(silent) == ["config", "limits"]  # attributes: no call to the host's loop
