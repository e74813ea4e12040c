"""The client edge's bounds on what a server pages through: a walk's :class:`Budget`, each
page held to the Limits before anything is built from it, and the walks of
``skills/list`` and ``resources/directory/read`` page after page.

Imports no ``mcp``: the requests are made by :class:`~skillward.edge.client.SkillsClient`,
which hands each walk the function that fetches one page.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.abc
import anyio.lowlevel
from pydantic import ValidationError

from skillward.core._collector import collector_paused
from skillward.core._fields import DIR_SHAPE, LIST_CURSOR, json_size
from skillward.core._results import cursor_problem
from skillward.core.config import Limits
from skillward.core.errors import (
    InvalidEntry,
    InvalidResponse,
    ListingRunaway,
    ResponseTooLarge,
    SkillTooLarge,
)
from skillward.core.wire import (
    DirectoryChild,
    DirectoryReadResult,
    ListSkillsResult,
    SkillEntry,
    SkillsPage,
    parse_entries,
    read_skills_result,
)

__all__ = [
    "Budget",
    "Measured",
    "SkillListing",
    "check_bytes",
    "check_cursor",
    "check_directory_page",
    "check_page",
    "first_problem",
    "take_page",
    "walk_directory",
    "walk_listing",
]

_Paged = TypeVar("_Paged", SkillsPage, ListSkillsResult)

# The rules of docs/check.md the client edge enforces (see skillward.core.rules).
WIRE_CAPS = "SW-WIRE-001"
LIST_PAGINATION = "SW-LIST-002"
LIST_BOUNDS = "SW-LIST-009"
DIR_PAGINATION = "SW-DIR-008"


class Measured(dict[str, Any]):
    """A result as the transport received it, with the size in bytes of the message that
    carried it: measured while it was read, so the bounds on it need not walk it again.
    Only the transport makes one; a server can send nothing that becomes one."""

    __slots__ = ("size",)

    def __init__(self, result: dict[str, Any], size: int) -> None:
        super().__init__(result)
        self.size = size


@dataclass(slots=True)
class Budget:
    """What one listing walk has taken so far, held against the Limits."""

    bytes: int = 0
    entries: int = 0
    files: int = 0
    pages: int = 0


@dataclass(frozen=True, slots=True)
class SkillListing:
    """A whole ``skills/list`` walk: valid entries, refused ones, and the first page's hints."""

    entries: tuple[SkillEntry, ...]
    rejected: tuple[InvalidEntry | SkillTooLarge, ...]
    pages: int
    ttl_ms: int | None
    cache_scope: str | None


def take_page(budget: Budget, limits: Limits, what: str, rule: str) -> None:
    """Count one more page of the walk ``budget`` holds; refuse it past the page limit.
    ``what``: the walk, for the message (``the listing``)."""
    if budget.pages >= limits.max_list_pages:
        raise ListingRunaway(f"{what} did not end within {limits.max_list_pages} pages", rule=rule)
    budget.pages += 1


def check_page(raw: dict[str, Any], spent: Budget, limits: Limits) -> None:
    """Refuse a ``skills/list`` page past the listing bounds before validating a single
    entry of it.

    The transport has already held the message to ``Limits.message_bytes`` and
    ``max_message_nodes`` and parsed it; what is bounded here is everything built
    from it and kept.
    """
    skills = raw.get("skills")
    if isinstance(skills, list):  # if not, parse_skills_page says what is wrong
        # Cheapest first: counting entries, then files, then walking for the bytes.
        spent.entries += len(skills)
        if spent.entries > limits.max_list_entries:
            raise ListingRunaway(
                f"the listing has more than {limits.max_list_entries} entries",
                rule=LIST_BOUNDS,
            )
        spent.files += sum(
            len(resources)
            for skill in skills
            if isinstance(skill, dict) and isinstance(resources := skill.get("resources"), list)
        )
        if spent.files > limits.max_listed_files:
            raise ListingRunaway(
                f"the listing has more than {limits.max_listed_files} files",
                rule=LIST_BOUNDS,
            )
    walk = ("listing", limits.max_listing_bytes)
    check_bytes(raw, "skills/list", limits.max_list_response_bytes, spent, walk, rule=LIST_BOUNDS)


