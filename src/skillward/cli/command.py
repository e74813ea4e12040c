"""The ``skillward`` command.

Exit codes: 0 success, 1 ``policy check`` or ``check`` found problems, 2 usage (or a
reference that does not resolve),
3 approval required or denied, 4 verification failed, 5 policy denied,
6 server or transport error.

The grammar is one table of common options (:data:`COMMON_OPTIONS`), taken before the
command name or after it by every command. Importing this module imports little more
than argparse: a command imports what it uses when it runs, so ``--version`` answers
at once and the commands on local state (``_state``) never import ``mcp``.
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from skillward.core.errors import ConfigError, SkillwardError, UsageError, printable

if TYPE_CHECKING:
    from skillward.edge._local import LocalSkillDir
    from skillward.terminal.prompts import Terminal

__all__ = ["COMMON_OPTIONS", "EXIT_CODES", "build_parser", "commands", "main", "parse_args"]

EXIT_OK = 0
#: Documented in the README and docs/cli.md.
EXIT_CODES = {
    0: "success",
    1: "policy check or check found problems",
    2: "usage error, or a reference that does not resolve",
    3: "approval required or denied",
    4: "verification failed",
    5: "policy denied",
    6: "server or transport error",
}


# --- argument types ----------------------------------------------------------------------


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(
            f"expected HOST:PORT, for example 127.0.0.1:8765, not {text!r}"
        )
    return host.strip("[]"), int(port)


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number, not {text!r}")
    return int(text)


def _skills_dir(text: str) -> LocalSkillDir:
    from skillward.core.labels import normalise_label  # noqa: PLC0415
    from skillward.edge._local import LocalSkillDir  # noqa: PLC0415  (only when given)

    label, sep, path = text.partition("=")
    if not sep or not path:
        raise argparse.ArgumentTypeError(f"expected LABEL=PATH, not {text!r}")
    try:
        return LocalSkillDir(normalise_label(label), Path(path))
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _duration(text: str) -> float:
    from skillward.trust.audit import parse_duration  # noqa: PLC0415  (only when given)

    try:
        return parse_duration(text)
    except UsageError as error:
        raise argparse.ArgumentTypeError(error.message) from None


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"expected seconds between 0 and 3600, not {text!r}")
    return value


# --- the grammar -------------------------------------------------------------------------


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

#: Where options given after the command name land, before :func:`_merge_common`.
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
    with no subcommands of their own."""
    # argparse keeps subcommands in a private list of actions; it has no public walk.
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
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


