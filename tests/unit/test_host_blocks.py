"""SkillHost builds blocks of large content off the event loop (threat T21)."""

from __future__ import annotations

import threading

import pytest

from skillward.core.context import ContextBlock, file_block
from skillward.core.origins import Origin
from skillward.host._fetch import off_loop

pytestmark = [pytest.mark.anyio, pytest.mark.threat("T21")]

ACME = Origin("mcp", "acme")


async def build_on(data: bytes) -> tuple[int, ContextBlock]:
    threads: list[int] = []

    def build(**fields: object) -> ContextBlock:
        threads.append(threading.get_ident())
        return file_block(**fields)  # type: ignore[arg-type]

    block = await off_loop(build)(
        origin=ACME, uri="skill://a/f", digest=None, data=data, verified=False
    )
    return threads[0], block


async def test_a_block_of_large_content_is_built_in_a_worker_thread() -> None:
    thread, block = await build_on(b"\x01" * (1 << 20))
    assert thread != threading.get_ident()
    assert block.encoding == "base64"  # built all the same


async def test_a_block_of_small_content_is_built_in_place() -> None:
    thread, block = await build_on(b"small\n")
    assert thread == threading.get_ident()
    assert block.content == "small\n"
