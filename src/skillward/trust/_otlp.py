"""An audit event as an OpenTelemetry log record, sent over OTLP/HTTP (protobuf).

The only module importing ``opentelemetry`` (``skillward[otel]``), and only the export
thread imports it (``_export.py``). The exporter is the SDK's ``OTLPLogExporter``, so
the standard ``OTEL_EXPORTER_OTLP_*`` variables (headers, certificates, compression,
timeout) apply; the buffer and the retries are ``_export.py``'s.

A record holds the event's fixed fields and nothing else (never skill content, as the
trail holds none), named as the OpenTelemetry semantic conventions name them where they
exist and ``skillward.*`` otherwise:

* ``mcp.method.name`` and ``gen_ai.tool.name``: the MCP call a gateway decided in
  (``tools/call`` of ``read_skill``), or the host tool an execution gate was asked about;
* ``mcp.resource.uri``: the file concerned, or the skill's ``SKILL.md``;
* ``server.address`` and ``server.port``: an HTTP server's, from its URL;
* ``skillward.event``, ``skillward.decision``, ``skillward.decided_by`` (``terminal``,
  ``elicitation``, ``page``, ``policy``, ``remembered`` or ``host``), ``skillward.reason``,
  ``skillward.server.label``, ``skillward.server.identity``, ``skillward.skill.uri``,
  ``skillward.skill.content_hash``, ``skillward.gate``, ``skillward.scope``,
  ``skillward.target``, ``skillward.client.name`` (as the client names itself:
  unverified), ``skillward.via``;
* the event name ``skillward.audit.<event>``, its time, and the trace and span of the
  request it was decided in (the ``traceparent`` a gateway's client sent);
* on the resource: ``service.name`` (``skillward``), ``service.version``, ``host.name``
  and ``process.owner``, so a fleet's collector tells machines and people apart.
"""

from __future__ import annotations

import getpass
import importlib
import logging
import socket
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry._logs import LogRecord, SeverityNumber
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context
from opentelemetry.trace.span import TraceState

from skillward._version import __version__
from skillward.core.errors import ConfigError
from skillward.core.urls import parse_http_url
from skillward.trust._export import Pending
from skillward.trust.audit import AuditEvent

__all__ = ["Sender", "attributes", "decided_by"]

# The exporter says why an export failed only in its log: that is the reason given back,
# and the exporter's own log stays quiet for skillward's exports (it is reported once).
_EXPORTER_LOG = "opentelemetry.exporter.otlp.proto.http._log_exporter"


class _Heard(logging.Filter):
    """Takes the exporter's log records made on a thread exporting for skillward."""

    def __init__(self) -> None:
        super().__init__()
        self.local = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        heard: list[str] | None = getattr(self.local, "heard", None)
        if heard is None:
            return True
        heard.append(_cause(record))
        return False

    @contextmanager
    def listening(self) -> Iterator[list[str]]:
        heard: list[str] = []
        self.local.heard = heard
        try:
            yield heard
        finally:
            self.local.heard = None


def _cause(record: logging.LogRecord) -> str:
    """What went wrong, from one of the exporter's log records: the error of a transient
    failure, or the collector's status and reason."""
    args = record.args if isinstance(record.args, tuple) else ()
    template = str(record.msg)
    if template.startswith("Transient error") and args:
        return str(args[0])
    if template.startswith("Failed to export %s batch code") and len(args) == 3:
        return f"the collector answered {args[1]}: {args[2]}"
    return record.getMessage()


_HEARD = _Heard()
logging.getLogger(_EXPORTER_LOG).addFilter(_HEARD)


def decided_by(event: AuditEvent) -> str:
    """Who decided, from what the event says of it: ``policy`` (a rule or a pin),
    ``elicitation`` (a gateway's client), ``page`` (an approval page, or a host's web
    approver), ``remembered`` (a stored approval), ``terminal`` (a person at skillward's
    prompt or ``skillward approve``, or the host's own approver, which skillward cannot
    tell apart) or ``host`` (anything else the host decided)."""
    reason = event.reason
    via = event.via or ""
    if event.event == "policy_denial" or "policy" in reason:
        return "policy"
    if "approval page" in reason or via == "web":
        return "page"
    if "elicitation" in reason:
        return "elicitation"
    if "recorded approval" in reason or "remembered" in reason:
        return "remembered"
    if via.startswith("socket") or any(
        said in reason for said in ("when asked", "by the person", "command line")
    ):
        return "terminal"
    return "host"


