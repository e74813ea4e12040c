"""What the command line prints of a log record: one escaped line; a traceback only under
``--debug``, each of its lines escaped."""

from __future__ import annotations

import logging
import sys

from skillward.cli._main import _EscapingFormatter


def failure() -> logging.LogRecord:
    """A record logged with its exception, whose text a server could have written."""
    try:
        raise RuntimeError("read() called while\nanother \x1b[2J coroutine waits")
    except RuntimeError:
        exc_info = sys.exc_info()
    message = "stopping the server process of %r failed"
    return logging.LogRecord("skillward", logging.ERROR, __file__, 1, message, ("bad",), exc_info)


def test_a_failure_logged_with_its_traceback_is_one_clear_line_naming_its_kind() -> None:
    text = _EscapingFormatter(debug=False).format(failure())
    assert text == (
        "skillward: stopping the server process of 'bad' failed (RuntimeError; --debug shows more)"
    )


def test_under_debug_the_traceback_follows_on_lines_of_its_own_each_escaped() -> None:
    lines = _EscapingFormatter(debug=True).format(failure()).splitlines()
    assert lines[0] == "skillward: stopping the server process of 'bad' failed"
    assert lines[1] == "Traceback (most recent call last):"
    assert lines[-2:] == ["RuntimeError: read() called while", "another \\x1b[2J coroutine waits"]


def test_server_text_in_a_message_stays_on_its_one_line_escaped() -> None:
    record = logging.LogRecord(
        "skillward", logging.WARNING, __file__, 1, "server said %s", ("a\nb\x1b[2J",), None
    )
    assert _EscapingFormatter(debug=False).format(record) == "skillward: server said a\\nb\\x1b[2J"
