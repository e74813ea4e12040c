"""SECURITY.md's threat IDs and the tests that cover them stay in step."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\|\s*(T\d+)\s*\|(.*)\|\s*$")


def threat_table() -> dict[str, str]:
    """Threat ID -> status ("defended" or "planned") from SECURITY.md."""
    table: dict[str, str] = {}
    for line in (REPO / "SECURITY.md").read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            threat_id = match.group(1)
            assert threat_id not in table, f"{threat_id} is listed twice in SECURITY.md"
            cells = [cell.strip() for cell in match.group(2).split("|")]
            table[threat_id] = cells[-1].lower()
    return table


def referenced_threats() -> dict[str, set[str]]:
    """Threat ID -> test files whose code names it in a ``threat("Tn")`` marker."""
    found: dict[str, set[str]] = {}
    for path in (REPO / "tests").rglob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "threat"
            ):
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        found.setdefault(arg.value, set()).add(path.name)
    return found


def test_security_md_lists_threats_with_a_known_status() -> None:
    table = threat_table()
    assert len(table) >= 10
    assert set(table.values()) <= {"defended", "planned"}


def test_every_defended_threat_is_covered_by_a_test() -> None:
    references = referenced_threats()
    missing = [
        t for t, status in threat_table().items() if status == "defended" and t not in references
    ]
    assert not missing, f"threats marked defended with no test: {missing}"


def test_tests_only_name_threats_that_exist() -> None:
    unknown = set(referenced_threats()) - set(threat_table())
    assert not unknown, f"tests name threat IDs missing from SECURITY.md: {sorted(unknown)}"


def test_every_threat_names_modules_that_exist() -> None:
    package = REPO / "src" / "skillward"
    for line in (REPO / "SECURITY.md").read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            where = [cell.strip() for cell in match.group(2).split("|")][-2]
            for module in re.findall(r"`([\w/]+\.py)`", where):
                assert (package / module).is_file(), f"{match.group(1)} names {module}"