def check_cursor(page: _Paged) -> _Paged:
    """``page``, unless its ``nextCursor`` is longer than a cursor may be."""
    too_long = None if page.next_cursor is None else cursor_problem(page.next_cursor)
    if too_long is not None:
        raise InvalidResponse(too_long, rule=LIST_CURSOR)
    return page


def check_bytes(
    raw: dict[str, Any],
    method: str,
    cap: int,
    spent: Budget | None = None,
    walk: tuple[str, int] | None = None,
    *,
    rule: str = WIRE_CAPS,
) -> None:
    """Refuse one ``method`` result above ``cap`` bytes, or one that takes the walk it is
    part of (``spent`` so far; its name and cap) past its cap, measured as JSON before
    anything is built (by the transport, as it read the message, when it could).
    ``rule``: the rule of docs/check.md the server broke."""
    size = raw.size if isinstance(raw, Measured) else json_size(raw, limit=cap)
    if size > cap:
        raise ResponseTooLarge(f"a {method} result is larger than {cap} bytes", rule=rule)
    if spent is not None and walk is not None:
        name, most = walk
        spent.bytes += size
        if spent.bytes > most:
            raise ListingRunaway(f"the {name} is larger than {most} bytes", rule=rule)


def check_directory_page(
    raw: dict[str, Any], spent: Budget, children: int, limits: Limits
) -> dict[str, Any]:
    """``raw``, a ``resources/directory/read`` page, unless it takes the directory past its
    bounds (``children`` collected so far)."""
    resources = raw.get("resources")
    if isinstance(resources, list) and (children + len(resources) > limits.max_directory_entries):
        raise ListingRunaway(
            f"the directory has more than {limits.max_directory_entries} entries",
            rule=DIR_PAGINATION,
        )
    check_bytes(
        raw,
        "resources/directory/read",
        limits.max_directory_response_bytes,
        spent,
        ("directory listing", limits.max_directory_bytes),
        rule=DIR_PAGINATION,
    )
    return raw


#: Entries built between two checkpoints of a listing walk: short enough that the request
#: ahead goes out, and the transport reads its answer, while a page is being built.
_BATCH = 50


@dataclass(slots=True)
class _Ahead:
    """The one request of a listing walk in flight ahead of it."""

    done: anyio.Event = field(default_factory=anyio.Event)
    raw: dict[str, Any] | None = None


