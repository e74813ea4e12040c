"""The garbage collector is held off while a listing is built, and given back as found.

A listing's entries all live on, so each collection that starts while they are built
walks them for nothing; these tests count collections with ``gc.callbacks``.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from skillward.core._collector import collector_paused
from skillward.core.config import Limits
from skillward.core.wire import parse_skills_page
from skillward.edge._paging import Budget, walk_listing
from tests.support.collector import collections, raw_entry
from tests.support.listings import paged

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def collector_enabled() -> Iterator[None]:
    """Each test starts with the collector on, and leaves it as it found it."""
    was = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        (gc.enable if was else gc.disable)()


def test_the_collector_is_off_inside_a_pause_and_on_again_after() -> None:
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_pause_ended_by_an_error_gives_the_collector_back() -> None:
    with pytest.raises(KeyError), collector_paused():
        raise KeyError("x")
    assert gc.isenabled()


def test_a_host_that_turned_the_collector_off_keeps_it_off() -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_pauses_nest_and_the_collector_resumes_when_the_last_ends() -> None:
    with collector_paused():
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_pauses_held_by_two_threads_end_in_either_order() -> None:
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with collector_paused():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second() -> None:
        first_in.wait(10)
        with collector_paused():
            second_in.set()
            first_out.wait(10)
            seen.append(gc.isenabled())  # the first thread's pause ended: still paused

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert seen == [False]
    assert gc.isenabled()


def test_parsing_a_page_starts_no_collection_while_its_entries_are_built() -> None:
    page = {"skills": [raw_entry(index) for index in range(3000)]}
    parse_skills_page({"skills": [raw_entry(0)]})  # the models' validators built, once
    gc.collect()  # and no count left over from making the page
    with collections() as started:
        parsed = parse_skills_page(page, server="acme")
    assert len(parsed.entries) == 3000
    # At most the one the first allocation after the pause starts; built with the
    # collector on, 3,000 entries of six objects each start about twenty-five.
    assert len(started) <= 1


async def test_a_listing_walk_starts_at_most_one_collection_a_page() -> None:
    pages = paged([raw_entry(index) for index in range(6000)], 1500)

    async def fetch(cursor: str | None, spent: Budget) -> dict[str, Any]:
        await anyio.lowlevel.checkpoint()
        return pages[int(cursor or 0)]

    gc.collect()
    with anyio.fail_after(30), collections() as started:
        listing = await walk_listing(fetch, Limits(), "acme")
    assert len(listing.entries) == 6000
    # Built with the collector on, 6,000 entries of six objects each start about fifty.
    assert len(started) <= len(pages)
    assert gc.isenabled()


@pytest.mark.threat("T11")
async def test_a_cancelled_listing_walk_gives_the_collector_back() -> None:
    built = anyio.Event()
    pages = [{"skills": [raw_entry(index) for index in range(1000)], "nextCursor": "1"}]

    async def fetch(cursor: str | None, spent: Budget) -> dict[str, Any]:
        if cursor is not None:
            built.set()
            await anyio.sleep_forever()
        return pages[0]

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(walk_listing, fetch, Limits(), "acme")
            await built.wait()
            while gc.isenabled():  # until the page is being built
                await anyio.lowlevel.checkpoint()
            tasks.cancel_scope.cancel()
    assert gc.isenabled()


def _refused(index: int) -> dict[str, Any]:
    """An entry broken in one of several ways, each refused on its own path."""
    entry = raw_entry(index)
    broken = index % 6
    if broken == 0:
        entry["frontmatter"]["name"] = "Not-A-Name"
    elif broken == 1:
        entry["resources"][0]["digest"] = "md5:1"
    elif broken == 2:
        entry["uri"] = "skill://acme/../b/SKILL.md"
    elif broken == 3:
        entry["resources"] = None
    elif broken == 4:
        entry["frontmatter"]["nested"] = [[[]]] * 3
    else:
        entry["resources"].append({"uri": "skill://elsewhere/x", "digest": "sha256:", "size": 1})
    return entry


@pytest.mark.threat("T11")
def test_refusing_a_pages_entries_leaves_no_cycles_for_the_held_off_collector() -> None:
    # What a hostile server would try: a page whose every entry is refused, each refusal
    # an exception with a traceback, made while the collector is held off. Anything in
    # a cycle would wait for the collector; nothing is.
    page = {"skills": [_refused(index) for index in range(3000)]}
    parse_skills_page({"skills": [_refused(index) for index in range(12)]})
    gc.collect()
    gc.disable()
    parsed = parse_skills_page(page, server="acme")
    assert len(parsed.rejected) == 2500  # the nested frontmatter is accepted
    assert gc.collect() == 0
