"""The audit trail: one structured event for every decision about a skill.

Every approval, denial, revocation, grant, gate decision, verification failure and
policy denial becomes one :class:`AuditEvent`:

* a ``logging`` record on the ``skillward.audit`` logger (level INFO), whose
  ``audit`` attribute is the event and whose message is its one-line summary;
* optionally, one JSON line appended to a file (the command line uses
  ``audit.jsonl`` in the user state directory).

An event has fixed fields: when, what kind, the decision, the host label, the
server's transport identity, the skill URI, the hash of the skill's digest set
(:func:`skillward.trust.approvals.content_hash`) and skillward's own reason. It never
holds skill content: no description, body, file bytes or frontmatter values.

The file is **tamper-evident** (``_chain.py``): every line carries the hash of the one
before it, and checkpoints, authenticated with a key kept where the approval store's is
(the OS keyring, or the file key store the user's ``config.toml`` chooses), vouch for
everything before them, with a counter in the key store so that a trail cut short or
put back shows. :func:`verify_trail` (``skillward audit verify``) says whether it is
intact, or the first line that breaks and how. A writer keeps the chain's head in
memory and reads only the file's last line when another writer wrote since, so an
event costs a hash more than a plain line; the key store is asked once a checkpoint.

The file is opened without following symlinks (and kept open between events while it is
still the file at its path, checked under its lock each write), appended one line per
write, and rotated at ``Limits.max_audit_bytes`` (the previous file is kept as ``audit.jsonl.1``,
and the new file's first line chains to its last). Writers, in threads or processes,
take the file's lock before they rotate or append (waiting a moment at most): so
several rotating at once rotate once, no event is lost and the chain stays one line
after another. A file that cannot be written never stops a host: it is reported once,
and the logging record is still made.

With an :class:`AuditExport`, each event is also sent, off the caller's path, to an
OpenTelemetry collector as a log record over OTLP/HTTP (``skillward[otel]``;
``_export.py``): a collector that cannot be reached costs nothing but a bounded buffer.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import logging
import os
import re
import stat
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from skillward.core.config import Limits
from skillward.core.errors import RememberUnavailable, UsageError, printable
from skillward.edge._trace import current_trace
from skillward.edge._tree import CLOEXEC, NOFOLLOW, NONBLOCK, READ_FLAGS, read_regular_file
from skillward.trust._chain import (
    Source,
    TrailVerdict,
    chain_line,
    checkpoint_body,
    checkpoint_code,
    counter_text,
    line_hash,
    link,
    verify,
    vouched,
)

if TYPE_CHECKING:
    from skillward.trust._export import Exporter
    from skillward.trust._store import KeyProvider

if sys.platform != "win32":
    import fcntl

__all__ = [
    "AuditEvent",
    "AuditExport",
    "AuditLog",
    "AuditRules",
    "AuditTrail",
    "EventKind",
    "GateKind",
    "Outcome",
    "TrailVerdict",
    "as_client",
    "audit_export",
    "parse_duration",
    "read_events",
    "verify_trail",
]

logger = logging.getLogger("skillward.audit")

EventKind = Literal[
    "approval",
    "denial",
    "revocation",
    "grant",
    "gate",
    "verification_failure",
    "policy_denial",
]
Outcome = Literal["approved", "denied", "revoked", "granted", "allowed", "failed"]
#: What a gate or grant event is about.
GateKind = Literal["activation", "allowed_tools", "execution", "cross_origin"]

# Read too: a writer reads the file's last line when another wrote since.
_OPEN_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CREAT | NOFOLLOW | NONBLOCK | CLOEXEC
# Seconds a writer waits for another to release the file's lock, polling; then it
# appends without rotating (a file someone holds locked must not hang a host).
_LOCK_WAIT = 1.0
_LOCK_POLL = 0.001
# Files a writer opens again when others rotated the one it had, before it writes anyway.
_REOPENS = 8
# Whether a writer keeps its file open between events: Windows cannot rename (rotate) a
# file someone holds open.
_KEEP_OPEN = sys.platform != "win32"
# Free-text fields are bounded: they hold labels, URIs and skillward's words only.
_TEXT_LIMIT = 2048
# Bytes of a file's end read to find its last line (a line is far shorter): a few
# first, which holds the usual line (another writer's, read before each event follows it).
_TAIL_FIRST = 4096
_TAIL = 64 * 1024
# Room an event needs beyond its JSON: its chain fields, and a checkpoint after it.
CHAIN_ROOM = 256
# What a file may hold past the rotation size, read all the same.
_SLACK = 256 * 1024
_EMPTY = hashlib.sha256(b"").hexdigest()


class AuditEvent(BaseModel):
    """One decision, as recorded. Every field is always present (``None`` when unknown)."""

    # Built on first use, not at import (see skillward.core.wire.WireModel).
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, defer_build=True)

    #: Seconds since the epoch.
    time: float
    event: EventKind
    decision: Outcome
    #: The host label of the server (or local skill directory) involved.
    label: str | None = None
    #: How that server is reached (``ServerSpec.identity``): its URL or command line.
    identity: str | None = None
    #: The skill's URI (its ``SKILL.md``), or a local skill's path.
    skill_uri: str | None = None
    #: ``content_hash`` of the skill's entry: the hash of its digest set and frontmatter.
    content_hash: str | None = None
    #: skillward's words: why, never the skill's.
    reason: str = ""
    #: For gate, grant and policy events: which gate.
    gate: GateKind | None = None
    #: The host tool asked about (execution gate).
    tool: str | None = None
    #: The server a cross-origin read was aimed at.
    target: str | None = None
    #: The resource read, or the file that failed verification.
    resource_uri: str | None = None
    #: How long an approval lasts (``once``, ``session``, ``remember``).
    scope: str | None = None
    #: The MCP client a gateway decided for, as it names itself: unverified.
    client_unverified: str | None = None
    #: Where a person's answer came from when it was not the prompt of the process that
    #: decided: ``socket pid=PID uid=UID`` (``skillward approve`` through a running
    #: gateway's approval socket, as the kernel names the answering process), ``web``
    #: (a host's web approver). None: asked where it was decided.
    via: str | None = None

    def summary(self) -> str:
        """One escaped line for logs and terminals."""
        parts: list[str] = [self.event, self.decision]
        if self.gate:
            parts.append(self.gate)
        if self.label:
            parts.append(self.label)
        if self.skill_uri:
            parts.append(self.skill_uri)
        if self.tool:
            parts.append(f"tool={self.tool}")
        if self.target:
            parts.append(f"target={self.target}")
        if self.client_unverified is not None:
            parts.append(f"client={self.client_unverified!r} (unverified)")
        if self.via is not None:
            parts.append(f"via={self.via}")
        line = " ".join(parts)
        if self.reason:
            line += f": {self.reason}"
        return printable(line, limit=_TEXT_LIMIT)


def _clean(value: str | None) -> str | None:
    return None if value is None else printable(value, limit=_TEXT_LIMIT)


@dataclass(frozen=True, slots=True)
class _Request:
    """The request a gateway is deciding for: the client, as it names itself, and the
    tool it called."""

    client: str
    tool: str | None = None


# The client whose request is being decided (a gateway serves several over one trail).
_CLIENT: contextvars.ContextVar[_Request | None] = contextvars.ContextVar(
    "skillward_audit_client", default=None
)


@contextlib.contextmanager
def as_client(name: str | None, *, tool: str | None = None) -> Iterator[None]:
    """Record the events made inside it as decided for the client ``name`` (as the
    client names itself: unverified; ``""`` when it gave no name), serving its call of
    the tool ``tool``."""
    token = _CLIENT.set(_Request(name if name is not None else "", tool))
    try:
        yield
    finally:
        _CLIENT.reset(token)


@dataclass(frozen=True, slots=True)
class AuditRules:
    """What a policy requires of the audit trail (``EffectivePolicy.audit_rules()``):
    each requirement as the rule that sets it, for messages, or None."""

    #: The trail must be tamper-evident: a file, with checkpoints the key store vouches for.
    tamper_evident: str | None = None
    #: Events must be exported to a collector.
    export: str | None = None
    #: The collector the policy names (None: the ``OTEL_EXPORTER_OTLP_*`` variables say).
    endpoint: str | None = None


@dataclass(frozen=True, slots=True)
class AuditExport:
    """Where audit events go besides the trail: an OpenTelemetry collector, over OTLP/HTTP
    (``pip install 'skillward[otel]'``). Each event is one log record; see ``host.md``."""

    #: The collector: a base URL (``https://collector.example:4318``, events go to its
    #: ``/v1/logs``) or the full logs URL. None: ``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT``, or
    #: ``OTEL_EXPORTER_OTLP_ENDPOINT`` and ``/v1/logs``.
    endpoint: str | None = None
    #: The rule that requires export (for messages); None when the person chose it.
    required_by: str | None = None
    #: Seconds one export request may take; None: ``OTEL_EXPORTER_OTLP_TIMEOUT`` or 10.
    timeout: float | None = None
    #: Seconds before trying a collector again after it failed (doubling, to 30 s).
    retry: float = 1.0

    def logs_url(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The URL events are sent to; None when neither this nor the environment names one."""
        env = os.environ if environ is None else environ
        if self.endpoint is not None:
            return _logs_url(self.endpoint)
        direct = env.get("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "").strip()
        if direct:
            return direct
        base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
        return _logs_url(base) if base else None

    def unavailable(self, url: str | None) -> str | None:
        """Why events cannot be sent to ``url`` (``logs_url()``) from here, or None: no
        collector named, not an http(s) URL, or ``skillward[otel]`` not installed."""
        from importlib.util import find_spec  # noqa: PLC0415

        if url is None:
            return (
                "no collector is named: set audit.export_endpoint in the policy, or "
                "OTEL_EXPORTER_OTLP_ENDPOINT"
            )
        if not url.startswith(("http://", "https://")):
            return f"the collector {printable(url, limit=200)!r} is not an http(s) URL"
        if find_spec("opentelemetry.exporter.otlp.proto.http") is None:
            return "skillward[otel] is not installed (pip install 'skillward[otel]')"
        return None


def _logs_url(base: str) -> str:
    base = base.rstrip("/")
    return base if base.endswith("/v1/logs") else base + "/v1/logs"


def audit_export(
    rules: AuditRules | None = None, environ: Mapping[str, str] | None = None
) -> AuditExport | None:
    """The export a policy's ``rules`` require, or else the one the standard variables ask
    for (``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT`` set, and
    neither ``OTEL_SDK_DISABLED=true`` nor ``OTEL_LOGS_EXPORTER=none``); None: no export."""
    env = os.environ if environ is None else environ
    if rules is not None and rules.export is not None:
        return AuditExport(endpoint=rules.endpoint, required_by=rules.export)
    disabled = (
        env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"
        or env.get("OTEL_LOGS_EXPORTER", "").strip().lower() == "none"
    )
    if disabled:
        return None
    asked = AuditExport()
    return asked if asked.logs_url(env) is not None else None


@dataclass
class _Head:
    """Where this writer last left the chain: the file (device, inode) and its end after
    the write, the last line's number and hash."""

    file: tuple[int, int]
    end: int
    n: int
    digest: str


class AuditTrail:
    """Records audit events: always to the ``skillward.audit`` logger, and to ``path``
    as tamper-evident JSON lines when one is given (see the module docstring).

    ``keys`` holds the key that authenticates the trail's checkpoints and their counter
    (by default the user's key store: the OS keyring, or the file key store the user's
    ``config.toml`` chooses; a trail of its own, never the approval store's items).
    ``export`` also sends each event to an OpenTelemetry collector. :meth:`close`
    writes a checkpoint over the events this writer recorded; a trail not closed leaves
    them to the next writer's checkpoint.
    """

    def __init__(
        self,
        path: Path | None = None,
        *,
        clock: Callable[[], float] = time.time,
        limits: Limits | None = None,
        keys: KeyProvider | None = None,
        export: AuditExport | None = None,
    ) -> None:
        self.path = path
        self.clock = clock
        self.limits = limits or Limits()
        self.max_bytes = self.limits.max_audit_bytes
        self._keys = keys
        self._lock = threading.Lock()
        self._failed: str | None = None
        #: Why the last event could not be written to the file, or None: it was.
        self.unwritten: str | None = None
        self._head: _Head | None = None
        # The file this writer keeps open between events (see _opened), and its closer.
        self._kept: tuple[Path, int, weakref.finalize[[int], AuditTrail]] | None = None
        # Events this writer recorded since its last checkpoint, and when that was.
        self._since = 0
        self._checkpointed = time.monotonic()
        self._keys_checked = False
        self._warned: set[str] = set()
        #: Why events cannot be exported (said once at start-up), or None.
        self.export_problem: str | None = None
        self._exporter: Exporter | None = None
        if export is not None:
            self._start_export(export)

    # --- recording ------------------------------------------------------------------------

    def record(
        self,
        event: EventKind,
        decision: Outcome,
        *,
        reason: str,
        label: str | None = None,
        identity: str | None = None,
        skill_uri: str | None = None,
        content_hash: str | None = None,
        gate: GateKind | None = None,
        tool: str | None = None,
        target: str | None = None,
        resource_uri: str | None = None,
        scope: str | None = None,
        via: str | None = None,
    ) -> AuditEvent:
        """Record one decision, and return the event."""
        request = _CLIENT.get()
        entry = AuditEvent(
            time=self.clock(),
            event=event,
            decision=decision,
            label=_clean(label),
            identity=_clean(identity),
            skill_uri=_clean(skill_uri),
            content_hash=_clean(content_hash),
            reason=printable(reason, limit=_TEXT_LIMIT),
            gate=gate,
            tool=_clean(tool),
            target=_clean(target),
            resource_uri=_clean(resource_uri),
            scope=scope,
            client_unverified=_clean(request.client) if request is not None else None,
            via=_clean(via),
        )
        if logger.isEnabledFor(logging.INFO):  # the summary is built only for a handler
            logger.info("%s", entry.summary(), extra={"audit": entry})
        if self.path is not None:
            self._append(self.path, entry.model_dump_json().encode())
        if self._exporter is not None:
            served = request.tool if request is not None else None
            self._exporter.add(entry, current_trace(), served)
        return entry

    def close(self, *, flush: float = 2.0) -> None:
        """Write a checkpoint over the events this writer recorded since its last one, and
        give the export ``flush`` seconds at most to deliver what it holds (none when the
        collector is failing). The trail can still record afterwards."""
        if self.path is not None and self._since:
            with self._lock:
                try:
                    self._write(self.path, None)
                except OSError as error:
                    self._write_failed(self.path, error)
        with self._lock:
            self._let_go()
        if self._exporter is not None:
            self._exporter.flush(flush)

    def __enter__(self) -> AuditTrail:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- what this trail can be -----------------------------------------------------------

    def tamper_evidence(self) -> str | None:
        """Why this trail's events are not tamper-evident here, or None when they are: a
        file whose checkpoints the key store vouches for."""
        if self.path is None:
            return "it keeps no file (the host's AuditTrail was given no path)"
        if self.unwritten is not None and not self._writable_again(self.path):
            return f"its last event could not be written to its file ({self.unwritten})"
        why = self._keys_unavailable()
        if why is not None:
            return f"its checkpoints cannot be authenticated: {why}"
        return None

    def isolate_from(self, directory: Path) -> None:
        """Keep the trail's key out of ``directory``, a skill discovery path a host added,
        where the key store keeps it in files (the file key store's ``isolate_from``)."""
        if self.path is None:
            return
        isolate = getattr(self._provider(), "isolate_from", None)
        if callable(isolate):
            isolate(directory)

    def export_status(self) -> dict[str, object] | None:
        """What the export has done (None: there is none): its URL, events delivered,
        held, dropped, and why the collector last failed."""
        if self._exporter is None:
            return None if self.export_problem is None else {"problem": self.export_problem}
        return self._exporter.status()

    def _start_export(self, export: AuditExport) -> None:
        url = export.logs_url()
        why = export.unavailable(url)
        if why is None and url is not None:
            from skillward.trust._export import Exporter  # noqa: PLC0415

            self._exporter = Exporter(export, url, self.limits)
            return
        whose = f" ({export.required_by})" if export.required_by else ""
        self.export_problem = (
            f"audit events cannot be exported{whose}: {why}; they are kept in the local trail only"
        )
        logging.getLogger("skillward").warning("%s", self.export_problem)

    # --- the key store --------------------------------------------------------------------

    def _provider(self) -> KeyProvider:
        if self._keys is None:
            from skillward.trust._keyfile import user_keys  # noqa: PLC0415

            assert self.path is not None
            self._keys = user_keys(self.path, prefix="audit")
        return self._keys

    def _keys_unavailable(self) -> str | None:
        """Why the key store cannot authenticate checkpoints. Its first answer is asked
        under the trail's lock: the keyring's check writes an item of its own."""
        keys = self._provider()
        if self._keys_checked or self.path is None:
            return keys.unavailable()
        with self._lock:
            try:
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                fd = _open_for_append(self.path)
            except OSError as error:
                return f"the trail {self.path} cannot be opened ({error.strerror or error})"
            try:
                _lock(fd)
                why = keys.unavailable()
            finally:
                os.close(fd)
            self._keys_checked = True
            return why

    def _warn_once(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            logging.getLogger("skillward").warning("%s", printable(message, limit=1000))

    def _material(self) -> tuple[bytes | None, str | None, str]:
        """The key to code a checkpoint with and the key store's counter as it finds it
        (so a trail cut short before the checkpoint stays found after this writer moves
        the counter on); without a usable key, None and why. The key store may be slow
        (a keyring over D-Bus): this is asked before the chain's end is read."""
        keys = self._provider()
        why = keys.unavailable()
        self._keys_checked = True
        if why is None:
            try:
                key = keys.key(create=True)
                after = vouched(keys.counter()) if key is not None else None
            except RememberUnavailable as error:
                why = error.message
            else:
                if key is not None:
                    return key, after, ""
                why = "the key store holds no key"
        return None, None, why

    def _checkpoint(
        self,
        n: int,
        prev: str,
        *,
        opens: bool = False,
        material: tuple[bytes | None, str | None, str] | None = None,
    ) -> bytes:
        """The text of the checkpoint that is line ``n`` (lock held): its code and the
        counter (``material``, from :meth:`_material`). Without a usable key: no code,
        and no counter."""
        key, after, why = material if material is not None else self._material()
        if key is not None:
            code = checkpoint_code(key, n, prev, after, opens=opens)
            return checkpoint_body(code, self.clock(), after, opens=opens)
        if why not in self._warned:  # said by doctor, and when a policy requires it
            self._warned.add(why)
            logging.getLogger("skillward").info(
                "the audit trail's checkpoints are written without a key, so they vouch "
                "for nothing: %s",
                printable(why, limit=1000),
            )
        return checkpoint_body(None, self.clock(), opens=opens)

    def _counter(self, n: int, line: bytes) -> None:
        """Move the key store's counter to the checkpoint that is line ``n`` (lock held)."""
        try:
            self._provider().set_counter(counter_text(n, line))
        except RememberUnavailable as error:
            self._warn_once(
                "the key store's audit checkpoint counter could not be moved, so a trail "
                f"cut short would not show: {error.message}"
            )

    # --- writing --------------------------------------------------------------------------

    def _append(self, path: Path, body: bytes) -> None:
        with self._lock:
            try:
                try:
                    self._write(path, body)
                except FileNotFoundError:  # its directory is made on the first write only
                    if path.parent.is_dir():
                        raise
                    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                    self._write(path, body)
            except OSError as error:
                self._write_failed(path, error)
            else:
                self.unwritten = None

    def _writable_again(self, path: Path) -> bool:
        """Whether the file takes a line again, after one could not be written: a
        checkpoint is written to find out (it vouches for what is on file)."""
        with self._lock:
            # A checkpoint is due (it covers the events that could not be written), so
            # one is written even when none was recorded since the last.
            self._since = max(self._since, 1)
            try:
                self._write(path, None)
            except OSError:
                return False
            self.unwritten = None
            return True

    def _write_failed(self, path: Path, error: OSError) -> None:
        reason = f"{path}: {error.strerror or error}"
        self.unwritten = printable(reason, limit=500)
        if self._failed != reason:
            self._failed = reason
            logging.getLogger("skillward").warning(
                "the audit file cannot be written (%s); events still go to the "
                "skillward.audit logger",
                printable(reason, limit=500),
            )

    def _write(self, path: Path, body: bytes | None) -> None:
        """Append the event ``body`` (None: a checkpoint alone) to the file at ``path``,
        chained, rotating it first if it would pass the cap. Rotation and the write happen
        under the file's lock, and only if it is still the file at ``path``; one another
        writer rotated away (or anyone moved or removed) is let go and the file at ``path``
        opened. So a rotation never moves or replaces a file another writer is about to
        write, and the chain stays one line after another."""
        for attempt in range(_REOPENS + 1):
            fd = self._opened(path)
            locked = False
            try:
                locked = _lock(fd)
                info = os.fstat(fd)  # once locked: its size as the other writers left it
                if locked and attempt < _REOPENS:
                    if not _is_current(info, path):
                        self._let_go()
                        continue  # rotated while we waited: write to the new file
                    size = info.st_size
                    if size and body is not None and size + len(body) + CHAIN_ROOM > self.max_bytes:
                        os.replace(path, rotated(path))
                        self._let_go()
                        continue
                self._chain(fd, info, path, body, locked=locked)
            except BaseException:
                self._let_go()  # a file that failed is opened afresh next time
                raise
            finally:
                if locked and self._kept is not None:
                    _unlock(fd)
            if not _KEEP_OPEN:
                self._let_go()
            return

    def _opened(self, path: Path) -> int:
        """The file at ``path``, opened for appending: the one this writer keeps open
        between events while it is still there (each write checks that, under the lock),
        so an event costs no open and close of its own."""
        kept = self._kept
        if kept is not None:
            if kept[0] == path:
                return kept[1]
            self._let_go()
        fd = _open_for_append(path)
        self._kept = (path, fd, weakref.finalize(self, os.close, fd))
        return fd

    def _let_go(self) -> None:
        """Close the file this writer kept open, if any (which releases its lock)."""
        kept, self._kept = self._kept, None
        if kept is not None:
            kept[2]()

    def _chain(
        self, fd: int, info: os.stat_result, path: Path, body: bytes | None, *, locked: bool
    ) -> None:
        """Write ``body`` as the chain's next line (with the checkpoints due) in one write
        (``info``: the file's status, taken under its lock)."""
        file, size = (info.st_dev, info.st_ino), info.st_size
        head = self._head
        if head is not None and head.file == file and head.end == size:
            n, digest, newline = head.n, head.digest, True
        else:
            n, digest, newline = self._tail(fd, size, path)
        if body is not None and newline and not (locked and (size == 0 or self._due(1))):
            # The usual event: one line, no checkpoint due with it.
            n += 1
            line = chain_line(body, n, digest)
            data = line + b"\n"
            os.write(fd, data)
            self._head = _Head(file, size + len(data), n, line_hash(line))
            self._since += 1
            return
        self._chain_checkpointed(fd, file, path, body, locked=locked, at=(size, n, digest, newline))

    def _chain_checkpointed(
        self,
        fd: int,
        file: tuple[int, int],
        path: Path,
        body: bytes | None,
        *,
        locked: bool,
        at: tuple[int, int, str, bool],
    ) -> None:
        """:meth:`_chain` with the checkpoints due (``at``: the file's size, and the
        chain's end in it as read)."""
        size, n, digest, newline = at
        material = None
        if locked:
            material, size, end = self._before_checkpoint(fd, size, path, (n, digest, newline))
            n, digest, newline = end
        lines: list[bytes] = []
        signed: tuple[int, bytes] | None = None  # the last checkpoint with a code
        ends_checkpointed = False

        def add(text: bytes) -> bytes:
            nonlocal n, digest
            n += 1
            line = chain_line(text, n, digest)
            digest = line_hash(line)
            lines.append(line)
            return line

        def checkpoint(*, opens: bool = False) -> None:
            nonlocal signed, ends_checkpointed
            line = add(self._checkpoint(n + 1, digest, opens=opens, material=material))
            if not line.startswith(b'{"checkpoint":null'):
                signed = (n, line)
            ends_checkpointed = True

        if size == 0 and locked:
            checkpoint(opens=True)  # a new file begins with one (the chain's first, if new)
        if body is not None:
            add(body)
            self._since += 1
            ends_checkpointed = False
        if locked and self._since and not ends_checkpointed and (body is None or self._due()):
            checkpoint()
        if not lines:
            return
        data = b"\n".join(lines) + b"\n"
        if not newline:
            data = b"\n" + data  # never join a line cut short
        # One write: with O_APPEND, concurrent writers never interleave.
        os.write(fd, data)
        self._head = _Head(file, size + len(data), n, digest)
        if signed is not None:
            self._counter(*signed)
        if ends_checkpointed:
            self._since = 0
            self._checkpointed = time.monotonic()

    def _before_checkpoint(
        self, fd: int, size: int, path: Path, end: tuple[int, str, bool]
    ) -> tuple[tuple[bytes | None, str | None, str], int, tuple[int, str, bool]]:
        """What a checkpoint is coded with, asked of the key store first, and then the
        chain's end as the file has it now. The key store may take longer than another
        writer waits for the lock (``_LOCK_WAIT``), after which it writes without it: an
        ``end`` read before the key store was asked could be the one that writer chained
        on, and two lines would have one number."""
        material = self._material()
        now = os.fstat(fd).st_size
        return material, now, end if now == size else self._tail(fd, now, path)

    def _due(self, pending: int = 0) -> bool:
        """Whether a checkpoint is due after the events recorded since the last one (and
        ``pending`` more)."""
        return self._since + pending >= self.limits.audit_checkpoint_events or (
            time.monotonic() - self._checkpointed >= self.limits.audit_checkpoint_seconds
        )

    def _tail(self, fd: int, size: int, path: Path) -> tuple[int, str, bool]:
        """The chain's last line number and hash, and whether the file ends a line, read
        from the file's end (or, for an empty file, from the one rotated away)."""
        if size == 0:
            previous = self._previous(path)
            return previous if previous is not None else (0, _EMPTY, True)
        for window in (_TAIL_FIRST, _TAIL):  # the usual last line is in the first
            start = max(0, size - window)
            data = os.pread(fd, size - start, start)
            newline = data.endswith(b"\n")
            lines = data.split(b"\n")
            if newline:
                lines.pop()
            if start > 0:
                lines = lines[1:]  # the first may be the end of a longer line
            for index in range(len(lines) - 1, -1, -1):
                found = link(lines[index])
                if found is not None:
                    return found.n + len(lines) - 1 - index, line_hash(lines[-1]), newline
            if start == 0:
                break  # the whole file was read
        # No chained line: the chain begins here, bound to everything the file holds.
        whole = hashlib.sha256()
        offset = 0
        while offset < size:
            chunk = os.pread(fd, min(1 << 20, size - offset), offset)
            if not chunk:
                break
            whole.update(chunk)
            offset += len(chunk)
        if not newline:
            whole.update(b"\n")
        return 0, whole.hexdigest(), newline

    def _previous(self, path: Path) -> tuple[int, str, bool] | None:
        """The last chained line of the file rotated away, for a new file's first line."""
        try:
            fd = os.open(rotated(path), READ_FLAGS)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
                return None
            head = self._head
            if head is not None and (head.file, head.end) == (
                (info.st_dev, info.st_ino),
                info.st_size,
            ):
                return head.n, head.digest, True
            n, digest, _ = self._tail(fd, info.st_size, rotated(path))
            return (n, digest, True) if n else None
        finally:
            os.close(fd)


def _lock(fd: int) -> bool:
    """Take the file's lock (held until released or ``fd`` is closed), waiting
    ``_LOCK_WAIT`` at most for another writer; False if it stays busy. Windows has no
    such lock: writers there rotate without it."""
    if sys.platform == "win32":
        return True
    deadline = None
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            now = time.monotonic()
            deadline = deadline if deadline is not None else now + _LOCK_WAIT
            if now >= deadline:
                return False
            time.sleep(_LOCK_POLL)
        else:
            return True


def _unlock(fd: int) -> None:
    if sys.platform != "win32":
        fcntl.flock(fd, fcntl.LOCK_UN)


def _is_current(ours: os.stat_result, path: Path) -> bool:
    """Whether the file open with status ``ours`` is still the file at ``path`` (no writer
    rotated it away)."""
    try:
        on_disk = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (on_disk.st_dev, on_disk.st_ino) == (ours.st_dev, ours.st_ino)


def _open_for_append(path: Path) -> int:
    fd = os.open(path, _OPEN_FLAGS, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    return fd


def rotated(path: Path) -> Path:
    """Where the previous audit file is kept."""
    return path.with_name(path.name + ".1")


@dataclass(frozen=True, slots=True)
class AuditLog:
    """Events read back from an audit file, oldest first."""

    events: tuple[AuditEvent, ...]
    #: Lines that were not events (a torn write, or a file changed by hand).
    skipped: int = 0


def _lines(path: Path, limit: int) -> Iterator[bytes]:
    for source in (rotated(path), path):
        try:
            data = read_regular_file(source, limit, cut=True)
        except FileNotFoundError:
            continue
        yield from data.split(b"\n")


def read_events(
    path: Path, *, since: float | None = None, limits: Limits | None = None
) -> AuditLog:
    """The events in ``path`` (and its rotated predecessor), at or after ``since``.

    Each line is parsed as an :class:`AuditEvent` (its chain fields aside; checkpoints
    are not events); anything else is counted in ``skipped``, never shown as an event.
    Reading checks nothing: :func:`verify_trail` does.
    """
    limit = (limits or Limits()).max_audit_bytes + _SLACK
    events: list[AuditEvent] = []
    skipped = 0
    for line in _lines(path, limit):
        if not line.strip():
            continue
        chained = link(line)
        if chained is not None and chained.checkpoint:
            continue
        try:
            event = AuditEvent.model_validate_json(chained.body if chained else line)
        except ValidationError:
            skipped += 1
            continue
        if since is None or event.time >= since:
            events.append(event)
    return AuditLog(tuple(events), skipped)


def verify_trail(
    path: Path, *, keys: KeyProvider | None = None, limits: Limits | None = None
) -> TrailVerdict:
    """Verify the trail at ``path`` and its rotated predecessor against the key store
    ``keys`` (by default the user's, as :class:`AuditTrail` uses it): intact, or the first
    line that breaks and how (``_chain.py``). Read under the trail's lock, so a writer's
    line is never read half written. OSError if the trail cannot be read."""
    if keys is None:
        from skillward.trust._keyfile import user_keys  # noqa: PLC0415

        keys = user_keys(path, prefix="audit")
    limit = (limits or Limits()).max_audit_bytes + _SLACK
    try:
        fd = os.open(path, READ_FLAGS)
    except FileNotFoundError:
        fd = None
    try:
        if fd is not None:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(f"{path} is not a regular file")
            _lock(fd)
        sources = []
        for source in (rotated(path), path):
            try:
                data = read_regular_file(source, limit)
            except FileNotFoundError:
                continue
            sources.append(Source(source.name, data))
        why = keys.unavailable()
        key = counter = None
        if why is None:
            try:
                key = keys.key(create=False)
                counter = keys.counter()
            except RememberUnavailable as error:
                why = error.message
            else:
                if key is None:
                    why = "the key store holds no key for this trail"
    finally:
        if fd is not None:
            os.close(fd)
    return verify(sources, key=key, counter=counter, unauthenticated=why)


_DURATION = re.compile(r"(\d{1,9})([smhdw])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> float:
    """Seconds in a duration such as ``30m``, ``12h``, ``7d`` or ``1h30m``."""
    stripped = text.strip()
    pos = 0
    total = 0
    for match in _DURATION.finditer(stripped):
        if match.start() != pos:
            break
        total += int(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if not stripped or pos != len(stripped) or total <= 0:
        raise UsageError(
            f"expected a duration such as 30m, 12h, 7d or 1h30m, not {printable(text, limit=80)!r}"
        )
    return float(total)