def _server(identity: str | None) -> dict[str, str | int]:
    """``server.address`` and ``server.port`` of an HTTP server's transport identity."""
    if identity is None or not identity.startswith("http:"):
        return {}
    try:
        url = parse_http_url(identity.removeprefix("http:"))
    except ConfigError:
        return {}
    return {"server.address": url.host, "server.port": url.effective_port}


def attributes(pending: Pending) -> dict[str, str | int]:
    """The record's attributes: the event's fields, never content (module docstring)."""
    event = pending.event
    found: dict[str, str | int | None] = {
        "skillward.event": event.event,
        "skillward.decision": event.decision,
        "skillward.decided_by": decided_by(event),
        "skillward.reason": event.reason or None,
        "skillward.server.label": event.label,
        "skillward.server.identity": event.identity,
        "skillward.skill.uri": event.skill_uri,
        "skillward.skill.content_hash": event.content_hash,
        "skillward.gate": event.gate,
        "skillward.scope": event.scope,
        "skillward.target": event.target,
        "skillward.client.name": event.client_unverified,
        "skillward.via": event.via,
        "mcp.resource.uri": event.resource_uri or event.skill_uri,
        "gen_ai.tool.name": event.tool or pending.tool,
        "mcp.method.name": "tools/call" if pending.tool is not None else None,
        **_server(event.identity),
    }
    return {key: value for key, value in found.items() if value is not None}


def _record(pending: Pending, resource: Resource, scope: InstrumentationScope) -> ReadableLogRecord:
    event = pending.event
    context = None
    trace = pending.trace
    if trace is not None:
        span = SpanContext(
            trace_id=int(trace.trace_id, 16),
            span_id=int(trace.span_id, 16),
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED if trace.sampled else TraceFlags.DEFAULT),
            trace_state=TraceState.from_header([trace.tracestate]) if trace.tracestate else None,
        )
        context = set_span_in_context(NonRecordingSpan(span))
    nanos = int(event.time * 1e9)
    record = LogRecord(
        timestamp=nanos,
        observed_timestamp=nanos,
        context=context,
        severity_text="INFO",
        severity_number=SeverityNumber.INFO,
        body=event.summary(),
        attributes=attributes(pending),
        event_name=f"skillward.audit.{event.event}",
    )
    return ReadableLogRecord(log_record=record, resource=resource, instrumentation_scope=scope)


def _owner() -> str | None:
    try:
        return getpass.getuser()
    except Exception:  # no name for this uid (a container)
        return None


def _session(failures: list[str]) -> Any:
    """The exporter's HTTP session, noting why a request raised: the exporter keeps a
    connection's error to itself when it gives up without retrying."""
    session = importlib.import_module("requests").Session()  # the exporter's own client
    request = session.request

    def noted(*args: Any, **kwargs: Any) -> Any:
        try:
            return request(*args, **kwargs)
        except Exception as error:
            failures.append(f"{type(error).__name__}: {error}")
            raise

    session.request = noted
    return session


class Sender:
    """Sends batches to the collector at ``url`` (its logs URL), a ``Send``."""

    def __init__(self, url: str, timeout: float | None) -> None:
        self._failures: list[str] = []
        self._exporter = OTLPLogExporter(
            endpoint=url, timeout=timeout, session=_session(self._failures)
        )
        found = {
            "service.name": "skillward",
            "service.version": __version__,
            "host.name": socket.gethostname(),
            "process.owner": _owner(),
        }
        self._resource = Resource.create({k: v for k, v in found.items() if v is not None})
        self._scope = InstrumentationScope("skillward.audit", __version__)

    def __call__(self, batch: Sequence[Pending]) -> str | None:
        records = [_record(pending, self._resource, self._scope) for pending in batch]
        self._failures.clear()
        with _HEARD.listening() as heard:
            result = self._exporter.export(records)
        if result is LogRecordExportResult.SUCCESS:
            return None
        said = self._failures or heard
        return said[0] if said else "the collector did not take the events"

    def close(self) -> None:
        with _HEARD.listening():
            self._exporter.shutdown()  # type: ignore[no-untyped-call]
