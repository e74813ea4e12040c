"""`skillward check` against third-party SEP-2640 servers over stdio: FastMCP's skills
provider (PyPI, in the test extra) and the TypeScript SDK's ext/skills server
(.ci/thirdparty installs it, with Node 22, into .ci/.cache).

Both serve the bundled example skills. What each is reported for is its own behaviour,
asserted here as found, so a change on either side shows.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import anyio
import pytest

from skillward.check.report import outcome
from skillward.check.runner import ServerReport, check_server
from skillward.edge.servers import ServerSpec, StdioTransport
from skillward.serve.catalog import example_skills_dir
from tests.support.listings import REPO_ROOT

pytestmark = pytest.mark.anyio

CACHE = REPO_ROOT / ".ci" / ".cache"
NODE = CACHE / "node22" / "node_modules" / ".bin" / "node"
TS_SDK = CACHE / "ts-sdk" / "node_modules"
TS_SERVER = Path(__file__).resolve().parents[1] / "support" / "ts_skills_server.mjs"


async def check(command: str, *args: str) -> ServerReport:
    transport = StdioTransport(command=command, args=args, cwd=str(REPO_ROOT), stderr="discard")
    with anyio.fail_after(180):
        return await check_server(ServerSpec(label="third-party", transport=transport))


def rules(report: ServerReport) -> set[str]:
    return {finding.rule for finding in report.findings}


FASTMCP = pytest.mark.skipif(
    importlib.util.find_spec("fastmcp") is None,
    reason="FastMCP is not installed (pip install -e '.[test]')",
)


def examples(tmp_path: Path) -> Path:
    """The bundled example skills, copied without the bytecode a run of their script may
    leave beside it: these servers serve every file, so the counts below would move."""
    copy = tmp_path / "skills"
    shutil.copytree(example_skills_dir(), copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def fastmcp(skills: Path, *args: str) -> tuple[str, ...]:
    return ("-m", "tests.support.fastmcp_skills", str(skills), *args)


@FASTMCP
async def test_fastmcp_skills_provider_is_checked_and_its_findings_are_its_own(
    tmp_path: Path,
) -> None:
    report = await check(sys.executable, *fastmcp(examples(tmp_path)))
    assert report.error is None, report.error
    assert report.protocol == "2026-07-28"
    # FastMCP lists the three top-level skills; the nested one is a file of its parent.
    assert (report.skills, report.files) == (3, 12)
    found = {(finding.rule, finding.severity) for finding in report.findings}
    assert found == {
        # A _manifest it generates under each skill's root, which is no file of the skill.
        ("SW-RES-008", "note"),
        # SKILL.md's resource name is its path, and _meta uses the bare key "fastmcp".
        ("SW-META-002", "warning"),
        ("SW-META-004", "warning"),
        # Skills are served on 2026-07-28 only, and an unknown cursor gets a page.
        ("SW-CAP-006", "note"),
        ("SW-LIST-011", "warning"),
        # What the example skills themselves carry.
        ("SW-HYG-003", "note"),
        ("SW-INFO-001", "note"),
    }, found
    manifests = [f.uri for f in report.findings if f.rule == "SW-RES-008"]
    assert len(manifests) == 3
    assert all(uri is not None and uri.endswith("/_manifest") for uri in manifests)
    # What FastMCP does, not the author, is named as such, with what the author can do.
    framework = {"SW-RES-008", "SW-META-002", "SW-META-004", "SW-CAP-006", "SW-LIST-011"}
    for finding in report.findings:
        assert (finding.cause is not None) == (finding.rule in framework), finding
        assert finding.cause is None or "FastMCP" in finding.cause
    # No SEP MUST is broken: the check passes.
    assert outcome([report]).exit_code == 0


@FASTMCP
async def test_fastmcp_paging_its_lists_answers_an_unknown_cursor_as_the_cause_says(
    tmp_path: Path,
) -> None:
    skills = examples(tmp_path)
    (cause,) = {
        f.cause
        for f in (await check(sys.executable, *fastmcp(skills))).findings
        if f.rule == "SW-LIST-011"
    }
    assert cause is not None
    assert "list_page_size" in cause
    report = await check(sys.executable, *fastmcp(skills, "--page-size", "100"))
    assert report.error is None, report.error
    assert "SW-LIST-011" not in rules(report)


@pytest.mark.skipif(
    not NODE.exists() or not (TS_SDK / "@modelcontextprotocol" / "server").is_dir(),
    reason="Node 22 and @modelcontextprotocol/server are not installed (.ci/thirdparty)",
)
async def test_the_typescript_sdk_skills_server_is_checked_and_its_findings_are_its_own(
    tmp_path: Path,
) -> None:
    # Node resolves the SDK from beside the script.
    (tmp_path / "node_modules").symlink_to(TS_SDK)
    script = tmp_path / TS_SERVER.name
    script.write_bytes(TS_SERVER.read_bytes())
    report = await check(str(NODE), str(script), str(examples(tmp_path)))
    assert report.error is None, report.error
    assert (report.skills, report.files) == (4, 14)
    found = rules(report)
    # It answers directory reads for skill roots and their subdirectories, not for the
    # prefix directories above them (skill://acme).
    assert found == {"SW-DIR-002", "SW-HYG-003", "SW-INFO-001", "SW-INFO-002"}, found
    prefixes = sorted(f.uri for f in report.findings if f.rule == "SW-DIR-002" and f.uri)
    assert prefixes == ["skill://acme", "skill://acme/billing"]
    assert outcome([report]).exit_code == 0
