"""W3C trace context: the ``traceparent`` (and ``tracestate``) of the request being
served, carried in ``_meta`` as the MCP specification describes, so that one trace links
a host's tool call through the gateway to the upstream requests it makes.

The gateway reads them from a tool call's ``_meta`` (:func:`parse_trace`) and serves the
call inside :func:`traced`; the client edge puts them in the ``_meta`` of every request it
sends meanwhile (:func:`trace_meta`), and the audit trail records them with each event.
Only these two values pass, and only in the grammar W3C Trace Context gives them:
anything else the client sent in ``_meta`` (baggage included) goes nowhere. No I/O.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

__all__ = ["TraceContext", "current_trace", "parse_trace", "trace_meta", "traced"]

# Version 00 only: trace-id and parent-id hex, neither all zeros (checked below).
_TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})\Z")
_MEMBER = re.compile(
    r"(?:[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13}|[a-z][a-z0-9_\-*/]{0,255})"
    r"=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]\Z"
)
_MAX_TRACESTATE = 512
_MAX_MEMBERS = 32


@dataclass(frozen=True, slots=True)
class TraceContext:
    """A checked ``traceparent``, and the ``tracestate`` that came with it (if valid)."""

    traceparent: str
    tracestate: str | None = None

    @property
    def trace_id(self) -> str:
        return self.traceparent[3:35]

    @property
    def span_id(self) -> str:
        return self.traceparent[36:52]

    @property
    def sampled(self) -> bool:
        return bool(int(self.traceparent[53:55], 16) & 1)


def _tracestate(value: object) -> str | None:
    if not isinstance(value, str) or not value or len(value) > _MAX_TRACESTATE:
        return None
    members = [member.strip(" \t") for member in value.split(",")]
    members = [member for member in members if member]
    if not members or len(members) > _MAX_MEMBERS:
        return None
    if not all(_MEMBER.match(member) for member in members):
        return None
    return ",".join(members)


def parse_trace(meta: Mapping[str, object] | None) -> TraceContext | None:
    """The trace context in a request's ``_meta``; None when it has no valid
    ``traceparent``. An invalid ``tracestate`` is dropped, as W3C Trace Context says."""
    if not meta:
        return None
    parent = meta.get("traceparent")
    if not isinstance(parent, str):
        return None
    found = _TRACEPARENT.match(parent)
    if found is None or set(found.group(1)) == {"0"} or set(found.group(2)) == {"0"}:
        return None
    return TraceContext(parent, _tracestate(meta.get("tracestate")))


_CURRENT: contextvars.ContextVar[TraceContext | None] = contextvars.ContextVar(
    "skillward_trace", default=None
)


@contextlib.contextmanager
def traced(trace: TraceContext | None) -> Iterator[None]:
    """Serve a request inside it: requests sent and events recorded meanwhile carry
    ``trace`` (None: none)."""
    token = _CURRENT.set(trace)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current_trace() -> TraceContext | None:
    """The trace context of the request being served, if any."""
    return _CURRENT.get()


def trace_meta() -> dict[str, str] | None:
    """The ``_meta`` entries that pass the current trace context on; None without one."""
    trace = _CURRENT.get()
    if trace is None:
        return None
    meta = {"traceparent": trace.traceparent}
    if trace.tracestate is not None:
        meta["tracestate"] = trace.tracestate
    return meta
