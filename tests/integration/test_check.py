"""`skillward check` against real servers: the bundled examples, hostile servers, servers
that stall, loop or send too much; its output formats, baselines and exit codes."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from skillward.check.report import outcome, render_json, render_sarif, render_text
from skillward.check.runner import check_server
from skillward.core.config import Limits
from skillward.core.errors import DeadlineExceeded
from skillward.edge.servers import HttpTransport, InMemoryTransport, ServerSpec, StdioTransport
from skillward.serve.catalog import example_skills_dir
from tests.integration.test_cli import EXAMPLES, run
from tests.support.hostile import build_hostile_tree
from tests.support.listings import REPO_ROOT
from tests.support.misbehaving import deaf_argv
from tests.support.rulebreakers import build_tree, error, served
from tests.support.servers import http_server, serve_argv
from tests.support.trees import skill_md, write

SARIF_SCHEMA = Path(__file__).resolve().parents[1] / "data" / "sarif-schema-2.1.0.json"
HOSTILE_RULES = {
    "SW-READ-005",  # wrong-size
    "SW-READ-006",  # wrong-digest
    "SW-FM-010",  # fm-mismatch
    "SW-RES-003",  # outside-root
    "SW-URI-005",  # file-uri
    "SW-LIM-001",  # too-many
    "SW-LIM-002",  # too-big
    "SW-FM-011",  # alias-bomb
    "SW-ENTRY-004",  # dynamic
    "SW-HYG-002",  # forged
    "SW-RES-006",  # extra-file
}


def config(tmp_path: Path, servers: dict[str, Any]) -> Path:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def module_server(module: str, *args: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", module, *args], "cwd": str(REPO_ROOT)}


def hostile_tree(tmp_path: Path) -> Path:
    root = tmp_path / "hostile"
    build_hostile_tree(root)
    return root


# --- the command, as a person runs it --------------------------------------------------------


def test_the_bundled_examples_through_skillward_serve_pass(tmp_path: Path) -> None:
    result = run("check", "--no-local", "--server", EXAMPLES, home=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "server examples" in result.stdout
    assert "4 skills listed, 14 files read and verified: 0 errors" in result.stdout
    assert all(len(line) <= 80 for line in result.stdout.splitlines())


def test_the_bundled_examples_over_http_pass_and_report_as_json(tmp_path: Path) -> None:
    async def main() -> dict[str, Any]:
        argv = serve_argv(example_skills_dir(), "--http", "127.0.0.1:0")
        async with http_server(argv) as url:
            done = await anyio.to_thread.run_sync(
                lambda: run("check", "web", "--json", "--server", f"web={url}", home=tmp_path)
            )
        assert done.returncode == 0, done.stdout + done.stderr
        report: dict[str, Any] = json.loads(done.stdout)
        return report

    report = anyio.run(main)
    (server,) = report["servers"]
    assert (server["label"], server["checked"], server["skills"]) == ("web", True, 4)
    assert server["protocol"] == "2026-07-28"
    assert report["summary"]["error"] == 0
    assert report["summary"]["exit_code"] == 0
    finding = server["findings"][0]
    assert set(finding) >= {"rule", "severity", "skill", "uri", "message"}


def broad_skill(root: Path) -> Path:
    """A skills directory with one warning: a shell granted whole."""
    write(root, "shell/SKILL.md", skill_md("shell", "Runs things", "allowed-tools: Bash\n"))
    return root


def test_strict_passes_on_the_bundled_examples_and_fails_on_a_warning(tmp_path: Path) -> None:
    # pdf-processing requests allowed-tools, narrowed (Bash(python:*)): the SEP allows it.
    examples = run("check", "--strict", "--no-local", "--server", EXAMPLES, home=tmp_path)
    assert examples.returncode == 0, examples.stdout + examples.stderr
    assert "SW-HYG-003" in examples.stdout
    assert "0 errors, 0 warnings" in examples.stdout
    skills = broad_skill(tmp_path / "skills")
    lenient = run("check", "--no-local", str(skills), home=tmp_path)
    assert lenient.returncode == 0, lenient.stdout + lenient.stderr
    strict = run("check", "--strict", "--no-local", str(skills), home=tmp_path)
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "SW-HYG-008" in strict.stdout


def test_a_hostile_server_over_stdio_is_reported_with_exit_1(tmp_path: Path) -> None:
    root = hostile_tree(tmp_path)
    servers = config(tmp_path, {"hostile": module_server("tests.support.hostile", str(root))})
    result = run("check", "--config", str(servers), "--json", home=tmp_path)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    rules = {finding["rule"] for finding in report["servers"][0]["findings"]}
    assert rules >= HOSTILE_RULES, HOSTILE_RULES - rules


@pytest.mark.anyio
async def test_a_hostile_server_over_http_is_reported_as_over_stdio(tmp_path: Path) -> None:
    root = hostile_tree(tmp_path)
    argv = [sys.executable, "-m", "tests.support.hostile", str(root), "--http", "127.0.0.1:0"]
    async with http_server(argv) as url:
        with anyio.fail_after(120):
            report = await check_server(ServerSpec(label="h", transport=HttpTransport(url=url)))
    assert report.error is None
    assert {finding.rule for finding in report.findings} >= HOSTILE_RULES


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    none = run("check", "--no-local", home=tmp_path)
    assert none.returncode == 2
    assert "no servers to check" in none.stderr
    unknown = run("check", "nope", "--server", EXAMPLES, home=tmp_path)
    assert unknown.returncode == 2
    assert "no server is labelled 'nope'" in unknown.stderr
    both = run("check", "--json", "--format", "sarif", "--server", EXAMPLES, home=tmp_path)
    assert both.returncode == 2


def test_a_server_that_cannot_be_started_exits_6(tmp_path: Path) -> None:
    result = run("check", "--server", "gone=/nonexistent/server --stdio", home=tmp_path)
    assert result.returncode == 6, result.stdout + result.stderr
    assert "not checked to the end" in result.stdout


@pytest.mark.threat("T56")
def test_a_server_the_policy_refuses_is_never_started(tmp_path: Path) -> None:
    policy = tmp_path / ".config" / "skillward" / "policy.toml"
    policy.parent.mkdir(parents=True)
    policy.write_text('version = 1\n[servers]\ndeny = ["evil"]\n', encoding="utf-8")
    pid = tmp_path / "started.pid"
    argv = deaf_argv(pid)
    servers = config(tmp_path, {"evil": {"command": argv[0], "args": argv[1:]}})
    result = run("check", "--config", str(servers), home=tmp_path)
    assert result.returncode == 5, result.stdout + result.stderr
    assert not pid.exists()


# --- bounds: stalls, endless cursors, huge responses ---------------------------------------


def misbehaving(mode: str, **options: Any) -> ServerSpec:
    examples = str(example_skills_dir())
    argv = [sys.executable, "-m", "tests.support.misbehaving", examples, "--mode", mode]
    transport = StdioTransport(
        command=argv[0], args=tuple(argv[1:]), cwd=str(REPO_ROOT), stderr="discard", **options
    )
    return ServerSpec(label=mode, transport=transport)


@pytest.mark.anyio
@pytest.mark.threat("T57")
@pytest.mark.parametrize("mode", ["silent", "stall-list", "stall-read"])
async def test_a_stalling_server_stops_the_check_at_the_deadline_and_exits_6(mode: str) -> None:
    limits = Limits(operation_timeout=3, request_timeout=3)
    with anyio.fail_after(60):
        report = await check_server(misbehaving(mode), limits=limits)
    assert isinstance(report.error, DeadlineExceeded), report.error
    assert outcome([report]).exit_code == 6


@pytest.mark.anyio
@pytest.mark.threat("T57")
async def test_the_whole_check_has_a_deadline_of_its_own(tree: Path) -> None:
    calls = 0

    async def slow(params: dict[str, Any], original: Any) -> Any:
        nonlocal calls
        calls += 1
        await anyio.sleep(0.5)
        return await original()

    server = served(tree, rewrite={"resources/read": slow})
    spec = ServerSpec(label="slow", transport=InMemoryTransport(server=server))
    with anyio.fail_after(30):
        report = await check_server(spec, deadline=1.2)
    assert isinstance(report.error, DeadlineExceeded)
    assert calls <= 4


@pytest.mark.anyio
@pytest.mark.threat("T57")
async def test_endless_cursors_end_at_the_page_limit() -> None:
    with anyio.fail_after(120):
        report = await check_server(misbehaving("endless"), limits=Limits(max_list_pages=200))
    assert report.error is None
    assert "SW-LIST-002" in {finding.rule for finding in report.findings}


@pytest.mark.anyio
@pytest.mark.threat("T57")
async def test_a_32_mib_read_is_refused_at_the_transport_and_reported() -> None:
    with anyio.fail_after(120):
        report = await check_server(misbehaving("huge-read"))
    assert report.error is None
    rules = {finding.rule for finding in report.findings}
    assert "SW-WIRE-001" in rules or "SW-READ-005" in rules, report.findings


@pytest.mark.anyio
@pytest.mark.threat("T57")
@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="measures memory via /proc")
@pytest.mark.parametrize("shape", ["beyond", "manifests"])
async def test_checking_a_hostile_listing_costs_bounded_memory(shape: str) -> None:
    argv = [sys.executable, "-m", "tests.support.check_measure", shape]
    with anyio.fail_after(300):
        done = await anyio.run_process(argv, cwd=REPO_ROOT)
    measured = json.loads(done.stdout)
    assert measured["growth_mb"] < 200, measured
    assert measured["error"] is None, measured
    expected = "SW-WIRE-001" if shape == "beyond" else "SW-CAP-005"
    assert expected in measured["rules"], measured


# --- output ---------------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    build_tree(root)
    return root


async def hostile_strings(tree: Path) -> Any:
    """A check of a server whose strings try to drive a terminal or plant a link."""
    evil = "\x1b[2J\x1b]8;;https://evil\x07[click](https://evil)\\[tap\\](https://evil)\u202e\x9b"

    def entry(value: dict[str, Any]) -> None:
        value["uri"] = f"skill://plain{evil}/SKILL.md"
        value["frontmatter"]["name"] = evil

    async def refuse(params: dict[str, Any], original: Any) -> Any:
        raise error(-32603, f"nope {evil}")

    server = served(
        tree,
        entries={"skill://acme/billing/refunds/SKILL.md": entry},
        rewrite={"skills/get": refuse},
    )
    spec = ServerSpec(label="evil", transport=InMemoryTransport(server=server))
    with anyio.fail_after(60):
        return outcome([await check_server(spec)])


@pytest.mark.anyio
@pytest.mark.threat("T55")
async def test_no_server_string_reaches_the_terminal_unescaped(tree: Path) -> None:
    result = await hostile_strings(tree)
    text = render_text(result)
    assert "nope" in text
    for forbidden in ("\x1b", "\x07", "\u202e", "\x9b"):
        assert forbidden not in text
    for rendered in (render_json(result), render_sarif(result)):
        assert rendered.isascii()
        assert "\\u001b" not in rendered or "\x1b" not in rendered
    # Decoded, the messages still carry no control or bidi character: they were escaped
    # before rendering, not only by JSON's own escaping. (``skill`` and ``uri`` stay the
    # server's exact strings, as data, so that a baseline matches them.)
    findings = json.loads(render_json(result))["servers"][0]["findings"]
    results = json.loads(render_sarif(result))["runs"][0]["results"]
    messages = [f["message"] for f in findings] + [r["message"]["text"] for r in results]
    assert any("nope" in message for message in messages)
    for message in messages:
        for forbidden in ("\x1b", "\x07", "\u202e", "\x9b"):
            assert forbidden not in message


@pytest.mark.anyio
@pytest.mark.threat("T55")
async def test_sarif_messages_carry_no_link_a_server_wrote(tree: Path) -> None:
    result = await hostile_strings(tree)
    log = json.loads(render_sarif(result))
    messages = [r["message"]["text"] for r in log["runs"][0]["results"]]
    assert any("click" in message for message in messages)
    assert any("tap" in message for message in messages)
    for message in messages:
        assert "[click]" not in message
        assert "\\[click\\]" in message or "click" not in message
        # Every bracket is escaped as SARIF reads it: after an odd run of backslashes (a
        # backslash the server wrote before one must not cancel its escape).
        assert re.search(r"(?<!\\)(?:\\\\)*[\[\]]", message) is None, message


@pytest.mark.anyio
@pytest.mark.threat("T55")
@pytest.mark.parametrize(
    "listed", ["src/app.py", "javascript:alert(1)", "https://evil.example/SKILL.md"]
)
async def test_only_a_skill_uri_a_server_lists_is_a_sarif_location(tree: Path, listed: str) -> None:
    # Code scanning reads a relative location against the repository: the finding would
    # be shown on the author's own src/app.py, with the server's words beside it; and a
    # viewer may open another scheme's location as a link.
    def entry(value: dict[str, Any]) -> None:
        value["uri"] = listed

    server = served(tree, entries={"skill://acme/billing/refunds/SKILL.md": entry})
    spec = ServerSpec(label="evil", transport=InMemoryTransport(server=server))
    with anyio.fail_after(60):
        result = outcome([await check_server(spec)])
    (report,) = result.reports
    assert listed in {f.uri or f.skill for f in report.findings}
    log = json.loads(render_sarif(result))
    places = [
        location["physicalLocation"]["artifactLocation"]
        for found in log["runs"][0]["results"]
        for location in found["locations"]
    ]
    assert places
    assert {"uri": listed} not in places
    for place in places:
        assert place["uri"] == "evil" or place["uri"].startswith("skill://"), place


@pytest.mark.anyio
async def test_the_sarif_log_is_valid_sarif_2_1_0(tree: Path) -> None:
    result = await hostile_strings(tree)
    log = json.loads(render_sarif(result))
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(log)
    run_log = log["runs"][0]
    rules = run_log["tool"]["driver"]["rules"]
    assert len(rules) >= 80
    for found in run_log["results"]:
        assert rules[found["ruleIndex"]]["id"] == found["ruleId"]
        assert found["level"] in {"error", "warning", "note"}


def test_sarif_from_the_command_is_valid_too(tmp_path: Path) -> None:
    result = run("check", "--format", "sarif", "--server", EXAMPLES, home=tmp_path)
    assert result.returncode == 0, result.stderr
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(json.loads(result.stdout))


def test_a_baseline_accepts_known_findings_and_fails_on_a_stale_entry(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    strict = ("--strict", "--no-local", str(broad_skill(tmp_path / "skills")))
    first = run("check", *strict, "--write-baseline", str(baseline), home=tmp_path)
    # Writing a baseline accepts every finding of the run: it passes.
    assert first.returncode == 0, first.stdout + first.stderr
    assert "2 more accepted by the baseline" in " ".join(first.stdout.split())
    accepted = run("check", *strict, "--baseline", str(baseline), home=tmp_path)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "2 more accepted by the baseline" in " ".join(accepted.stdout.split())
    data = json.loads(baseline.read_text())
    data["findings"].append(
        {"server": "skills", "rule": "SW-READ-006", "skill": "skill://x/SKILL.md", "uri": None}
    )
    baseline.write_text(json.dumps(data))
    stale = run("check", *strict, "--baseline", str(baseline), home=tmp_path)
    assert stale.returncode == 1
    assert "stale baseline entry: SW-READ-006" in " ".join(stale.stdout.split())
    baseline.write_text("[]")
    broken = run("check", *strict, "--baseline", str(baseline), home=tmp_path)
    assert broken.returncode == 2
    assert "not a skillward check baseline" in broken.stderr


def test_writing_a_baseline_still_exits_6_for_a_server_not_checked(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    gone = ("--server", "gone=/nonexistent/server --stdio")
    result = run("check", *gone, "--write-baseline", str(baseline), home=tmp_path)
    assert result.returncode == 6, result.stdout + result.stderr
    assert baseline.exists()
