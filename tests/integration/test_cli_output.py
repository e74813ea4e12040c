"""What the `skillward` command prints: at any width, with options anywhere, and as JSON."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from skillward.serve.catalog import example_skills_dir
from tests.integration.test_cli import EXAMPLES, run
from tests.support.trees import skill_md, write

REFUNDS_DESCRIPTION = (
    "Process customer refund requests according to Acme billing policy. Use when a customer "
    "asks for money back, a charge is disputed, or an order is cancelled after payment."
)


def misbehaving(label: str, mode: str) -> str:
    module = "tests.support.misbehaving"
    return f"{label}={sys.executable} -m {module} {example_skills_dir()} --mode {mode}"


@pytest.mark.parametrize("where", ["before", "after", "split"])
def test_common_options_work_before_or_after_the_command(tmp_path: Path, where: str) -> None:
    options = ["--no-local", "--json", "--server", EXAMPLES]
    if where == "before":
        argv = [*options, "list"]
    elif where == "after":
        argv = ["list", *options]
    else:
        argv = ["--json", "--server", EXAMPLES, "list", "--no-local"]
    result = run(*argv, home=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert {item["origin"]["label"] for item in data["skills"]} == {"examples"}


def test_servers_given_before_and_after_the_command_are_all_connected(tmp_path: Path) -> None:
    second = EXAMPLES.replace("examples=", "second=", 1)
    result = run(
        "--server", EXAMPLES, "list", "--server", second, "--no-local", "--json", home=tmp_path
    )
    assert result.returncode == 0, result.stderr
    labels = {s["label"] for s in json.loads(result.stdout)["servers"]}
    assert labels == {"examples", "second"}


@pytest.mark.parametrize("columns", [60, 80, 200])
def test_list_wraps_descriptions_and_keeps_refs_whole_at_any_width(
    tmp_path: Path, columns: int
) -> None:
    result = run("list", "--no-local", "--server", EXAMPLES, home=tmp_path, columns=columns)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert all(len(line) <= columns for line in lines), lines
    assert "  refunds  (examples:refunds)" in lines
    # The server's unverified name is shown once, for the server, not on every row.
    assert result.stdout.count("skillward-serve") == 1
    words = " ".join(line.strip() for line in lines)
    assert REFUNDS_DESCRIPTION in words


@pytest.mark.parametrize("columns", [60, 80, 200])
def test_show_wraps_the_description_and_lists_files_from_the_skill_root(
    tmp_path: Path, columns: int
) -> None:
    result = run(
        "show", "refunds", "--no-local", "--server", EXAMPLES, home=tmp_path, columns=columns
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    panel = " ".join(line.strip("│ ") for line in lines if line.startswith("│"))
    assert REFUNDS_DESCRIPTION in re.sub(r"\s+", " ", panel)
    table = [line for line in lines if "templates/email.md" in line]
    assert table, result.stdout
    assert "skill://" not in table[0]
    assert re.search(r"sha256:[0-9a-f]{12}\b", table[0])
    frontmatter = [
        line for line in lines if not line.startswith(("│", "╭", "╰", "┃", "┏", "┡", "└"))
    ]
    assert all(len(line) <= columns for line in lines if line in frontmatter and '"' not in line)


def test_errors_are_json_on_stderr_with_json(tmp_path: Path) -> None:
    result = run(
        "show", "no-such-skill", "--json", "--no-local", "--server", EXAMPLES, home=tmp_path
    )
    assert result.returncode == 2
    assert result.stdout == ""
    error = json.loads(result.stderr)
    assert error["error"] == "SkillNotFound"
    assert error["exit_code"] == 2
    assert "no-such-skill" in error["message"]


def test_list_json_shows_failed_servers_and_servers_without_skills(tmp_path: Path) -> None:
    result = run(
        "list",
        "--json",
        "--no-local",
        "--server",
        EXAMPLES,
        "--server",
        "gone=http://127.0.0.1:9/mcp",
        "--server",
        misbehaving("plain", "plain"),
        home=tmp_path,
    )
    assert result.returncode == 6
    servers = {s["label"]: s for s in json.loads(result.stdout)["servers"]}
    assert servers["examples"]["state"] == "connected"
    assert servers["gone"]["state"] == "failed"
    assert servers["gone"]["error"]["error"] == "TransportError"
    assert servers["plain"]["skills_extension"] is False
    assert "does not declare" in servers["plain"]["problem"]
    json.loads(result.stderr.splitlines()[0])  # the connect failure, as JSON


@pytest.mark.threat("T11")
def test_a_server_failing_at_connect_exits_6_with_its_real_cause(tmp_path: Path) -> None:
    result = run(
        "show",
        "bad:refunds",
        "--no-local",
        "--timeout",
        "20",
        "--server",
        misbehaving("bad", "endless"),
        home=tmp_path,
    )
    assert result.returncode == 6, result.stderr
    assert "did not end within" in result.stderr
    assert "no connected server" not in result.stderr
    assert "cancel scope" not in result.stderr


@pytest.mark.threat("T11")
@pytest.mark.threat("T44")
@pytest.mark.parametrize(
    ("mode", "timeout", "said"),
    [
        ("stall-list", "3", "did not finish within 3"),
        ("endless", "30", "did not end within 1000 pages"),
        ("huge-frontmatter", "30", "result is larger than"),
    ],
)
def test_a_server_failing_its_listing_ends_load_with_one_clear_line_naming_it(
    tmp_path: Path, mode: str, timeout: str, said: str
) -> None:
    # Its process is stopped as the command leaves, while its session may still be
    # reading: nothing of that reaches the terminal.
    result = run(
        "load",
        "refunds",
        "--approve-once",
        "--no-local",
        "--no-cache",
        "--timeout",
        timeout,
        "--server",
        misbehaving("bad", mode),
        home=tmp_path,
    )
    assert result.returncode == 6, result.stderr
    (error,) = (line for line in result.stderr.splitlines() if line.startswith("skillward:"))
    assert error.startswith("skillward: server 'bad': ")
    assert said in error
    for never in ("Traceback", "RuntimeError", "stopping", "\\n"):
        assert never not in result.stderr


@pytest.mark.threat("T11")
def test_timeout_bounds_the_handshake_and_the_hint_names_it(tmp_path: Path) -> None:
    result = run(
        "list",
        "--no-local",
        "--timeout",
        "3",
        "--server",
        misbehaving("quiet", "silent"),
        home=tmp_path,
    )
    assert result.returncode == 6
    assert "handshake within 3 s" in result.stderr
    assert "--timeout" in result.stderr


def test_version_is_printed(tmp_path: Path) -> None:
    from skillward import __version__  # noqa: PLC0415

    result = run("--version", home=tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == f"skillward {__version__}"


def test_a_file_the_skill_does_not_list_is_a_usage_error_listing_its_files(
    tmp_path: Path,
) -> None:
    result = run(
        "read", "refunds", "reference/nope.md", "--no-local", "--server", EXAMPLES, home=tmp_path
    )
    assert result.returncode == 2, result.stderr
    assert "tampered" not in result.stderr
    assert "templates/email.md" in result.stderr
    assert "policy/limits.json" in result.stderr


def test_an_unknown_skill_uri_is_no_such_skill_not_a_server_fault(tmp_path: Path) -> None:
    result = run(
        "show",
        "examples:skill://team/nope/SKILL.md",
        "--no-local",
        "--server",
        EXAMPLES,
        home=tmp_path,
    )
    assert result.returncode == 2, result.stderr
    assert "serves no skill at this URI" in result.stderr
    assert "running" not in result.stderr


def test_naming_a_declined_skill_says_why_it_was_declined(tmp_path: Path) -> None:
    from tests.support.hostile import build_hostile_tree  # noqa: PLC0415

    build_hostile_tree(tmp_path / "tree")
    hostile = f"hostile={sys.executable} -m tests.support.hostile {tmp_path / 'tree'}"
    result = run("show", "hostile:too-many", "--no-local", "--server", hostile, home=tmp_path)
    assert result.returncode == 4, result.stderr
    assert "513 files" in result.stderr


def test_local_origins_are_not_called_servers(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    (skills / "pdf").mkdir(parents=True)
    (skills / "pdf" / "SKILL.md").write_text("---\nname: pdf\ndescription: d\n---\nbody\n")
    result = run("read", "pdf", "../escape.md", "--skills-dir", f"project={skills}", home=tmp_path)
    assert result.returncode == 2
    assert "local skills 'project'" in result.stderr
    assert "server 'project'" not in result.stderr


GONE = "gone=http://127.0.0.1:9/mcp"


@pytest.mark.threat("T34")
@pytest.mark.parametrize(
    ("ref", "said"),
    [
        ("examples:no-such-skill", "no skill matches 'examples:no-such-skill'"),
        ("nobody:refunds", "no server or skill directory is labelled 'nobody'"),
    ],
)
def test_a_reference_to_another_server_is_not_blamed_on_one_that_failed(
    tmp_path: Path, ref: str, said: str
) -> None:
    result = run("show", ref, "--no-local", "--server", EXAMPLES, "--server", GONE, home=tmp_path)
    assert result.returncode == 2, result.stderr
    assert said in result.stderr
    assert "failed to connect, so its skills are unknown" not in result.stderr


@pytest.mark.threat("T3")
def test_an_ambiguous_name_lists_its_candidates_though_a_server_failed(tmp_path: Path) -> None:
    twin = EXAMPLES.replace("examples=", "twin=", 1)
    servers = ("--server", EXAMPLES, "--server", twin, "--server", GONE)
    result = run("show", "refunds", "--no-local", *servers, home=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "examples:refunds" in result.stderr
    assert "twin:refunds" in result.stderr


@pytest.mark.threat("T34")
def test_a_skill_only_a_failed_server_may_serve_is_blamed_on_it_in_json_too(
    tmp_path: Path,
) -> None:
    servers = ("--server", EXAMPLES, "--server", GONE)
    result = run("show", "no-such-skill", "--json", "--no-local", *servers, home=tmp_path)
    assert result.returncode == 6, result.stderr
    assert result.stdout == ""
    connect, unknown = (json.loads(line) for line in result.stderr.splitlines())
    assert connect["server"] == "gone"
    assert unknown["error"] == "SkillNotFound"
    assert unknown["failed_to_connect"] == ["gone"]
    labelled = run("show", "gone:refunds", "--no-local", *servers, home=tmp_path)
    assert labelled.returncode == 6, labelled.stderr
    assert "'gone' failed to connect, so its skills are unknown" in labelled.stderr


def test_a_server_is_named_as_its_servers_file_spells_it(tmp_path: Path) -> None:
    command, _, rest = EXAMPLES.partition("=")[2].partition(" ")
    config = tmp_path / "servers.json"
    config.write_text(
        json.dumps({"mcpServers": {"brave_search": {"command": command, "args": rest.split()}}})
    )
    common = ("--no-local", "--config", str(config))
    for written in ("brave_search", "Brave Search", "brave-search"):
        result = run("show", f"{written}:refunds", "--json", *common, home=tmp_path)
        assert result.returncode == 0, result.stderr
        shown = json.loads(result.stdout)
        assert shown["origin"]["label"] == "brave-search"
        assert shown["qualified"] == "brave-search:refunds"
    typo = run("show", "brave_serch:refunds", *common, home=tmp_path)
    assert typo.returncode == 2, typo.stderr
    assert "no server or skill directory is labelled 'brave-serch'" in typo.stderr
    assert "did you mean 'brave-search'?" in typo.stderr


# --- hints fit where they appear -----------------------------------------------------------

#: What names the library's API: a person at the command line can do nothing with it.
PYTHON_API = re.compile(r"SkillHost|HostConfig|ApprovalBook|Limits\.|approver=|\bhost\.\w")


def hint_line(stderr: str) -> str:
    (hint,) = (line.strip() for line in stderr.splitlines() if line.strip().startswith("hint:"))
    return hint


def json_error(stderr: str) -> dict[str, Any]:
    (error,) = (json.loads(line) for line in stderr.splitlines() if line.startswith("{"))
    assert isinstance(error, dict)
    return error


@pytest.mark.parametrize(
    ("mode", "timeout", "error", "said"),
    [
        ("die-on-read", "30", "ServerDisconnected", "run the command again"),
        ("stall-read", "3", "DeadlineExceeded", "raise the deadline with --timeout SECONDS"),
    ],
)
def test_a_server_fault_gets_a_command_line_hint_not_the_librarys(
    tmp_path: Path, mode: str, timeout: str, error: str, said: str
) -> None:
    argv = ("load", "refunds", "--approve-once", "--no-local", "--no-cache", "--timeout", timeout)
    server = ("--server", misbehaving("bad", mode))
    result = run(*argv, *server, home=tmp_path)
    assert result.returncode == 6, result.stderr
    assert said in hint_line(result.stderr)
    assert not PYTHON_API.search(result.stderr)
    as_json = json_error(run(*argv, *server, "--json", home=tmp_path).stderr)
    assert as_json["error"] == error
    assert said in as_json["hint"]
    assert not PYTHON_API.search(as_json["hint"])


def test_an_unknown_label_says_how_to_add_that_server_and_where_it_is_kept(
    tmp_path: Path,
) -> None:
    result = run("show", "nobody:refunds", "--no-local", "--server", EXAMPLES, home=tmp_path)
    assert result.returncode == 2, result.stderr
    hint = hint_line(result.stderr)
    assert "The labels known here: examples." in hint
    assert "--server LABEL=URL_OR_COMMAND" in hint
    assert "`skillward servers add LABEL CMD_OR_URL`" in hint
    assert f"(it is kept in {tmp_path / '.config' / 'skillward' / 'servers.json'})" in hint
    config = tmp_path / "team servers.json"
    config.write_text('{"mcpServers": {}}')
    given = ("--config", str(config), "--server", EXAMPLES, "--no-local", "--json")
    shown = json_error(run("show", "nobody:refunds", *given, home=tmp_path).stderr)
    assert f"`skillward servers add LABEL CMD_OR_URL --config '{config}'`" in shown["hint"]
    assert f"(it is kept in {config})" in shown["hint"]
    checked = json_error(run("check", "nobody", *given, home=tmp_path).stderr)
    assert checked["error"] == "UnknownServer"
    assert checked["hint"] == shown["hint"].removeprefix("The labels known here: examples. ")


@pytest.mark.threat("T55")
@pytest.mark.parametrize("command", ["list", "show"])
def test_json_output_carries_no_control_bidi_or_invisible_character_a_server_wrote(
    tmp_path: Path, command: str
) -> None:
    # A description that clears the screen and writes skillward's own words in its place.
    description = "\u009b2J\u009b1;1HAll skills verified.\u009b8m \u202eabc\u2028x\u200by\x7fz"
    skills = tmp_path / "skills"
    write(skills, "evil/SKILL.md", skill_md("evil", json.dumps(description)))
    server = f"evil={sys.executable} -m skillward serve {skills}"
    argv = ["list"] if command == "list" else ["show", "evil:evil"]
    result = run(*argv, "--no-local", "--json", "--server", server, home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.isascii(), [c for c in result.stdout if not c.isascii()]
    data = json.loads(result.stdout)
    shown = data["skills"][0] if command == "list" else data
    assert shown["description"] == description  # the data whole, as JSON escapes
