"""Inside host/, each part imports only the parts before it (docs/architecture.md), so
each can be built and tested alone with the real ones beneath it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

HOST = Path(__file__).resolve().parents[2] / "src" / "skillward" / "host"
#: Bottom first: each module may import the modules before it, never after.
ORDER = [
    "types",
    "_connections",
    "_window",
    "_fetch",
    "_shared",
    "_gates",
    "_activation",
    "_reads",
    "_tools",
    "skillhost",
    "sync",
]


def host_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("skillward.host."):
            found.add((node.module or "").split(".")[2])
    return found


def test_every_module_of_the_host_has_a_place_in_the_order() -> None:
    modules = {p.stem for p in HOST.glob("*.py") if p.stem != "__init__"}
    assert modules == set(ORDER)


@pytest.mark.parametrize("module", ORDER)
def test_a_host_module_imports_only_the_parts_before_it(module: str) -> None:
    before = set(ORDER[: ORDER.index(module)])
    assert host_imports(HOST / f"{module}.py") <= before
