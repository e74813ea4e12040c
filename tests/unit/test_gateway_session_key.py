"""Which client session a gateway request belongs to: the era the SDK served it at
decides, and a key of one era never names a session of the other."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import mcp_types as types
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession

from skillward.core.errors import UsageError
from skillward.gateway.server import session_key

LEGACY, MODERN = "2025-11-25", "2026-07-28"
words = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=40)


def request(version: str, headers: dict[str, str] | None, name: str = "one") -> Any:
    """A request at ``version`` from a client reporting ``name`` (over HTTP with
    ``headers``, over stdio when None)."""
    reported = types.InitializeRequestParams(
        protocol_version=version,
        capabilities=types.ClientCapabilities(),
        client_info=types.Implementation(name=name, version="1"),
    )
    return ServerRequestContext[Any, Any](
        session=cast(ServerSession, SimpleNamespace(client_params=reported)),
        lifespan_context={},
        protocol_version=version,
        method="tools/call",
        request=None if headers is None else SimpleNamespace(headers=headers),
    )


@pytest.mark.threat("T48")
@given(sid=words, name=words)
def test_a_2026_request_is_keyed_by_its_reported_client_never_by_a_session_header(
    sid: str, name: str
) -> None:
    carrying = session_key(request(MODERN, {"mcp-session-id": sid}, name))
    assert carrying == session_key(request(MODERN, {}, name))
    legacy = session_key(request(LEGACY, {"mcp-session-id": sid}, name))
    assert legacy not in {carrying, session_key(request(MODERN, {}, name=sid))}


@pytest.mark.threat("T48")
def test_a_2025_request_over_http_without_its_session_is_refused() -> None:
    with pytest.raises(UsageError):
        session_key(request(LEGACY, {}))
