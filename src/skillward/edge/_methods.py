"""The SEP-2640 methods as mcp request types, shared by the client edge and the server.

Params subclass ``RequestParams`` so the SDK parses ``_meta``; requests carry a
``Literal`` method so ``session.send_request`` can send them.
"""

from __future__ import annotations

from typing import Literal

import mcp_types as types

__all__ = [
    "DirectoryReadParams",
    "DirectoryReadRequest",
    "SkillsGetParams",
    "SkillsGetRequest",
    "SkillsListParams",
    "SkillsListRequest",
]


class SkillsListParams(types.RequestParams):
    cursor: str | None = None


class SkillsGetParams(types.RequestParams):
    uri: str


class DirectoryReadParams(types.RequestParams):
    uri: str
    cursor: str | None = None


class SkillsListRequest(types.Request[SkillsListParams, Literal["skills/list"]]):
    method: Literal["skills/list"] = "skills/list"
    params: SkillsListParams


class SkillsGetRequest(types.Request[SkillsGetParams, Literal["skills/get"]]):
    method: Literal["skills/get"] = "skills/get"
    params: SkillsGetParams


class DirectoryReadRequest(types.Request[DirectoryReadParams, Literal["resources/directory/read"]]):
    method: Literal["resources/directory/read"] = "resources/directory/read"
    params: DirectoryReadParams
