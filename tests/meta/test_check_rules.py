"""docs/check.md, the rule catalog, the code that enforces it and the tests stay in step;
every rule is grounded in SEP-2640's words, and the conformance suite's requirements
that no rule covers are listed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from skillward.check._docs import REPOSITORY, help_uri, rule_anchor
from skillward.check.rules import RULES

REPO = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\| `(SW-[A-Z]+-\d{3})` (<a id=\"[^\"]*\"></a>) \|(.*)\|\s*$")
RULE_ID = re.compile(r"SW-[A-Z]+-\d{3}\Z")
REQUIREMENT_ROW = re.compile(r"^\| `(sep-2640-[a-z0-9-]+)` \|(.*)\|\s*$")
#: Every SEP-2640 requirement ID of ``@modelcontextprotocol/conformance`` 0.2.0-alpha.12
#: (the version .ci/conformance runs), server and host alike.
SUITE_VERSION = "0.2.0-alpha.12"
REQUIREMENTS = frozenset(
    {
        "sep-2640-authority-reg-name",
        "sep-2640-capability-commits-to-methods",
        "sep-2640-capability-declaration-inline",
        "sep-2640-capability-directory-read-flag",
        "sep-2640-capability-empty-object",
        "sep-2640-capability-requires-resources",
        "sep-2640-directory-read-invalid-params",
        "sep-2640-directory-read-method-registered",
        "sep-2640-directory-read-pagination",
        "sep-2640-directory-read-result-resources-shape",
        "sep-2640-directory-read-subdir-mimetype",
        "sep-2640-entry-frontmatter-identical",
        "sep-2640-entry-frontmatter-required",
        "sep-2640-entry-resources-required",
        "sep-2640-entry-uri-matches-frontmatter-name",
        "sep-2640-entry-uri-required",
        "sep-2640-final-segment-equals-name",
        "sep-2640-host-frontmatter-comparison",
        "sep-2640-host-no-prefetch",
        "sep-2640-host-size-mismatch-failure",
        "sep-2640-host-verify-digest",
        "sep-2640-limit-resources-per-skill",
        "sep-2640-limit-total-size",
        "sep-2640-meta-prefix",
        "sep-2640-metadata-reserved-prefix",
        "sep-2640-name-naming-rules",
        "sep-2640-names-should-be-unique",
        "sep-2640-resources-complete",
        "sep-2640-resources-digest-format",
        "sep-2640-resources-size-required",
        "sep-2640-resources-uri-within-skill",
        "sep-2640-skill-uri-scheme",
        "sep-2640-skillmd-frontmatter",
        "sep-2640-skillmd-metadata-description",
        "sep-2640-skillmd-metadata-name",
        "sep-2640-skillmd-mimetype",
        "sep-2640-skillmd-required",
        "sep-2640-skills-get-cache-attributes",
        "sep-2640-skills-get-entry-shape",
        "sep-2640-skills-get-implemented",
        "sep-2640-skills-get-no-cursor",
        "sep-2640-skills-get-unknown-uri-invalid-params",
        "sep-2640-skills-list-cache-attributes",
        "sep-2640-skills-list-entry-atomic",
        "sep-2640-skills-list-implemented",
        "sep-2640-skills-list-pagination",
    }
)
SUITE = REPO / ".ci" / ".cache" / "suite" / "node_modules" / "@modelcontextprotocol" / "conformance"
SEP_SECTIONS = {
    "Dependencies",
    "Skill Format",
    "Resource Mapping",
    "Resource Metadata",
    "Nested skills",
    "Enumeration via skills/list",
    "Names",
    "Frontmatter",
    "Resources",
    "Integrity and verification",
    "Limits",
    "Retrieval via skills/get",
    "Pointer from Server Instructions",
    "Capability Declaration",
    "Reading",
    "Directory Listing",
    "Directory reads and the held entry",
    "Security Implications",
}


def _docs() -> list[str]:
    return (REPO / "docs" / "check.md").read_text(encoding="utf-8").splitlines()


def documented() -> dict[str, tuple[str, list[str]]]:
    """Rule ID -> its anchor and the cells of its row in docs/check.md."""
    rows: dict[str, tuple[str, list[str]]] = {}
    for line in _docs():
        match = ROW.match(line)
        if match:
            assert match.group(1) not in rows, f"{match.group(1)} is listed twice"
            rows[match.group(1)] = (
                match.group(2),
                [cell.strip() for cell in match.group(3).split(" | ")],
            )
    return rows


def uncovered_rows() -> dict[str, list[str]]:
    """Requirement ID -> the cells of its row in the table of those no rule covers."""
    return {
        match.group(1): [cell.strip() for cell in match.group(2).split(" | ")]
        for line in _docs()
        if (match := REQUIREMENT_ROW.match(line))
    }


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
        anchor, cells = rows[rule.id]
        slug, severity, summary, section, says, source, conformance, inspector, fix = cells
        assert anchor == f'<a id="{rule_anchor(rule.id)}"></a>', rule.id
        assert slug == f"`{rule.slug}`", rule.id
        assert severity == rule.severity, rule.id
        assert (summary, source, fix) == (rule.summary, rule.source, rule.fix), rule.id
        assert (section, says) == (f"§{rule.section}", rule.says), rule.id
        assert _codes(conformance) == rule.conformance, rule.id
        assert _codes(inspector) == rule.inspector, rule.id


def test_each_rule_links_to_its_row_in_the_docs() -> None:
    for rule in RULES:
        assert help_uri(rule.id).endswith(f"/docs/check.md#{rule_anchor(rule.id)}"), rule.id


def test_a_rule_is_an_error_exactly_where_the_sep_says_must() -> None:
    for rule in RULES:
        assert rule.section in SEP_SECTIONS, rule.id
        assert (rule.severity == "error") == (rule.says == "MUST"), rule.id


def test_the_conformance_requirements_no_rule_covers_are_listed_and_no_others() -> None:
    covered = {code for rule in RULES for code in rule.conformance if code.startswith("sep-2640")}
    assert covered <= REQUIREMENTS, covered - REQUIREMENTS
    rows = uncovered_rows()
    assert set(rows) == REQUIREMENTS - covered
    for requirement, cells in rows.items():
        assert len(cells) == 2, requirement
        assert all(cells), requirement


def test_the_requirements_are_those_of_the_conformance_suite_check_runs() -> None:
    if not SUITE.is_dir():
        pytest.skip("@modelcontextprotocol/conformance is not installed (.ci/thirdparty)")
    assert f'"version": "{SUITE_VERSION}"' in (SUITE / "package.json").read_text("utf-8")
    source = (SUITE / "dist" / "index.js").read_text(encoding="utf-8")
    named = set(re.findall(r"`(sep-2640-[a-z0-9-]*[a-z0-9])`", source))
    scenarios = set(re.findall(r"(?:this\.name=|scenario:)`(sep-2640-[a-z0-9-]+)`", source))
    assert named - scenarios == REQUIREMENTS


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


def test_the_rules_link_into_the_repository_pyproject_names() -> None:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert f'Homepage = "{REPOSITORY}"' in text
    assert f'Documentation = "{REPOSITORY}/blob/main/docs"' in text
