"""The client edge against hostile servers: each misbehaviour gets a typed error in bound."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from skillward.core._fields import EXTENSION_ID
from skillward.core.config import Limits
from skillward.core.errors import (
    CapabilityMissing,
    DeadlineExceeded,
    InvalidResponse,
    ListingRunaway,
    ResponseTooLarge,
    ServerRejected,
)
from skillward.edge._contents import exact_bytes
from skillward.edge.client import SkillsClient
from skillward.edge.servers import InMemoryTransport, ServerSpec

pytestmark = [pytest.mark.anyio, pytest.mark.threat("T11")]

DIGEST = "sha256:" + "0" * 64
Handler = Callable[[ServerRequestContext[Any, Any], Any], Awaitable[Any]]


class ListParams(types.RequestParams):
    cursor: str | None = None


class UriParams(types.RequestParams):
    uri: str
    cursor: str | None = None


def entry(i: int) -> dict[str, Any]:
    uri = f"skill://s{i}/SKILL.md"
    return {
        "uri": uri,
        "frontmatter": {"name": f"s{i}", "description": "d"},
        "resources": [{"uri": uri, "digest": DIGEST, "size": 1}],
    }


async def _no_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[])


def hostile(
    *,
    skills_list: Handler | None = None,
    skills_get: Handler | None = None,
    directory: Handler | None = None,
    read: Handler | None = None,
    resources: bool = True,
    directory_read: bool = True,
) -> ServerSpec:
    server: Server[Any] = Server(
        "hostile",
        on_list_resources=_no_resources if resources else None,
        on_read_resource=read,
    )
    server.extensions[EXTENSION_ID] = {"directoryRead": directory_read}
    if skills_list:
        server.add_request_handler("skills/list", ListParams, skills_list)
    if skills_get:
        server.add_request_handler("skills/get", UriParams, skills_get)
    if directory:
        server.add_request_handler("resources/directory/read", UriParams, directory)
    return ServerSpec(label="hostile", transport=InMemoryTransport(server=server))


async def stall(ctx: Any, params: Any) -> Any:
    await anyio.Event().wait()  # never set: the server stalls forever


async def expect(
    error: type[Exception],
    spec: ServerSpec,
    call: Callable[[SkillsClient], Awaitable[Any]],
    *,
    limits: Limits | None = None,
    within: float = 5.0,
) -> Exception:
    with anyio.fail_after(within):
        async with SkillsClient.connect(spec, limits=limits) as client:
            with pytest.raises(error) as info:
                await call(client)
    assert info.value.server == "hostile"  # type: ignore[attr-defined]
    return info.value


async def test_a_cursor_that_loops_is_refused() -> None:
    async def loop(ctx: Any, params: ListParams) -> dict[str, Any]:
        return {"skills": [entry(0)], "nextCursor": "again"}

    await expect(ListingRunaway, hostile(skills_list=loop), lambda c: c.list_skills())


async def test_cursors_that_never_end_stop_at_the_page_bound() -> None:
    async def endless(ctx: Any, params: ListParams) -> dict[str, Any]:
        page = int(params.cursor or 0)
        return {"skills": [], "nextCursor": str(page + 1)}

    error = await expect(
        ListingRunaway,
        hostile(skills_list=endless),
        lambda c: c.list_skills(),
        limits=Limits(max_list_pages=20),
    )
    assert "20 pages" in str(error)


async def test_one_page_of_100000_entries_is_refused_before_validation() -> None:
    many = [entry(0)] * 100_000

    async def flood(ctx: Any, params: ListParams) -> dict[str, Any]:
        return {"skills": many}

    await expect(ListingRunaway, hostile(skills_list=flood), lambda c: c.list_skills(), within=20)


async def test_100000_entries_across_pages_are_refused_at_the_entry_bound() -> None:
    page = [entry(i) for i in range(1000)]

    async def paged(ctx: Any, params: ListParams) -> dict[str, Any]:
        n = int(params.cursor or 0)
        return {"skills": page, "nextCursor": str(n + 1) if n < 99 else None}

    error = await expect(
        ListingRunaway,
        hostile(skills_list=paged),
        lambda c: c.list_skills(),
        limits=Limits(max_list_entries=5000),
        within=20,
    )
    assert "5000 entries" in str(error)


def big_entry(i: int, files: int = 512) -> dict[str, Any]:
    root = f"skill://s{i}"
    resources = [{"uri": f"{root}/SKILL.md", "digest": DIGEST, "size": 1}]
    resources += [{"uri": f"{root}/f{n}", "digest": DIGEST, "size": 1} for n in range(files - 1)]
    return {**entry(i), "resources": resources}


async def test_a_result_past_the_response_cap_is_refused_before_its_entries_are_built() -> None:
    page = [big_entry(i) for i in range(40)]  # about 3 MB as JSON

    async def bulky(ctx: Any, params: ListParams) -> dict[str, Any]:
        return {"skills": page}

    error = await expect(ResponseTooLarge, hostile(skills_list=bulky), lambda c: c.list_skills())
    assert "2097152 bytes" in str(error)


async def test_pages_past_the_listing_byte_cap_are_refused() -> None:
    page = [{**entry(i), "future": "x" * 50_000} for i in range(20)]  # 1 MB a page

    async def paged(ctx: Any, params: ListParams) -> dict[str, Any]:
        n = int(params.cursor or 0)
        return {"skills": page, "nextCursor": str(n + 1)}

    error = await expect(ListingRunaway, hostile(skills_list=paged), lambda c: c.list_skills())
    assert "12582912 bytes" in str(error)


async def test_files_over_all_entries_are_capped_per_server() -> None:
    async def paged(ctx: Any, params: ListParams) -> dict[str, Any]:
        n = int(params.cursor or 0)
        return {"skills": [big_entry(n)], "nextCursor": str(n + 1)}

    error = await expect(
        ListingRunaway,
        hostile(skills_list=paged),
        lambda c: c.list_skills(),
        limits=Limits(max_listed_files=5000),
    )
    assert "5000 files" in str(error)


async def test_a_single_page_is_held_to_the_same_caps() -> None:
    async def bulky(ctx: Any, params: ListParams) -> dict[str, Any]:
        return {"skills": [big_entry(i) for i in range(11)]}

    await expect(
        ListingRunaway,
        hostile(skills_list=bulky),
        lambda c: c.list_skills_page(),
        limits=Limits(max_listed_files=5000),
    )


async def test_a_stalling_listing_hits_the_overall_deadline() -> None:
    await expect(
        DeadlineExceeded,
        hostile(skills_list=stall),
        lambda c: c.list_skills(),
        limits=Limits(operation_timeout=0.5),
    )


async def test_a_listing_that_never_ends_hits_one_overall_deadline() -> None:
    # Every page answers at once, so no single request times out; only the overall
    # deadline on the walk ends it (the page bound is set out of the way).
    async def endless(ctx: Any, params: ListParams) -> dict[str, Any]:
        return {"skills": [], "nextCursor": str(int(params.cursor or 0) + 1)}

    await expect(
        DeadlineExceeded,
        hostile(skills_list=endless),
        lambda c: c.list_skills(),
        limits=Limits(operation_timeout=0.5, max_list_pages=10**9),
    )


async def test_a_stalling_read_hits_the_overall_deadline() -> None:
    await expect(
        DeadlineExceeded,
        hostile(read=stall),
        lambda c: c.read_resource("skill://s0/SKILL.md"),
        limits=Limits(operation_timeout=0.5),
    )


async def test_a_blob_larger_than_the_cap_is_refused_before_decoding() -> None:
    async def big(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        blob = base64.b64encode(b"\x00" * 4096).decode()
        return types.ReadResourceResult(
            contents=[types.BlobResourceContents(uri=params.uri, blob=blob)]
        )

    await expect(
        ResponseTooLarge,
        hostile(read=big),
        lambda c: c.read_resource("skill://s0/a.bin"),
        limits=Limits(max_resource_bytes=1024),
    )


async def test_text_larger_than_the_callers_cap_is_refused() -> None:
    async def big(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, text="é" * 600)]
        )

    await expect(
        ResponseTooLarge,
        hostile(read=big),
        lambda c: c.read_resource("skill://s0/a.md", max_bytes=1000),
    )


@pytest.mark.parametrize("blob", ["not base64!", "AAA", "AA=A"])
async def test_malformed_base64_is_an_invalid_response(blob: str) -> None:
    async def bad(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return types.ReadResourceResult(
            contents=[types.BlobResourceContents(uri=params.uri, blob=blob)]
        )

    await expect(InvalidResponse, hostile(read=bad), lambda c: c.read_resource("skill://s0/a"))


async def test_content_for_a_different_uri_is_an_invalid_response() -> None:
    async def other(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri="skill://other/SKILL.md", text="x")]
        )

    await expect(InvalidResponse, hostile(read=other), lambda c: c.read_resource("skill://s0/a"))


async def test_extension_without_resources_capability_is_refused() -> None:
    async def fine(ctx: Any, params: ListParams) -> dict[str, Any]:
        return {"skills": []}

    spec = hostile(skills_list=fine, resources=False)
    await expect(CapabilityMissing, spec, lambda c: c.list_skills())
    await expect(CapabilityMissing, spec, lambda c: c.get_skill("skill://s0/SKILL.md"))


async def test_directory_read_needs_the_directory_read_setting() -> None:
    spec = hostile(directory=stall, directory_read=False)
    await expect(CapabilityMissing, spec, lambda c: c.read_directory("skill://s0"))


async def test_a_directory_cursor_loop_is_refused() -> None:
    async def loop(ctx: Any, params: UriParams) -> dict[str, Any]:
        return {"resources": [], "nextCursor": "same"}

    await expect(ListingRunaway, hostile(directory=loop), lambda c: c.read_directory("skill://s0"))


def child(i: int, name: str = "f") -> dict[str, Any]:
    return {"uri": f"skill://s0/{i}", "name": name, "mimeType": "text/plain"}


async def test_a_directory_page_larger_than_the_response_cap_is_refused_before_validation() -> None:
    huge = "x" * (4 * 1024 * 1024)

    async def bloated(ctx: Any, params: UriParams) -> dict[str, Any]:
        return {"resources": [child(0, huge)]}

    error = await expect(
        ResponseTooLarge, hostile(directory=bloated), lambda c: c.read_directory("skill://s0")
    )
    assert "resources/directory/read" in str(error)


async def test_directory_pages_larger_together_than_the_walk_cap_are_refused() -> None:
    page = [child(i, "n" * 10_000) for i in range(20)]

    async def paged(ctx: Any, params: UriParams) -> dict[str, Any]:
        n = int(params.cursor or 0)
        return {"resources": page, "nextCursor": str(n + 1) if n < 99 else None}

    error = await expect(
        ListingRunaway,
        hostile(directory=paged),
        lambda c: c.read_directory("skill://s0"),
        limits=Limits(max_directory_bytes=1024 * 1024),
        within=20,
    )
    assert "directory listing is larger than 1048576 bytes" in str(error)


async def test_directory_pages_have_byte_caps_of_their_own() -> None:
    async def bloated(ctx: Any, params: UriParams) -> dict[str, Any]:
        return {"resources": [child(0, "n" * 300_000)]}

    # Under the listing's caps, over the directory's: the directory's apply.
    limits = Limits(max_directory_response_bytes=256 * 1024)
    assert limits.max_list_response_bytes > 300_000
    error = await expect(
        ResponseTooLarge,
        hostile(directory=bloated),
        lambda c: c.read_directory("skill://s0"),
        limits=limits,
    )
    assert "resources/directory/read result is larger than 262144 bytes" in str(error)


async def test_a_skills_get_result_past_its_cap_is_refused_before_its_entry_is_built() -> None:
    async def bloated(ctx: Any, params: UriParams) -> dict[str, Any]:
        skill = entry(0)
        skill["padding"] = ["x" * 1000] * 3000  # an unknown field, 3 MB
        return {"skill": skill}

    error = await expect(
        ResponseTooLarge, hostile(skills_get=bloated), lambda c: c.get_skill("skill://s0/SKILL.md")
    )
    assert "skills/get result is larger than 2097152 bytes" in str(error)


async def test_a_directory_child_with_an_overlong_uri_is_an_invalid_response() -> None:
    async def long_uri(ctx: Any, params: UriParams) -> dict[str, Any]:
        return {"resources": [{"uri": "skill://s0/" + "a" * 3000, "name": "a"}]}

    error = await expect(
        InvalidResponse, hostile(directory=long_uri), lambda c: c.read_directory("skill://s0")
    )
    assert "2048 characters" in str(error)


async def test_a_directory_within_every_bound_is_read_whole() -> None:
    async def paged(ctx: Any, params: UriParams) -> dict[str, Any]:
        n = int(params.cursor or 0)
        return {"resources": [child(n)], "nextCursor": str(n + 1) if n < 2 else None}

    with anyio.fail_after(5):
        async with SkillsClient.connect(hostile(directory=paged)) as client:
            children = await client.read_directory("skill://s0")
    assert [c.uri for c in children] == [f"skill://s0/{i}" for i in range(3)]


async def test_get_answering_for_another_skill_is_an_invalid_response() -> None:
    async def swap(ctx: Any, params: UriParams) -> dict[str, Any]:
        return {"skill": entry(1)}

    await expect(
        InvalidResponse, hostile(skills_get=swap), lambda c: c.get_skill("skill://s0/SKILL.md")
    )


async def test_server_errors_keep_their_json_rpc_code() -> None:
    async def refuse(ctx: Any, params: UriParams) -> dict[str, Any]:
        raise MCPError(code=types.INVALID_PARAMS, message="\x1b[31mno\x1b[0m")

    error = await expect(
        ServerRejected, hostile(skills_get=refuse), lambda c: c.get_skill("skill://s0/SKILL.md")
    )
    assert isinstance(error, ServerRejected)
    assert error.code == -32602
    assert "\x1b" not in str(error)


@pytest.mark.parametrize(
    ("code", "said"),
    [(-32000, "busy"), (-32000, "Internal error"), (-32001, "the upstream timed out")],
)
async def test_a_servers_own_error_with_the_sdks_codes_is_its_answer(code: int, said: str) -> None:
    # The SDK uses these codes for a closed connection and its own timeout, in words of its
    # own; a server that answers with them has answered: its words are kept, as its answer.
    async def refuse(ctx: Any, params: UriParams) -> dict[str, Any]:
        raise MCPError(code=code, message=said)

    error = await expect(
        ServerRejected, hostile(skills_get=refuse), lambda c: c.get_skill("skill://s0/SKILL.md")
    )
    assert isinstance(error, ServerRejected)
    assert error.code == code
    assert said in str(error)


async def test_a_malformed_listing_page_is_an_invalid_response() -> None:
    async def bad(ctx: Any, params: ListParams) -> dict[str, Any]:
        return {"skills": "nope"}

    await expect(InvalidResponse, hostile(skills_list=bad), lambda c: c.list_skills())


async def test_an_overlong_cursor_is_an_invalid_response() -> None:
    async def long_cursor(ctx: Any, params: ListParams) -> dict[str, Any]:
        return {"skills": [], "nextCursor": "c" * 10_000}

    await expect(InvalidResponse, hostile(skills_list=long_cursor), lambda c: c.list_skills())


async def test_errors_in_the_callers_own_code_are_not_relabelled() -> None:
    async def fine(ctx: Any, params: ListParams) -> dict[str, Any]:
        return {"skills": []}

    with anyio.fail_after(5), pytest.raises(KeyError):
        async with SkillsClient.connect(hostile(skills_list=fine)):
            raise KeyError("the host's bug")


@given(st.binary(max_size=2048))
def test_any_blob_round_trips_byte_exact(data: bytes) -> None:
    result = types.ReadResourceResult(
        contents=[
            types.BlobResourceContents(uri="skill://s/a", blob=base64.b64encode(data).decode())
        ]
    )
    assert exact_bytes(result, "skill://s/a", 4096) == data


@given(st.text(max_size=300), st.integers(min_value=1, max_value=400))
def test_any_server_text_or_blob_gives_bytes_or_a_typed_error(text: str, cap: int) -> None:
    for item in (
        types.TextResourceContents(uri="skill://s/a", text=text),
        types.BlobResourceContents(uri="skill://s/a", blob=text),
    ):
        result = types.ReadResourceResult(contents=[item])
        try:
            data = exact_bytes(result, "skill://s/a", cap)
        except (InvalidResponse, ResponseTooLarge):
            continue
        assert len(data) <= cap
