"""A prompt waiting for an answer while Ctrl-C reaches another thread of the process (the
kernel gives a process's signal to any thread that does not block it: a child watcher's,
a worker's). Prints ``interrupted`` once the wait ends.

Run as ``python -m tests.support.interrupt_elsewhere``.
"""

from __future__ import annotations

import os
import signal
import threading

import anyio

from skillward.terminal.prompts import _typed


def main() -> None:
    # As a process started at a terminal has it, whatever this one inherited.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    quiet, _ = os.pipe()  # nobody ever answers
    reading = threading.Event()

    def read() -> str:
        reading.set()
        return os.read(quiet, 1).decode()

    def elsewhere() -> None:
        reading.wait()
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)

    async def ask() -> None:
        threading.Thread(target=elsewhere, daemon=True).start()
        await _typed(read)

    try:
        anyio.run(ask)
    except KeyboardInterrupt:
        print("interrupted")


if __name__ == "__main__":
    main()
