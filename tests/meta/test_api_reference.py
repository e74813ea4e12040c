"""docs/api.md is the public API as the code defines it, and every documented name exists."""

from __future__ import annotations

import re
from pathlib import Path

import skillward
from skillward._apidoc import render

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


def test_names_the_guides_import_from_skillward_are_exported() -> None:
    imported: set[str] = set()
    for path in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        for match in re.finditer(r"from skillward import ([^\n]+)", path.read_text("utf-8")):
            imported |= {n.strip(" ()") for n in match.group(1).split(",") if n.strip(" ()")}
    assert imported
    assert sorted(imported - set(skillward.__all__)) == []