def _merge_common(args: argparse.Namespace) -> argparse.Namespace:
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
        from skillward._version import __version__  # noqa: PLC0415  (importlib.metadata)

        print(f"skillward {__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The whole grammar: every command, each with the common options."""
    parser = argparse.ArgumentParser(
        prog="skillward",
        description="Security-focused host-side loader for skills served over MCP (SEP-2640).",
        epilog="Exit codes: "
        + "; ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES.items()),
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")

    subparsers.add_parser("list", help="the catalog across origins, with collisions")
    show = subparsers.add_parser(
        "show", help="a skill's entry: frontmatter and files (fetches nothing)"
    )
    show.add_argument("ref", metavar="REF", help="NAME, LABEL:NAME, LABEL:PATH or LABEL:URI")
    load = subparsers.add_parser(
        "load", help="verify and print a skill's activation exactly as the model would get it"
    )
    load.add_argument("ref", metavar="REF")
    load.add_argument(
        "--approve-once",
        action="store_true",
        help="approve loading this one skill now, without a prompt",
    )
    read = subparsers.add_parser(
        "read", help="a supporting file, verified against the skill's entry"
    )
    read.add_argument("ref", metavar="REF")
    read.add_argument("path", metavar="PATH", help="path relative to the skill root")
    approve = subparsers.add_parser(
        "approve",
        help="review a skill and approve it (remembered by default), bound to its content",
    )
    approve.add_argument("ref", metavar="REF")
    approve.add_argument(
        "--scope",
        choices=["once", "session", "remember"],
        default="remember",
        help="with --yes: how long the approval lasts (default: remember)",
    )
    approve.add_argument(
        "--yes",
        action="store_true",
        help="approve without a prompt (you named the skill: that is the consent)",
    )
    approve.add_argument(
        "--grant-tools",
        action="store_true",
        help="grant the tools its allowed-tools requests too, kept with this approval",
    )
    _state_parsers(subparsers)
    _policy_parsers(subparsers)
    subparsers.add_parser(
        "demo",
        help="start the bundled example server, load a skill, and show a tampered read refused",
    )
    _serve_parser(subparsers)
    _check_parser(subparsers)
    return _with_common_options(parser)


def _state_parsers(commands: Any) -> None:
    """``approvals``, ``audit``, ``logs`` and ``cache``: this machine's own state."""
    approvals = commands.add_parser("approvals", help="remembered approvals: list, revoke, reset")
    actions = approvals.add_subparsers(dest="approvals_command", metavar="ACTION", required=True)
    actions.add_parser("list", help="every remembered approval, revoked ones included")
    revoke = actions.add_parser("revoke", help="revoke a remembered approval (it is asked again)")
    revoke.add_argument("ref", metavar="REF", help="LABEL:NAME, LABEL:PATH, LABEL:URI or NAME")
    reset = actions.add_parser(
        "reset", help="forget every remembered approval and use a new key from now on"
    )
    reset.add_argument(
        "--yes", action="store_true", help="do not ask first (at a terminal, it asks)"
    )
    audit = commands.add_parser(
        "audit",
        help="the audit trail: every approval, denial, revocation, grant and gate decision",
    )
    audit.add_argument(
        "--since",
        type=_duration,
        metavar="DURATION",
        help="only events this recent, for example 30m, 12h, 7d or 1h30m",
    )
    logs = commands.add_parser(
        "logs",
        help="what a stdio server wrote to its stderr, escaped",
        description="Print the stderr log of the stdio server labelled LABEL. Every escape "
        "and control character is shown as text (\\x1b), never sent to the terminal.",
    )
    logs.add_argument("label", metavar="LABEL")
    logs.add_argument("--lines", type=_positive_int, metavar="N", help="only the last N lines")
    cache = commands.add_parser("cache", help="the disk cache of verified server files")
    cache_actions = cache.add_subparsers(dest="cache_action", metavar="ACTION", required=True)
    cache_actions.add_parser("list", help="files and bytes kept per server label")
    purge = cache_actions.add_parser("purge", help="remove one label's cached files, or all")
    purge.add_argument("label", nargs="?", metavar="LABEL", help="a server label (default: all)")


def _policy_parsers(commands: Any) -> None:
    """``pin`` and ``policy``: the commands administrators use."""
    pin = commands.add_parser(
        "pin", help="print the [[pins]] block that pre-approves a skill's current content"
    )
    pin.add_argument("ref", metavar="REF")
    policy = commands.add_parser("policy", help="administrator policy: show, check, schema")
    actions = policy.add_subparsers(dest="policy_action", metavar="ACTION", required=True)
    actions.add_parser("show", help="the policy in force, each value with the file it came from")
    check = actions.add_parser(
        "check", help="check policy files before deploying them (exit 1 on any problem)"
    )
    check.add_argument("files", metavar="FILE", nargs="+", type=Path)
    actions.add_parser("schema", help="the JSON Schema of a policy file")


def _serve_parser(commands: Any) -> None:
    serve = commands.add_parser(
        "serve",
        help="serve a directory of skills as a SEP-2640 MCP server",
        description="Serve every skill (a folder holding SKILL.md) under DIR over stdio, "
        "or over streamable HTTP with --http.",
    )
    serve.add_argument(
        "directory",
        metavar="DIR",
        type=Path,
        nargs="?",
        help="skills directory (default: the bundled example skills)",
    )
    serve.add_argument(
        "--http",
        metavar="HOST:PORT",
        type=_host_port,
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )
    serve.add_argument(
        "--page-size",
        type=int,
        default=50,
        metavar="N",
        help="entries per page for paginated methods (default 50)",
    )
    serve.add_argument(
        "--unlisted",
        action="append",
        default=[],
        metavar="SKILL_PATH",
        help="serve this skill but leave it out of skills/list (repeatable)",
    )
    serve.add_argument("--name", default="skillward-serve", help="serverInfo.name to report")
    serve.add_argument(
        "--tamper",
        action="append",
        default=[],
        metavar="URI",
        help="demonstration only: flip one byte when serving URI (repeatable)",
    )


def _check_parser(commands: Any) -> None:
    check = commands.add_parser(
        "check",
        help="audit skills servers against SEP-2640 (for the people who write servers)",
        description="Connect each server named (every configured one if none is) and "
        "report every SEP-2640 rule it breaks (docs/check.md), without approving or "
        "caching anything. Exit 0 when no finding is an error, 1 when one is, 6 when a "
        "server cannot be reached or stops answering within the deadline.",
    )
    check.add_argument("labels", metavar="LABEL", nargs="*", help="servers to check")
    check.add_argument(
        "--format",
        choices=["text", "json", "sarif"],
        help="text (the default), json (as --json) or sarif (SARIF 2.1.0, for code scanning)",
    )
    check.add_argument("--strict", action="store_true", help="warnings fail the check too (exit 1)")
    check.add_argument(
        "--baseline",
        type=Path,
        metavar="FILE",
        help="accept the findings FILE lists; fail on an entry that no longer occurs",
    )
    check.add_argument(
        "--write-baseline",
        type=Path,
        metavar="FILE",
        help="write every finding of this run to FILE, as a baseline",
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """``argv`` as the command reads it, common options merged from both sides."""
    return _merge_common(build_parser().parse_args(argv))


# --- serve -------------------------------------------------------------------------------


def _serve(args: argparse.Namespace) -> int:
    import anyio  # noqa: PLC0415

    from skillward.serve import server  # noqa: PLC0415  (imports mcp; only this command needs it)

    directory = args.directory or server.example_skills_dir()
    if not directory.is_dir():
        raise UsageError(f"{directory} is not a directory")
    # This process only serves, so how it collects garbage is the command's choice.
    # Building the catalog makes many objects and no garbage cycles (a test holds it to
    # that), so the collector stays off while building, and all the process holds is
    # then frozen as it is: the catalog never changes, and a collector scanning it on
    # every full collection while serving would be most of a page's cost. (Importing
    # leaves a few dozen objects of cyclic garbage: not worth a full collection.)
    gc.disable()
    try:
        catalog = server.SkillCatalog.from_directory(directory, unlisted=args.unlisted)
        for problem in catalog.problems:
            print(f"skillward serve: {problem}", file=sys.stderr)
        if not catalog.skills:
            print(f"skillward serve: no servable skills under {directory}", file=sys.stderr)
        mcp_server = server.build_server(
            catalog, name=args.name, page_size=max(1, args.page_size), tamper=args.tamper
        )
    finally:
        gc.freeze()
        gc.enable()
    try:
        if args.http is None:

            async def run_stdio() -> None:
                # Said from inside the event loop, once Ctrl-C is handled by it; stdout
                # carries the protocol, people read stderr.
                print(
                    f"skillward serve: {catalog.summary()} from {directory} over stdio",
                    file=sys.stderr,
                    flush=True,
                )
                await server.serve_stdio(mcp_server)

            anyio.run(run_stdio)
            return EXIT_OK
        host, port = args.http
        server.quiet_transport_logs()

        async def run_http() -> None:
            async with server.serve_http(mcp_server, host=host, port=port) as url:
                print(
                    f"skillward serve: {catalog.summary()} at {url}",
                    file=sys.stderr,
                    flush=True,
                )
                await anyio.sleep_forever()

        anyio.run(run_http)
    except KeyboardInterrupt:
        print("skillward serve: stopped", file=sys.stderr)
    return EXIT_OK


# --- main --------------------------------------------------------------------------------

#: The commands on this machine's own state (``_state.COMMANDS``): no server, no mcp.
STATE_COMMANDS = frozenset({"approvals", "audit", "cache", "logs", "policy"})


class _EscapingFormatter(logging.Formatter):
    """Log lines may quote servers (and the SDK's tracebacks quote their bytes): escape them."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record), limit=4000)


def _configure_logging(debug: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_EscapingFormatter("%(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler], force=True)
    # The SDK logs every request at INFO and server parse failures with tracebacks:
    # the command reports those itself, so the SDK speaks only under --debug.
    for name in ("mcp", "httpx", "httpx2", "uvicorn"):
        logging.getLogger(name).setLevel(logging.WARNING if debug else logging.CRITICAL)
    logging.getLogger("skillward").setLevel(logging.DEBUG if debug else logging.WARNING)


def _output_closed() -> int:
    """The reader of our output went away (``| head``): end quietly, as git does.

    Whatever is still buffered, and Python's own flush at exit, goes to /dev/null.
    """
    from skillward.terminal.prompts import to_devnull  # noqa: PLC0415

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            to_devnull(stream)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    finally:
        # The command is over and its process exits next. The interpreter's last
        # collections would walk every object it still holds (the SDK's: about 0.15 s of
        # every command that connected a server) to free memory the exit frees anyway.
        # Nothing here relies on a finalizer: files are written through descriptors.
        gc.freeze()


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = _merge_common(parser.parse_args(argv))
    _configure_logging(args.debug)
    if args.command is None:
        parser.print_help()
        return EXIT_OK
    terminal: Terminal | None = None
    try:
        # `serve` writes to no terminal but for an error: it starts without rich and the
        # modules a terminal brings (its start-up has a goal, bench/bench_list_stdio.py).
        if args.command == "serve":
            return _serve(args)
        terminal = _terminal(args)
        return _run(args, terminal)
    except SkillwardError as error:
        if args.debug:
            raise
        (terminal or _terminal(args)).error(error)
        return error.exit_code
    except BrokenPipeError:
        return _output_closed()


def _terminal(args: argparse.Namespace) -> Terminal:
    from skillward.terminal.prompts import Terminal  # noqa: PLC0415  (rich: for commands, not --help)

    return Terminal(json_errors=args.json)


def _run(args: argparse.Namespace, terminal: Terminal) -> int:
    # Each command imports only its own part: the state commands never import the host.
    if args.command in STATE_COMMANDS:
        from skillward.cli import _state  # noqa: PLC0415

        return _state.COMMANDS[args.command](args, terminal)
    if args.command == "check":
        from skillward.cli import _check  # noqa: PLC0415  (mcp; approves and caches nothing)

        return _check.run(args, terminal)
    from skillward.cli import _host  # noqa: PLC0415  (the host, and so mcp)

    return _host.run(args, terminal)
