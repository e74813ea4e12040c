"""One grammar for the command line: every command takes every common option, before
or after its name, and the commands are found by walking the parser, not listed here."""

from __future__ import annotations

import argparse
import pkgutil
from collections.abc import Callable
from pathlib import Path

import pytest

import skillward.cli
from skillward.cli import _parser
from skillward.trust.approvals import Scope

PARSER = _parser.build_parser()
COMMANDS = sorted(path for path, _ in _parser.commands(PARSER))
SERVER = "acme=https://acme.example/mcp"

#: Each common option as given, and what the command then reads.
SAMPLES: dict[str, tuple[list[str], Callable[[argparse.Namespace], bool]]] = {
    "--config": (["--config", "servers.json"], lambda a: a.config == Path("servers.json")),
    "--server": (["--server", SERVER], lambda a: a.server == [SERVER]),
    "--skills-dir": (
        ["--skills-dir", "My Skills=/srv/skills"],
        lambda a: [(d.label, d.path) for d in a.skills_dir] == [("my-skills", Path("/srv/skills"))],
    ),
    "--no-local": (["--no-local"], lambda a: a.no_local is True),
    "--no-cache": (["--no-cache"], lambda a: a.no_cache is True),
    "--json": (["--json"], lambda a: a.json is True),
    "--debug": (["--debug"], lambda a: a.debug is True),
    "--timeout": (["--timeout", "7.5"], lambda a: a.timeout == 7.5),
}


def required_positionals(parser: argparse.ArgumentParser) -> list[str]:
    """A placeholder for each positional argument the command cannot go without."""
    return [
        "x"
        for action in parser._actions
        if not action.option_strings
        and not isinstance(action, argparse._SubParsersAction)
        and action.nargs not in ("?", "*")
    ]


def command_argv(path: tuple[str, ...]) -> list[str]:
    parser = dict(_parser.commands(PARSER))[path]
    return [*path, *required_positionals(parser)]


def test_the_walk_finds_every_command_nested_ones_too() -> None:
    names = {" ".join(path) for path in COMMANDS}
    assert {"list", "show", "serve", "demo", "logs", "audit"} <= names
    assert {"cache list", "cache purge", "approvals list", "approvals reset"} <= names
    assert {"policy show", "policy check", "policy schema"} <= names
    assert "cache" not in names  # only commands that run, not their groups


def test_every_common_option_has_a_sample_here() -> None:
    assert {option.flag for option in _parser.COMMON_OPTIONS} == set(SAMPLES)


@pytest.mark.parametrize("side", ["before", "after"])
@pytest.mark.parametrize("flag", sorted(SAMPLES))
@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_every_command_takes_every_common_option_on_either_side(
    path: tuple[str, ...], flag: str, side: str
) -> None:
    given, holds = SAMPLES[flag]
    argv = command_argv(path)
    args = _parser.parse_args([*given, *argv] if side == "before" else [*argv, *given])
    assert holds(args)
    assert not [name for name in vars(args) if name.startswith("after_")]


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_without_common_options_every_command_reads_the_defaults(path: tuple[str, ...]) -> None:
    args = _parser.parse_args(command_argv(path))
    assert (args.config, args.server, args.skills_dir, args.timeout) == (None, [], [], None)
    assert (args.no_local, args.no_cache, args.json, args.debug) == (False, False, False, False)


def test_repeatable_options_gather_both_sides_and_a_later_value_wins() -> None:
    other = "docs=https://docs.example/mcp"
    args = _parser.parse_args(
        ["--server", SERVER, "--timeout", "5", "cache", "list", "--server", other, "--timeout", "9"]
    )
    assert args.server == [SERVER, other]
    assert args.timeout == 9.0
    assert _parser.parse_args(["--timeout", "5", "approvals", "reset", "--yes"]).timeout == 5.0


@pytest.mark.parametrize("argv", [["--json", "--json", "list"], ["list", "--json", "--json"]])
def test_a_flag_given_twice_is_still_on(argv: list[str]) -> None:
    assert _parser.parse_args(argv).json is True


def test_a_bad_option_value_is_a_usage_error_on_either_side(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for argv in (["--timeout", "0", "logs", "x"], ["logs", "x", "--timeout", "0"]):
        with pytest.raises(SystemExit) as info:
            _parser.parse_args(argv)
        assert info.value.code == 2
        assert "expected seconds between 0 and 3600" in capsys.readouterr().err


def test_every_command_runs_somewhere() -> None:
    for path in COMMANDS:
        args = _parser.parse_args(command_argv(path))
        assert callable(args.run) != callable(args.serve), path


def test_every_command_group_module_is_in_the_grammar() -> None:
    modules = {
        f"skillward.cli.{module.name}"
        for module in pkgutil.iter_modules(skillward.cli.__path__)
        if not module.name.startswith("_")
    }
    assert {add_commands.__module__ for add_commands in _parser.GROUPS} == modules


def test_approve_offers_exactly_the_scopes_there_are() -> None:
    approve = dict(_parser.commands(PARSER))[("approve",)]
    (scope,) = [a for a in approve._actions if a.dest == "scope"]
    assert list(scope.choices or ()) == [s.value for s in Scope]
