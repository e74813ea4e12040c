"""Limits and knobs, in one frozen object.

Every bound skillward enforces lives here, so a reviewer can read the whole
exposure budget in one place. Limits are enforced while reading, not after.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from skillward.core.errors import ConfigError

__all__ = ["SEP_MAX_SKILL_BYTES", "SEP_MAX_SKILL_FILES", "Limits"]

#: SEP-2640's per-skill limits. Hosts must accept skills up to these.
SEP_MAX_SKILL_FILES = 512
SEP_MAX_SKILL_BYTES = 16 * 1024 * 1024
#: Room a message needs beyond a file's base64: the JSON-RPC envelope, a URI at its cap.
_ENVELOPE_BYTES = 4096


@dataclass(frozen=True, kw_only=True, slots=True)
class Limits:
    """Bounds on everything skillward reads from an origin.

    The defaults follow SEP-2640 where it sets a number and are otherwise chosen
    to be generous for honest servers and cheap against hostile ones.
    """

    #: Files per skill, SKILL.md included (SEP-2640 minimum: 512).
    max_skill_files: int = SEP_MAX_SKILL_FILES
    #: Sum of ``size`` over a skill's files (SEP-2640 minimum: 16 MiB).
    max_skill_bytes: int = SEP_MAX_SKILL_BYTES
    #: Bytes of one SKILL.md frontmatter block, delimiters excluded; also of the copy a
    #: listing entry carries, measured as JSON (with the depth and node caps below).
    max_frontmatter_bytes: int = 64 * 1024
    #: Nesting depth of collections inside the frontmatter.
    max_frontmatter_depth: int = 16
    #: Scalars, sequences and mappings inside the frontmatter.
    max_frontmatter_nodes: int = 4096
    #: Characters of one URI (a directory child's too).
    max_uri_length: int = 2048
    #: Pages one listing walk may fetch.
    max_list_pages: int = 1000
    #: Entries one listing walk may collect.
    max_list_entries: int = 20_000
    #: Bytes of one ``skills/list`` result, measured as JSON before any entry is built.
    max_list_response_bytes: int = 2 * 1024 * 1024
    #: Bytes of all the ``skills/list`` results of one listing walk, measured the same way:
    #: room for about 15,000 entries of a few files each.
    max_listing_bytes: int = 12 * 1024 * 1024
    #: Bytes of one ``skills/get`` result, measured as JSON before its entry is built: room
    #: for an entry of 512 files with long URIs and frontmatter at its cap.
    max_get_response_bytes: int = 2 * 1024 * 1024
    #: Manifest items (files) over all the entries of one listing walk.
    max_listed_files: int = 65_536
    #: Folder levels scanned below a local skills directory.
    max_local_scan_depth: int = 6
    #: Directory entries one local skills directory scan may visit.
    max_local_scan_entries: int = 2000
    #: Children one directory walk may collect.
    max_directory_entries: int = 10_000
    #: Bytes of one ``resources/directory/read`` result, measured as JSON before any child
    #: is built.
    max_directory_response_bytes: int = 2 * 1024 * 1024
    #: Bytes of all the ``resources/directory/read`` results of one directory walk,
    #: measured the same way: about 400 bytes for each of ``max_directory_entries``.
    max_directory_bytes: int = 4 * 1024 * 1024
    #: Bytes of one JSON-RPC message as it arrives (a stdio line, an HTTP response body,
    #: one server-sent event), refused while it is read, before it is parsed. None: half
    #: as much again as ``max_resource_bytes`` (24 MiB at the defaults), room for such a
    #: file as base64 or as escaped text (:attr:`message_bytes`). A number must leave room
    #: for the base64.
    max_message_bytes: int | None = None
    #: JSON values in one message, counted before it is parsed as the ``[``, ``{`` and
    #: ``,`` outside strings. Parsed, each costs up to about 70 bytes (300 on the SDK's
    #: HTTP path) whatever its size as text, so this bounds what one message can cost.
    max_message_nodes: int = 256 * 1024
    #: Requests a server may have sent that the client has not answered yet (sampling,
    #: elicitation, roots, pings): the SDK starts a task for each, and a server that
    #: floods them while it reads none of the answers would have them pile up without end.
    max_server_requests: int = 64
    #: Decoded bytes of one resource read (a single file can't exceed the skill cap).
    max_resource_bytes: int = SEP_MAX_SKILL_BYTES
    #: Overall deadline, in seconds, for one operation (the handshake, and a whole listing
    #: walk, included).
    operation_timeout: float = 60.0
    #: Deadline, in seconds, for any single request (the handshake included).
    request_timeout: float = 30.0
    #: Seconds a stdio server has to exit once its stdin is closed (after a normal close;
    #: one that missed a deadline gets SIGTERM at once), and again after SIGTERM, before
    #: SIGKILL. Spent in a task of the host's own: no call waits for it, and leaving the
    #: host only for a server still within it after a normal close.
    exit_timeout: float = 2.0
    #: Bytes of a stdio server's stderr kept on disk (its log and one rotated predecessor).
    max_server_log_bytes: int = 1024 * 1024
    #: Bytes the disk cache keeps per server label; least recently used files go first.
    max_cache_bytes: int = 256 * 1024 * 1024
    #: Seconds a file stays in the disk cache after it was written (None: until evicted).
    max_cache_age: float | None = None
    #: Bytes of the approval store read at most (about 100,000 typical approvals).
    max_store_bytes: int = 64 * 1024 * 1024
    #: Seconds to wait for another process to finish writing the approval store.
    store_lock_timeout: float = 30.0
    #: Bytes of the audit file before it is rotated (it and one predecessor are kept).
    max_audit_bytes: int = 8 * 1024 * 1024
    #: Events an audit trail writer records between checkpoints, and seconds after which
    #: its next event brings one: the events after the newest checkpoint are not yet
    #: vouched for (``docs/host.md``).
    audit_checkpoint_events: int = 1000
    audit_checkpoint_seconds: float = 60.0
    #: Audit events held for export while the collector cannot be reached; past it the
    #: oldest is dropped (and counted). The local trail keeps every one.
    max_audit_export_events: int = 10_000
    #: Bytes of one HTTP request body ``skillward gateway --http`` accepts, counted as it
    #: arrives; a larger body is answered 413 before the rest is read. Also the bytes of
    #: one request line on the gateway's approval socket, read no further.
    max_gateway_request_bytes: int = 1024 * 1024
    #: Bytes of one policy file read at most; a larger one cannot be used (fail closed).
    max_policy_bytes: int = 1024 * 1024
    #: Characters the tools one skill requests take to show whole, together, in their
    #: visible form (``core/visible.py``): a skill whose ``allowed-tools`` needs more is
    #: offered no tool grant, as nothing is granted that a person was not shown.
    max_shown_tools: int = 4000
    #: Characters a code-execution call's arguments (or its command) take to show whole
    #: in their visible form: a call that needs more is denied without asking anyone.
    max_shown_arguments: int = 16 * 1024
    #: Characters of the approval question the gateway puts in an elicitation form: a
    #: longer one is not asked there (the approval page and ``skillward approve`` show
    #: it whole).
    max_shown_question: int = 16 * 1024
    #: Bytes the ``enum`` of refs takes in the model tools' schemas, as JSON, over both
    #: tools that take a ref: past it the enum is left out (the model calls
    #: ``list_skills``), so a catalog of thousands of skills costs no schema that size.
    max_tool_enum_bytes: int = 16 * 1024

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is None and field.default is None:
                continue  # an optional bound that is not set
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ConfigError(f"Limits.{field.name} must be a positive number, not {value!r}")
        if self.max_skill_files < SEP_MAX_SKILL_FILES or self.max_skill_bytes < SEP_MAX_SKILL_BYTES:
            raise ConfigError(
                "Limits below SEP-2640's per-skill minimum (512 files, 16 MiB) would refuse "
                "conforming skills"
            )
        if self.max_message_bytes is not None and self.max_message_bytes < self._base64_room():
            raise ConfigError(
                f"Limits.max_message_bytes must leave room for a max_resource_bytes file sent "
                f"as base64: at least {self._base64_room()} bytes"
            )

    def _base64_room(self) -> int:
        return 4 * -(-self.max_resource_bytes // 3) + _ENVELOPE_BYTES

    @property
    def message_bytes(self) -> int:
        """The cap on one message: ``max_message_bytes``, or what it is by default."""
        if self.max_message_bytes is not None:
            return self.max_message_bytes
        return max(self.max_resource_bytes * 3 // 2, self._base64_room())
