"""How a context block names its origin, and quotes an attribute value.

The identity attributes (``origin``, the label as ``server`` or ``label``, ``trust``),
the origin's descriptive detail (``serverInfo.name`` marked unverified), the same in the
JSON form, and every attribute value made inert inside its double quotes. The trust
value is derived from the origin's kind alone, failing closed. Pure: no I/O.
"""

from __future__ import annotations

import html
import re
from typing import Any, Final, Literal

from skillward.core._neutralise import VALUE_LIMIT, neutralise_value
from skillward.core.errors import UsageError, printable
from skillward.core.origins import Origin

__all__ = ["Trust", "attr_value", "identity_attrs", "origin_attrs", "origin_json", "trust_of"]

Trust = Literal["untrusted", "local", "host"]


#: Printable ASCII but the characters html.escape changes: no step below changes such a
#: value (with no "<" it holds no marker) unless it holds the boundary.
_PLAIN_ATTR_RE: Final = re.compile(r"[ !#-%(-;=?-~]*\Z")


def attr_value(value: str, boundary: str) -> str:
    if len(value) <= VALUE_LIMIT and _PLAIN_ATTR_RE.match(value) and boundary not in value.lower():
        return value
    # Neutralised first, so invisible characters show as [U+XXXX] as in content; then
    # printable() escapes newlines and whatever else is left; then html.escape makes
    # quotes and angle brackets inert inside the double-quoted value.
    value = neutralise_value(value, boundary)
    return html.escape(printable(value, limit=len(value)), quote=True)


def trust_of(origin: Origin | None) -> Trust:
    # Derived from Origin.kind alone and failing closed: only an exact "local" is local.
    if origin is None:
        return "host"
    if origin.kind == "mcp":
        return "untrusted"
    if origin.kind == "local":
        return "local"
    raise UsageError(f"unknown origin kind {origin.kind!r}; expected 'mcp' or 'local'")


def identity_attrs(origin: Origin | None) -> list[tuple[str, str]]:
    """origin, then the label (as ``server`` for MCP, ``label`` for local), then trust."""
    trust = trust_of(origin)
    if origin is None:
        return [("origin", "host"), ("trust", trust)]
    if trust == "untrusted":
        return [("origin", "mcp"), ("server", origin.label), ("trust", trust)]
    return [("origin", "local"), ("label", origin.label), ("trust", trust)]


def origin_attrs(origin: Origin | None) -> list[tuple[str, str]]:
    """The identity attributes, then the origin's descriptive detail if any."""
    attrs = identity_attrs(origin)
    if origin is not None and origin.detail is not None:
        # serverInfo.name is self-reported: it is labelled unverified, never the identity.
        name = "server-name-unverified" if origin.kind == "mcp" else "directory"
        attrs.append((name, origin.detail))
    return attrs


def origin_json(origin: Origin | None) -> dict[str, Any] | None:
    if origin is None:
        return None
    if trust_of(origin) == "untrusted":
        return {"kind": "mcp", "label": origin.label, "detail_unverified": origin.detail}
    return {"kind": "local", "label": origin.label, "detail": origin.detail}
