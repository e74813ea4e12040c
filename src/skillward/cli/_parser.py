"""The grammar of the ``skillward`` command: the command groups, and one table of
common options (:data:`COMMON_OPTIONS`), taken before the command name or after it by
every command.

Each command group is a module of this package with an ``add_commands`` function; it is
added to the grammar by its line in :data:`GROUPS`. Building the grammar imports little
more than argparse (each command imports what it uses when it runs), so ``--version``
answers at once.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from skillward.cli import (
    administering,
    approving,
    checking,
    demonstrating,
    diagnosing,
    gatewaying,
    inspecting,
    registering,
    serving,
)
from skillward.cli._context import EXIT_CODES
from skillward.core.errors import ConfigError

if TYPE_CHECKING:
    from skillward.cli._context import Commands
    from skillward.edge._local import LocalSkillDir

__all__ = ["COMMON_OPTIONS", "GROUPS", "build_parser", "commands", "merge_common", "parse_args"]

#: The command groups, in the order ``--help`` lists their commands.
GROUPS: tuple[Callable[[Commands], None], ...] = (
    inspecting.add_commands,
    approving.add_commands,
    administering.add_commands,
    diagnosing.add_commands,
    registering.add_commands,
    demonstrating.add_commands,
    serving.add_commands,
    gatewaying.add_commands,
    checking.add_commands,
)


# --- the common options ------------------------------------------------------------------


def _skills_dir(text: str) -> LocalSkillDir:
    from skillward.core.labels import normalise_label  # only when given
    from skillward.edge._local import LocalSkillDir

    label, sep, path = text.partition("=")
    if not sep or not path:
        raise argparse.ArgumentTypeError(f"expected LABEL=PATH, not {text!r}")
    try:
        return LocalSkillDir(normalise_label(label), Path(path))
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"expected seconds between 0 and 3600, not {text!r}")
    return value


@dataclass(frozen=True, slots=True)
class CommonOption:
    """An option every command takes, before or after the command name.

    ``flag`` options are on if given anywhere; ``list`` options gather every value given,
    before and after; a ``value`` option given after the command wins over one before it.
    """

    flag: str
    kind: Literal["flag", "value", "list"]
    help: str
    metavar: str | None = None
    type: Callable[[str], Any] | None = None

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")


#: The options every command takes; :func:`build_parser` gives them to each command.
COMMON_OPTIONS: tuple[CommonOption, ...] = (
    CommonOption(
        "--config",
        "value",
        "mcpServers JSON file (default: servers.json in the user config directory, "
        "~/.config/skillward on Linux, if it exists)",
        metavar="FILE",
        type=Path,
    ),
    CommonOption(
        "--server",
        "list",
        "connect a server under LABEL (repeatable); a URL for streamable HTTP, "
        "otherwise a command line for stdio",
        metavar="LABEL=URL_OR_COMMAND",
    ),
    CommonOption(
        "--skills-dir",
        "list",
        "a local skills directory (repeatable); the default is ./.agents/skills "
        "as 'project' and ~/.agents/skills as 'user'",
        metavar="LABEL=PATH",
        type=_skills_dir,
    ),
    CommonOption("--no-local", "flag", "do not discover local skills"),
    CommonOption("--no-cache", "flag", "neither read nor write the disk cache"),
    CommonOption("--json", "flag", "machine-readable output (errors too, on stderr)"),
    CommonOption("--debug", "flag", "show tracebacks and the SDK's log on errors"),
    CommonOption(
        "--timeout",
        "value",
        "deadline for each operation with a server, the handshake included (default 60)",
        metavar="SECONDS",
        type=_timeout,
    ),
)

#: Where options given after the command name land, before :func:`merge_common`.
_AFTER = "after_"


def _add_common(parser: argparse.ArgumentParser, *, after: bool) -> None:
    for option in COMMON_OPTIONS:
        kwargs: dict[str, Any] = {"dest": (_AFTER if after else "") + option.dest}
        if option.kind == "flag":
            kwargs.update(action="store_true", default=False)
        else:
            kwargs.update(metavar=option.metavar, type=option.type)
            if option.kind == "list":
                kwargs.update(action="append", default=[])
        if after:
            # Absent unless given: a command's parser never overwrites what came before it.
            kwargs["default"] = argparse.SUPPRESS
        parser.add_argument(option.flag, help=option.help, **kwargs)


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command of ``parser`` (``("cache", "list")``...) and its parser: the parsers
    with no subcommands of their own, and those whose subcommands may be left out
    (``audit``, beside ``audit verify``)."""
    # argparse keeps subcommands in a private list of actions; it has no public walk.
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            if path and not action.required:
                yield path, parser
            for name, sub in action.choices.items():
                yield from commands(sub, (*path, name))
            return
    if path:
        yield path, parser


def _with_common_options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Give ``parser`` and each of its commands, nested ones too, every common option."""
    _add_common(parser, after=False)
    for _, command in commands(parser):
        _add_common(command, after=True)
    return parser


def merge_common(args: argparse.Namespace) -> argparse.Namespace:
    """Fold options given after the command into those given before it."""
    for option in COMMON_OPTIONS:
        before = getattr(args, option.dest)
        after = vars(args).pop(_AFTER + option.dest, None)
        if option.kind == "list":
            merged: object = [*before, *(after or [])]
        elif option.kind == "flag":
            merged = before or bool(after)
        else:
            merged = after if after is not None else before
        setattr(args, option.dest, merged)
    return args


# --- the grammar -------------------------------------------------------------------------


class _Version(argparse.Action):
    """``--version``: reads the installed version only when asked for it."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.update(nargs=0, default=argparse.SUPPRESS)
        super().__init__(option_strings, argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> NoReturn:
        from skillward._version import __version__  # importlib.metadata: only when asked

        print(f"skillward {__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The whole grammar: every command of every group, each with the common options.

    Each command's parser holds what runs it: ``run`` (with a terminal) or ``serve``.
    """
    parser = argparse.ArgumentParser(
        prog="skillward",
        description="Security-focused host-side loader for skills served over MCP (SEP-2640).",
        epilog="Exit codes: "
        + "; ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES.items()),
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    parser.set_defaults(run=None, serve=None)
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add_commands in GROUPS:
        add_commands(subcommands)
    return _with_common_options(parser)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """``argv`` as the command reads it, common options merged from both sides."""
    return merge_common(build_parser().parse_args(argv))
