"""The client edge against `skillward serve`, over every transport, in both protocol eras."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp.server import Server

from skillward.core.errors import CapabilityMissing, ServerRejected
from skillward.core.verify import sha256_digest
from skillward.edge._methods import (
    DirectoryReadParams,
    DirectoryReadRequest,
    SkillsGetParams,
    SkillsGetRequest,
)
from skillward.edge.client import SkillsClient
from skillward.edge.servers import InMemoryTransport, ServerSpec
from tests.support.servers import MODES, TRANSPORTS, serve_tree
from tests.support.trees import BINARY, BOM_TEXT, CRLF_TEXT, build_tree

pytestmark = pytest.mark.anyio

OPTIONS = ("--page-size", "2", "--unlisted", "hidden-skill")
LISTED = [
    "skill://acme/billing/refunds/SKILL.md",
    "skill://acme/billing/refunds/partial/SKILL.md",
    "skill://git-workflow/SKILL.md",
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    root = tmp_path_factory.mktemp("skills")
    return root, build_tree(root)


# One server and session per transport and era, shared by the module's read-only tests.
@pytest.fixture(
    scope="module",
    params=[(t, m) for t in TRANSPORTS for m in MODES],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
async def client(
    request: pytest.FixtureRequest, tree: tuple[Path, dict[str, bytes]]
) -> AsyncIterator[SkillsClient]:
    transport, mode = request.param
    with anyio.fail_after(60):
        async with (
            serve_tree(tree[0], transport, mode=mode, options=OPTIONS) as spec,
            SkillsClient.connect(spec) as connected,
        ):
            yield connected


async def test_capability_is_negotiated_in_both_eras(client: SkillsClient) -> None:
    assert client.capability().directory_read is True
    expected = "2025-11-25" if client.label.endswith("legacy") else "2026-07-28"
    assert client.protocol_version == expected


async def test_server_name_is_available_only_as_an_unverified_detail(client: SkillsClient) -> None:
    assert client.server_name == "skillward-serve"
    assert client.label != client.server_name


async def test_listing_walks_every_page_without_the_unlisted_skill(client: SkillsClient) -> None:
    with anyio.fail_after(30):
        listing = await client.list_skills()
    assert [entry.uri for entry in listing.entries] == LISTED
    assert listing.pages == 2
    assert listing.rejected == ()


async def test_every_skills_result_has_cache_hints_only_at_2026_07_28(
    client: SkillsClient,
) -> None:
    # The 2026-07-28 result schemas of skills/get and resources/directory/read carry
    # them too; clients such as the MCP Inspector reject a result without them.
    requests: list[SkillsGetRequest | DirectoryReadRequest] = [
        SkillsGetRequest(params=SkillsGetParams(uri=LISTED[0])),
        DirectoryReadRequest(params=DirectoryReadParams(uri="skill://acme/billing/refunds")),
    ]
    for request in requests:
        with anyio.fail_after(30):
            raw = await client._request(request)
        hints = (raw.get("ttlMs"), raw.get("cacheScope"))
        if client.protocol_version == "2026-07-28":
            assert hints == (60_000, "public"), request.method
        else:
            assert hints == (None, None), request.method


async def test_listing_has_cache_hints_only_at_2026_07_28(client: SkillsClient) -> None:
    with anyio.fail_after(30):
        page = await client.list_skills_page()
    if client.protocol_version == "2026-07-28":
        assert (page.ttl_ms, page.cache_scope) == (60_000, "public")
    else:
        assert (page.ttl_ms, page.cache_scope) == (None, None)
    assert page.next_cursor is not None


async def test_entries_list_every_file_with_digest_and_size(
    client: SkillsClient, tree: tuple[Path, dict[str, bytes]]
) -> None:
    files = tree[1]
    with anyio.fail_after(30):
        listing = await client.list_skills()
    refunds = listing.entries[0]
    assert refunds.frontmatter.as_dict() == {
        "name": "refunds",
        "description": "Refund policy",
        "metadata": {"version": "2.0"},
    }
    prefix = "skill://acme/billing/refunds/"
    expected = {
        uri: (sha256_digest(data), len(data))
        for uri, data in files.items()
        if uri.startswith(prefix)
    }
    assert {i.uri: (i.digest, i.size) for i in refunds.manifest.values()} == expected


async def test_get_answers_for_listed_and_unlisted_skills(client: SkillsClient) -> None:
    with anyio.fail_after(30):
        listed = await client.get_skill("skill://git-workflow/SKILL.md")
        hidden = await client.get_skill("skill://hidden-skill/SKILL.md")
    assert listed.name == "git-workflow"
    assert len(listed.manifest) == 4
    assert hidden.name == "hidden-skill"


@pytest.mark.parametrize(
    "uri",
    [
        "skill://no-such-skill/SKILL.md",
        "skill://git-workflow/notes/crlf.txt",
        "skill://git-workflow",
    ],
)
async def test_get_of_an_unknown_or_non_skill_uri_is_invalid_params(
    client: SkillsClient, uri: str
) -> None:
    with anyio.fail_after(30), pytest.raises(ServerRejected) as info:
        await client.get_skill(uri)
    assert info.value.code == -32602
    assert info.value.server == client.label
    assert info.value.uri == uri


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("skill://git-workflow/notes/crlf.txt", CRLF_TEXT),
        ("skill://git-workflow/notes/bom.md", BOM_TEXT),
        ("skill://git-workflow/assets/blob.bin", BINARY),
    ],
)
async def test_reads_are_byte_exact(client: SkillsClient, uri: str, expected: bytes) -> None:
    with anyio.fail_after(30):
        data = await client.read_resource(uri)
    assert data == expected


async def test_read_of_an_unknown_resource_is_invalid_params(client: SkillsClient) -> None:
    with anyio.fail_after(30), pytest.raises(ServerRejected) as info:
        await client.read_resource("skill://git-workflow/missing.md")
    assert info.value.code == -32602


async def test_directory_read_lists_direct_children_across_pages(client: SkillsClient) -> None:
    with anyio.fail_after(30):
        children = await client.read_directory("skill://acme/billing/refunds")
    assert [(c.uri, c.is_directory) for c in children] == [
        ("skill://acme/billing/refunds/SKILL.md", False),
        ("skill://acme/billing/refunds/partial", True),
        ("skill://acme/billing/refunds/templates", True),
    ]
    assert children[0].mime_type == "text/markdown"


async def test_directory_read_descends_into_subdirectories(client: SkillsClient) -> None:
    with anyio.fail_after(30):
        children = await client.read_directory("skill://acme/billing/refunds/templates")
    assert [c.uri for c in children] == ["skill://acme/billing/refunds/templates/email.md"]


@pytest.mark.parametrize(
    "uri", ["skill://git-workflow/SKILL.md", "skill://nowhere", "skill://git-workflow/notes/x"]
)
async def test_directory_read_of_a_file_or_unknown_uri_is_invalid_params(
    client: SkillsClient, uri: str
) -> None:
    with anyio.fail_after(30), pytest.raises(ServerRejected) as info:
        await client.read_directory(uri)
    assert info.value.code == -32602


async def test_a_plain_mcp_server_without_the_extension_is_refused(tmp_path: Path) -> None:
    spec = ServerSpec(label="plain", transport=InMemoryTransport(server=Server("plain")))
    with anyio.fail_after(30):
        async with SkillsClient.connect(spec) as plain:
            with pytest.raises(CapabilityMissing, match="does not declare"):
                await plain.list_skills()
