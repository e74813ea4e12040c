"""A real OTLP/HTTP logs receiver for tests: ``POST /v1/logs`` on 127.0.0.1, each body
decoded as an ``ExportLogsServiceRequest`` with ``opentelemetry-proto`` (the collector's
own message definitions), every log record kept with its resource.

``Receiver(port=...)`` can take a port another receiver used, so a test can stop one and
start another where the first was: a collector that went away and came back. ``hold``
makes it accept requests and answer none until released: a collector that hangs.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind is not None else None


@dataclass(frozen=True)
class Received:
    """One log record as the collector decoded it."""

    attributes: dict[str, Any]
    resource: dict[str, Any]
    body: Any
    event_name: str
    trace_id: str
    span_id: str
    time_unix_nano: int
    severity_text: str


@dataclass
class Receiver:
    """The receiver; ``records`` is what it decoded, ``bodies`` the raw request bodies."""

    port: int = 0
    records: list[Received] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    hold: threading.Event | None = None
    arrived: threading.Condition = field(default_factory=threading.Condition)

    def wait_for(self, count: int, timeout: float) -> list[Received]:
        """The records once at least ``count`` arrived; AssertionError after ``timeout``."""
        with self.arrived:
            if not self.arrived.wait_for(lambda: len(self.records) >= count, timeout):
                raise AssertionError(f"{len(self.records)} of {count} records arrived")
            return list(self.records)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                if receiver.hold is not None:
                    receiver.hold.wait()
                request = ExportLogsServiceRequest()
                request.ParseFromString(body)
                decoded = []
                for resource_logs in request.resource_logs:
                    resource = {a.key: _value(a.value) for a in resource_logs.resource.attributes}
                    for scope_logs in resource_logs.scope_logs:
                        for record in scope_logs.log_records:
                            decoded.append(
                                Received(
                                    attributes={a.key: _value(a.value) for a in record.attributes},
                                    resource=resource,
                                    body=_value(record.body),
                                    event_name=record.event_name,
                                    trace_id=record.trace_id.hex(),
                                    span_id=record.span_id.hex(),
                                    time_unix_nano=record.time_unix_nano,
                                    severity_text=record.severity_text,
                                )
                            )
                reply = ExportLogsServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)
                with receiver.arrived:
                    receiver.paths.append(self.path)
                    receiver.headers.append(dict(self.headers))
                    receiver.bodies.append(body)
                    receiver.records.extend(decoded)
                    receiver.arrived.notify_all()

        return Handler

    @contextmanager
    def running(self) -> Iterator[str]:
        """Serve until the block ends; yields the base URL (``http://127.0.0.1:PORT``)."""
        server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        server.daemon_threads = True
        self.port = server.server_address[1]
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{self.port}"
        finally:
            if self.hold is not None:
                self.hold.set()
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)


def free_port() -> int:
    """A port nothing listens on now (a collector that is down)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
