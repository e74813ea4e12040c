"""Ctrl-C for the commands that serve until they are stopped (``serve``, ``gateway``).

SIGINT is taken by the event loop and cancels the serving from there, so the command ends
the same way whenever it arrives: the serving is cancelled, its connections and files are
closed, and the command says it stopped. Left to Python, SIGINT is a KeyboardInterrupt
raised in whatever the main task is awaiting at that moment (or a task cancelled by
asyncio), which a cancel scope closing at the same moment can absorb: the command then
ended silently, or waited on a server that was never told to stop.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable

import anyio


async def until_interrupted(serve: Callable[[], Awaitable[None]]) -> bool:
    """Run ``serve`` until it returns or SIGINT arrives; whether SIGINT ended it. Whatever
    ``serve`` raises is raised as it is."""
    loop = asyncio.get_running_loop()
    interrupted = False
    with anyio.CancelScope() as scope:

        def interrupt() -> None:
            nonlocal interrupted
            interrupted = True
            scope.cancel()

        try:
            loop.add_signal_handler(signal.SIGINT, interrupt)
        except (NotImplementedError, RuntimeError, ValueError):
            # No signal handlers on this loop (Windows) or thread (not the main one): Ctrl-C
            # is Python's KeyboardInterrupt, as the caller also handles.
            await serve()
            return False
        try:
            await serve()
        finally:
            loop.remove_signal_handler(signal.SIGINT)
    return interrupted
