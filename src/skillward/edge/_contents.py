"""What a ``resources/read`` result holds, as the client edge keeps it: each content item's
exact bytes (text as UTF-8, blobs strictly base64-decoded), refused above the cap before
it is decoded, and the one item a read of a single file must hold.

Imports the SDK's types only (``mcp_types``), never ``mcp`` itself.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any, NoReturn

import mcp_types as types

from skillward.core.errors import InvalidResponse, ResponseTooLarge

__all__ = ["ResourceContent", "content_of", "exact_bytes", "exact_content"]

# The rules of docs/check.md a read breaks (see skillward.core.rules).
_READ_ONE = "SW-READ-003"
_READ_ENCODING = "SW-READ-004"
_READ_SIZE = "SW-READ-005"


@dataclass(frozen=True, slots=True)
class ResourceContent:
    """One ``resources/read`` content item, as received: its exact bytes, whether it came
    as text (else a base64 blob), its MIME type and ``_meta``, unverified."""

    uri: str
    data: bytes
    text: bool
    mime_type: str | None
    meta: dict[str, Any] | None


def _too_large(cap: int) -> NoReturn:
    raise ResponseTooLarge(f"the server sent more than {cap} bytes", rule=_READ_SIZE)


def exact_bytes(result: types.ReadResourceResult, uri: str, cap: int) -> bytes:
    """The raw bytes of a single-file read: text as UTF-8, blobs strictly base64-decoded."""
    return exact_content(result, uri, cap).data


def exact_content(result: types.ReadResourceResult, uri: str, cap: int) -> ResourceContent:
    """The one content item a read of a single file holds, for ``uri`` exactly; which item
    is checked before any is decoded."""
    if len(result.contents) != 1:
        raise InvalidResponse(
            f"expected one content item, got {len(result.contents)}", rule=_READ_ONE
        )
    item = result.contents[0]
    if item.uri != uri:
        raise InvalidResponse(
            f"the content is for a different URI, {item.uri[:300]!r}", rule=_READ_ONE
        )
    return content_of(item, cap)


def content_of(item: Any, cap: int) -> ResourceContent:
    """One content item's exact bytes: text as UTF-8, blobs strictly base64-decoded."""
    meta = item.meta if isinstance(item.meta, dict) else None
    if isinstance(item, types.TextResourceContents):
        if len(item.text) > cap:  # at least one byte per character
            _too_large(cap)
        try:
            data = item.text.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidResponse(
                "the text content is not valid Unicode", rule=_READ_ENCODING
            ) from None
        text = True
    elif isinstance(item, types.BlobResourceContents):
        blob = item.blob
        if len(blob) > 4 * ((cap + 2) // 3):
            _too_large(cap)
        if len(blob) % 4:
            raise InvalidResponse("the blob is not valid base64", rule=_READ_ENCODING)
        try:
            data = base64.b64decode(blob, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidResponse("the blob is not valid base64", rule=_READ_ENCODING) from None
        text = False
    else:  # pragma: no cover - the SDK only produces the two kinds
        raise InvalidResponse("unknown content kind")
    if len(data) > cap:
        _too_large(cap)
    return ResourceContent(item.uri, data, text, item.mime_type, meta)
