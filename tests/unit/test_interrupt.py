"""Ctrl-C for the serving commands (cli/_interrupt.py): SIGINT cancels the serving and says
so; what the serving raises is raised as it is; off the main thread, serving just runs."""

from __future__ import annotations

import asyncio
import os
import signal
import threading

import anyio
import anyio.lowlevel
import pytest

from skillward.cli._interrupt import until_interrupted

WAIT = 10


def test_sigint_cancels_the_serving_and_says_it_was_interrupted() -> None:
    reached: list[str] = []

    async def serve() -> None:
        reached.append("serving")
        os.kill(os.getpid(), signal.SIGINT)
        await anyio.sleep_forever()

    async def main() -> bool:
        with anyio.fail_after(WAIT):
            return await until_interrupted(serve)

    assert asyncio.run(main()) is True
    assert reached == ["serving"]


def test_serving_that_ends_is_not_an_interruption_and_its_error_is_raised_as_it_is() -> None:
    async def done() -> None:
        await anyio.lowlevel.checkpoint()

    async def broken() -> None:
        raise OSError("the port is taken")

    assert asyncio.run(until_interrupted(done)) is False
    with pytest.raises(OSError, match="the port is taken"):
        asyncio.run(until_interrupted(broken))


def test_off_the_main_thread_the_serving_runs_without_a_handler() -> None:
    results: list[bool] = []

    async def done() -> None:
        await anyio.lowlevel.checkpoint()

    worker = threading.Thread(target=lambda: results.append(asyncio.run(until_interrupted(done))))
    worker.start()
    worker.join(WAIT)
    assert results == [False]
