"""``skillward``: parse, set up logging, run the command, and turn errors into exit codes.

Exit codes: 0 success, 1 problems found by ``policy check``, 2 usage (or a reference
that does not resolve), 3 approval required or denied, 4 verification failed, 5 policy
denied, 6 server or transport error, 7 an audit trail that is not intact
(``_context.EXIT_CODES``).
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from skillward.cli._context import EXIT_INTERRUPTED, EXIT_OK, close_trails
from skillward.cli._parser import build_parser, merge_common
from skillward.core.errors import SkillwardError, printable

if TYPE_CHECKING:
    from skillward.cli._context import Run
    from skillward.terminal.prompts import Terminal

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    finally:
        close_trails()
        # The command is over and its process exits next. The interpreter's last
        # collections would walk every object it still holds (the SDK's: about 0.15 s of
        # every command that connected a server) to free memory the exit frees anyway.
        # Nothing here relies on a finalizer: files are written through descriptors.
        gc.freeze()


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = merge_common(parser.parse_args(argv))
    _configure_logging(args.debug)
    if args.command is None:
        parser.print_help()
        return EXIT_OK
    # What runs the command: its parser's default (``_context.add_command``).
    serve: Callable[[argparse.Namespace], int] | None = args.serve
    run: Run = args.run
    terminal: Terminal | None = None
    try:
        if serve is not None:
            return serve(args)
        terminal = _terminal(args)
        return run(args, terminal)
    except SkillwardError as error:
        if args.debug:
            raise
        (terminal or _terminal(args)).error(error)
        return error.exit_code
    except BrokenPipeError:
        return _output_closed()
    except KeyboardInterrupt:
        # Ctrl-C, at a prompt or anywhere: what was not answered is not approved.
        if serve is not None or args.debug:
            raise
        said = terminal or _terminal(args)
        said.err.print()  # off the line the question was on
        said.note("interrupted: nothing more was done")
        return EXIT_INTERRUPTED


def _terminal(args: argparse.Namespace) -> Terminal:
    from skillward.terminal.prompts import Terminal  # rich: for commands, not --help

    return Terminal(json_errors=args.json, command_line=True)


class _EscapingFormatter(logging.Formatter):
    """One line a record, escaped: log lines may quote servers (and the SDK's tracebacks
    quote their bytes). A record's traceback is shown under ``--debug`` only, each of its
    lines escaped on a line of its own; otherwise the exception is named by its type."""

    def __init__(self, *, debug: bool) -> None:
        super().__init__("%(name)s: %(message)s")
        self.debug = debug

    def format(self, record: logging.LogRecord) -> str:
        record.message = record.getMessage()
        line = printable(self.formatMessage(record), limit=4000)
        if not record.exc_info or record.exc_info[1] is None:
            return line
        if not self.debug:
            return f"{line} ({type(record.exc_info[1]).__name__}; --debug shows more)"
        trace = self.formatException(record.exc_info).splitlines()
        return "\n".join([line, *(printable(part, limit=4000) for part in trace)])


def _configure_logging(debug: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_EscapingFormatter(debug=debug))
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
    from skillward.terminal._render import to_devnull

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            to_devnull(stream)
    return EXIT_OK
