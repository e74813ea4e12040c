"""Sending audit events to an OpenTelemetry collector, off the caller's path.

:meth:`Exporter.add` only puts the event in a bounded buffer and returns: a load never
waits on the collector. One daemon thread sends the buffer in batches through
``_otlp.py`` (imported by that thread, so a process that exports pays for OpenTelemetry
there, not at start-up). While the collector cannot be reached the events stay in the
buffer, sent again after a pause that doubles up to 30 s; past
``Limits.max_audit_export_events`` the oldest is dropped, and counted. The first failure
of an outage is reported once, naming the collector and why; the recovery is reported
with what was delivered and what was dropped. The local trail keeps every event either
way: losing the collector loses nothing there.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from skillward.core.config import Limits
from skillward.core.errors import printable
from skillward.edge._trace import TraceContext

if TYPE_CHECKING:
    from skillward.trust.audit import AuditEvent, AuditExport

__all__ = ["BATCH", "Exporter", "Pending", "Send"]

logger = logging.getLogger("skillward")

#: Events in one export request at most.
BATCH = 512
_MAX_PAUSE = 30.0


@dataclass(frozen=True, slots=True)
class Pending:
    """One event waiting to be sent: the event, the trace of the request it was decided
    in, and the tool a gateway's client called (None outside a gateway)."""

    event: AuditEvent
    trace: TraceContext | None
    tool: str | None
    number: int


class Send(Protocol):
    """Sends batches to the collector (``_otlp.Sender``)."""

    def __call__(self, batch: Sequence[Pending]) -> str | None:
        """Send ``batch``; None when the collector took it, or why it did not."""

    def close(self) -> None:
        """Let the connection go."""


class Exporter:
    """The buffer and the thread that empties it into the collector at ``url``."""

    def __init__(
        self,
        export: AuditExport,
        url: str,
        limits: Limits,
    ) -> None:
        self.url = url
        self._export = export
        self._cap = limits.max_audit_export_events
        self._buffer: deque[Pending] = deque()
        self._ready = threading.Condition()
        self._numbers = itertools.count(1)
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._delivered = 0
        self._dropped = 0
        self._dropped_in_outage = 0
        #: Why the collector last failed; None while it takes events.
        self._failing: str | None = None
        #: The exporter could not be set up: nothing is sent from this process.
        self._broken = False
        with self._ready:
            self._start()  # it asks the collector at once, so a failure is said at start-up

    def add(self, event: AuditEvent, trace: TraceContext | None, tool: str | None) -> None:
        """Hold ``event`` for the thread to send; never waits on the collector."""
        with self._ready:
            if len(self._buffer) >= self._cap:
                self._buffer.popleft()
                self._dropped += 1
                self._dropped_in_outage += 1
            self._buffer.append(Pending(event, trace, tool, next(self._numbers)))
            self._start()
            self._ready.notify()

    def _start(self) -> None:
        """Start the thread if it is not running (lock held)."""
        self._stopping = False
        if self._thread is None and not self._broken:
            self._thread = threading.Thread(
                target=self._run, name="skillward-audit-export", daemon=True
            )
            self._thread.start()

    def flush(self, timeout: float) -> None:
        """Wait ``timeout`` seconds at most for the buffer to be sent (not at all while the
        collector is failing), then stop the thread; ``add`` starts it again."""
        deadline = time.monotonic() + timeout
        with self._ready:
            while self._buffer and self._failing is None and self._thread is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._ready.wait(left)
            self._stopping = True
            self._ready.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=max(0.0, deadline - time.monotonic()) + 0.1)

    def status(self) -> dict[str, object]:
        with self._ready:
            return self._status()

    def _status(self) -> dict[str, object]:
        return {
            "endpoint": self.url,
            "delivered": self._delivered,
            "buffered": len(self._buffer),
            "dropped": self._dropped,
            "failing": self._failing,
        }

    # --- the thread -----------------------------------------------------------------------

    def _connect(self) -> Send | None:
        try:
            from skillward.trust._otlp import Sender  # noqa: PLC0415

            return Sender(self.url, self._export.timeout)
        except Exception as error:  # a broken install must never reach the host
            self._fail(f"the exporter could not be set up ({type(error).__name__}: {error})")
            return None

    def _run(self) -> None:
        send = self._connect()
        if send is None:
            with self._ready:
                self._broken = True
                self._thread = None
                self._ready.notify_all()
            return
        try:
            self._send_all(send)
        finally:
            send.close()

    def _send_all(self, send: Send) -> None:
        pause = self._export.retry
        failed = not self._probe(send)
        while True:
            with self._ready:
                # After a failure, a pause before the collector is asked again, events or not.
                resume = time.monotonic() + pause if failed else 0.0
                while not self._stopping and (not self._buffer or time.monotonic() < resume):
                    self._ready.wait(max(0.0, resume - time.monotonic()) or None)
                if self._stopping:
                    self._thread = None  # under the lock: add() starts another
                    return
                batch = list(itertools.islice(self._buffer, BATCH))
            if failed:
                pause = min(pause * 2, _MAX_PAUSE)
            try:
                why = send(batch)
            except Exception as error:  # the exporter's own failure, not the host's
                why = f"{type(error).__name__}: {error}"
            failed = why is not None
            if why is None:
                self._sent(batch[-1].number, len(batch))
                pause = self._export.retry
            else:
                self._fail(why)

    def _probe(self, send: Send) -> bool:
        """An empty request (valid OTLP): a collector that does not answer is said at once.
        Whether it answered."""
        try:
            why = send([])
        except Exception as error:  # the exporter's own failure, not the host's
            why = f"{type(error).__name__}: {error}"
        if why is not None:
            self._fail(why)
        return why is None

    def _sent(self, last: int, count: int) -> None:
        with self._ready:
            while self._buffer and self._buffer[0].number <= last:
                self._buffer.popleft()
            self._delivered += count
            recovered, dropped = self._failing is not None, self._dropped_in_outage
            self._failing = None
            self._dropped_in_outage = 0
            self._ready.notify_all()
        if recovered:
            logger.warning(
                "audit export: the collector at %s takes events again; those held were delivered%s",
                printable(self.url, limit=200),
                f", {dropped} were dropped while it could not be reached (the local trail "
                "keeps them)"
                if dropped
                else "",
            )

    def _fail(self, why: str) -> None:
        with self._ready:
            first = self._failing is None
            self._failing = printable(why, limit=300)
            self._ready.notify_all()
        if first:
            logger.warning(
                "audit export: cannot send events to the collector at %s (%s); they are held "
                "(at most %d, the oldest dropped first) and sent when it answers; the local "
                "trail keeps every one",
                printable(self.url, limit=200),
                printable(why, limit=300),
                self._cap,
            )