class _ListingWalk:
    """One ``skills/list`` walk, a page ahead: see :func:`walk_listing`."""

    def __init__(
        self,
        fetch: Callable[[str | None, Budget], Awaitable[dict[str, Any]]],
        limits: Limits,
        server: str | None,
    ) -> None:
        self._fetch = fetch
        self._limits = limits
        self._server = server
        self._spent = Budget()
        self._entries: list[SkillEntry] = []
        self._rejected: list[InvalidEntry | SkillTooLarge] = []
        #: The first error of either side: the walk's own, or the request ahead's.
        self._failed: Exception | None = None

    async def run(self) -> SkillListing:
        async with anyio.create_task_group() as tasks:
            try:
                listing = await self._walk(tasks)
            except Exception as error:
                # Raised below, once the request ahead is cancelled: never in a group.
                self._fail(error, tasks.cancel_scope)
        if self._failed is not None:
            raise self._failed
        return listing

    async def _walk(self, tasks: anyio.abc.TaskGroup) -> SkillListing:
        limits = self._limits
        seen: set[str] = set()
        raw: dict[str, Any] | None = await self._fetch(None, self._spent)
        pages = 1
        hints: tuple[int | None, str | None] | None = None  # the first page's
        while raw is not None:
            result = check_cursor(read_skills_result(raw, server=self._server))
            # The page is held as its entries alone, each only until it is built.
            skills = list(result.skills)
            raw = None
            hints = hints or (result.ttl_ms, result.cache_scope)
            cursor = result.next_cursor or None
            del result
            ahead: _Ahead | None = None
            if cursor is not None:
                if cursor in seen:
                    raise ListingRunaway("the listing repeated a cursor", rule=LIST_PAGINATION)
                seen.add(cursor)
                if pages >= limits.max_list_pages:
                    raise ListingRunaway(
                        f"the listing did not end within {limits.max_list_pages} pages",
                        rule=LIST_PAGINATION,
                    )
                pages += 1
                ahead = _Ahead()
                tasks.start_soon(self._ask, ahead, cursor, tasks.cancel_scope)
            await self._build(skills)
            if ahead is not None:
                # A failure ahead cancels this walk (and run raises it) before it ends here.
                await ahead.done.wait()
                raw = ahead.raw
        assert hints is not None
        return SkillListing(
            entries=tuple(self._entries),
            rejected=tuple(self._rejected),
            pages=pages,
            ttl_ms=hints[0],
            cache_scope=hints[1],
        )

    async def _ask(self, ahead: _Ahead, cursor: str, walk: anyio.CancelScope) -> None:
        """The next page, held to the listing's bounds as it arrives; a failure ends
        the walk at once, the page being built included."""
        try:
            ahead.raw = await self._fetch(cursor, self._spent)
        except Exception as error:
            self._fail(error, walk)
        finally:
            ahead.done.set()

    def _fail(self, error: Exception, walk: anyio.CancelScope) -> None:
        if self._failed is None:
            self._failed = error
        walk.cancel()

    async def _build(self, skills: list[Any]) -> None:
        """A page's entries, built a batch at a time and taken out of ``skills`` (so the
        raw entries go as they are built), letting the request ahead proceed (and a
        deadline fire) between batches. The first batches are small: the request takes a
        few turns of the event loop to reach the server (four over stdio), and should be
        on its way before most of the page is built."""
        await anyio.lowlevel.checkpoint()
        size = 1
        # The collector is held off while the page is built, not while the walk waits
        # on the server (core/_collector.py says why).
        with collector_paused():
            while skills:
                batch = skills[:size]
                del skills[:size]
                parse_entries(
                    batch, self._entries, self._rejected, server=self._server, limits=self._limits
                )
                size = min(2 * size, _BATCH)
                await anyio.lowlevel.checkpoint()


async def walk_listing(
    fetch: Callable[[str | None, Budget], Awaitable[dict[str, Any]]],
    limits: Limits,
    server: str | None = None,
) -> SkillListing:
    """Every ``skills/list`` page, each fetched by ``fetch`` (which holds it to the
    listing's bounds with :func:`check_page`), within the bounds.

    One request is in flight ahead of the walk: as soon as a page's cursor is read (its
    bounds checked by ``fetch``, its cursor's length, repeats and the page bound here),
    the next page is asked for, and this page's entries are built while the server
    answers. So at most two pages are held at once, one being built and one arriving. A
    failure of either ends both, and is raised as it is (never in an exception group);
    the request ahead is cancelled with the walk.
    """
    return await _ListingWalk(fetch, limits, server).run()


async def walk_directory(
    page_of: Callable[[str | None, Budget, int], Awaitable[dict[str, Any]]], limits: Limits
) -> tuple[DirectoryChild, ...]:
    """Every ``resources/directory/read`` page, each fetched by ``page_of``, within the
    bounds."""
    children: list[DirectoryChild] = []
    seen: set[str] = set()
    cursor: str | None = None
    spent = Budget()
    for _ in range(limits.max_list_pages):
        await anyio.lowlevel.checkpoint()
        raw = await page_of(cursor, spent, len(children))
        try:
            page = DirectoryReadResult.model_validate(raw, context={"limits": limits})
        except ValidationError as exc:
            raise InvalidResponse(
                f"invalid resources/directory/read result: {first_problem(exc)}",
                rule=DIR_SHAPE,
            ) from None
        children.extend(page.resources)
        cursor = page.next_cursor or None
        if cursor is None:
            return tuple(children)
        if cursor in seen:
            raise ListingRunaway("the directory listing repeated a cursor", rule=DIR_PAGINATION)
        too_long = cursor_problem(cursor)
        if too_long is not None:
            raise ListingRunaway(f"the directory listing's {too_long}", rule=DIR_PAGINATION)
        seen.add(cursor)
    raise ListingRunaway(
        f"the directory listing did not end within {limits.max_list_pages} pages",
        rule=DIR_PAGINATION,
    )


def first_problem(error: ValidationError) -> str:
    detail = error.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in detail["loc"])
    return f"{where}: {detail['msg']}" if where else str(detail["msg"])
