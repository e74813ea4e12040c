"""docs/check.md, the rule catalog, the code that enforces it and the tests stay in step."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from skillward.check.rules import RULES

REPO = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\| `(SW-[A-Z]+-\d{3})` \|(.*)\|\s*$")
RULE_ID = re.compile(r"SW-[A-Z]+-\d{3}\Z")


def documented() -> dict[str, list[str]]:
    """Rule ID -> the cells of its row in docs/check.md."""
    rows: dict[str, list[str]] = {}
    for line in (REPO / "docs" / "check.md").read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            assert match.group(1) not in rows, f"{match.group(1)} is listed twice"
            rows[match.group(1)] = [cell.strip() for cell in match.group(2).split(" | ")]
    return rows


def marked_rules() -> dict[str, set[str]]:
    """Rule ID -> test files marking a test with it: ``pytest.mark.rule("SW-...")``, or a
    table's ``rule_case("SW-...", ...)``, which marks its case so."""
    found: dict[str, set[str]] = {}
    for path in (REPO / "tests").rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else None
            name = node.func.id if isinstance(node.func, ast.Name) else name
            first = node.args[0]
            if (
                name in {"rule", "rule_case"}
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
            ):
                found.setdefault(first.value, set()).add(path.name)
    return found


def _codes(cell: str) -> tuple[str, ...]:
    return () if cell == "—" else tuple(re.findall(r"`([^`]+)`", cell))


def test_docs_list_every_rule_of_the_catalog_as_the_catalog_has_it() -> None:
    rows = documented()
    assert list(rows) == [rule.id for rule in RULES]
    for rule in RULES:
        slug, severity, summary, source, conformance, inspector, fix = rows[rule.id]
        assert slug == f"`{rule.slug}`", rule.id
        assert severity == rule.severity, rule.id
        assert (summary, source, fix) == (rule.summary, rule.source, rule.fix), rule.id
        assert _codes(conformance) == rule.conformance, rule.id
        assert _codes(inspector) == rule.inspector, rule.id


def test_every_rule_has_a_test_showing_a_server_breaking_it_reported() -> None:
    marks = marked_rules()
    missing = [rule.id for rule in RULES if rule.id not in marks]
    assert not missing, f"rules with no test: {missing}"


def test_tests_only_name_rules_that_exist() -> None:
    unknown = set(marked_rules()) - {rule.id for rule in RULES}
    assert not unknown, f"tests name rules missing from the catalog: {sorted(unknown)}"


def test_every_rule_the_code_names_is_in_the_catalog() -> None:
    known = {rule.id for rule in RULES}
    for path in (REPO / "src" / "skillward").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and RULE_ID.match(node.value)
            ):
                assert node.value in known, f"{path.name} names {node.value}"


def test_rule_ids_are_stable_in_form_and_numbered_within_their_area() -> None:
    seen: dict[str, int] = {}
    for rule in RULES:
        assert RULE_ID.match(rule.id), rule.id
        area, number = rule.id.rsplit("-", 1)
        assert int(number) == seen.get(area, 0) + 1, f"{rule.id} breaks the numbering"
        seen[area] = int(number)
        assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", rule.slug), rule.id
