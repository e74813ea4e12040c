"""A command run in a real pseudo-terminal, its output drawn by a terminal emulator: what
a person would see on the screen, for tests to assert on.

pexpect runs the command in a pty of ``columns`` columns; everything it writes is fed to
a ``pyte`` screen of the same width, as tall as ``history`` lines so that nothing scrolls
away. :meth:`Screen.text` is the screen as drawn: what an escape sequence, a zero-width
or a right-to-left character does to the text is done to it there, as in a terminal.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

import pexpect
import pyte

__all__ = ["Screen", "flat"]


def flat(text: str) -> str:
    """``text`` without its whitespace: what stays of it however the terminal wraps."""
    return "".join(text.split())


def _interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Screen:
    """``argv`` running in a pty, drawn on a pyte screen ``columns`` wide."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        columns: int = 80,
        history: int = 4000,
        timeout: float = 90,
    ) -> None:
        self.child = pexpect.spawn(
            argv[0],
            list(argv[1:]),
            cwd=str(cwd),
            env=dict(env),
            dimensions=(50, columns),
            timeout=timeout,
            encoding="utf-8",
            # As a shell at a terminal starts it: Ctrl-C not ignored, whatever this
            # process inherited (a run in the background ignores it).
            preexec_fn=_interruptible,
        )
        self.screen = pyte.Screen(columns, history)
        self._stream = pyte.Stream(self.screen)

    def expect(self, pattern: str) -> str:
        """Wait for ``pattern`` (a regular expression) in the output; the screen then."""
        self.child.expect(pattern)
        self._stream.feed(str(self.child.before) + str(self.child.after))
        return self.text()

    def send(self, line: str) -> None:
        self.child.sendline(line)

    def finish(self) -> int:
        """Wait for the command to end; its exit status."""
        self.child.expect(pexpect.EOF)
        self._stream.feed(str(self.child.before))
        self.child.close()
        status = self.child.exitstatus
        return -1 if status is None else status

    def text(self) -> str:
        """The screen as drawn, each line's trailing blanks dropped."""
        return "\n".join(line.rstrip() for line in self.screen.display).rstrip()
