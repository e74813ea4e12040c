"""The error hierarchy: split by fault, one line naming label and URI, safe to print."""

from __future__ import annotations

import pytest

from skillward.core import errors
from skillward.core.errors import (
    ApprovalDenied,
    ApprovalRequired,
    DigestMismatch,
    IntegrityError,
    OriginError,
    PolicyDenied,
    ServerRejected,
    SkillwardError,
    StoreTampered,
    TransportError,
    UsageError,
    printable,
)

FAULTS = (OriginError, TransportError, PolicyDenied, ApprovalRequired, StoreTampered, UsageError)


def test_every_public_error_is_a_skillward_error_under_exactly_one_fault() -> None:
    for name in errors.__all__:
        obj = getattr(errors, name)
        if not isinstance(obj, type):
            continue
        assert issubclass(obj, SkillwardError), name
        if obj is SkillwardError or obj in FAULTS:
            continue
        assert sum(issubclass(obj, fault) for fault in FAULTS) == 1, name


def test_integrity_errors_are_origin_faults() -> None:
    assert issubclass(DigestMismatch, IntegrityError)
    assert issubclass(IntegrityError, OriginError)


def test_message_names_server_label_and_uri() -> None:
    error = DigestMismatch("digest mismatch", server="acme", uri="skill://x/SKILL.md")
    assert str(error) == "server 'acme': skill://x/SKILL.md: digest mismatch"
    assert error.server == "acme"
    assert error.uri == "skill://x/SKILL.md"


def test_with_context_fills_only_what_is_missing() -> None:
    error = DigestMismatch("bad", uri="skill://x/SKILL.md")
    error.with_context(server="acme", uri="skill://other/SKILL.md")
    assert (error.server, error.uri) == ("acme", "skill://x/SKILL.md")
    assert str(error).startswith("server 'acme': skill://x/SKILL.md")


def test_diagnostics_include_an_actionable_hint() -> None:
    assert "hint:" in DigestMismatch("bad").diagnostics()
    assert "hint:" in ApprovalDenied("no").diagnostics()


def test_exit_codes_follow_the_documented_table() -> None:
    assert ApprovalRequired.exit_code == 3
    assert DigestMismatch.exit_code == 4
    assert PolicyDenied.exit_code == 5
    assert TransportError.exit_code == 6
    assert UsageError.exit_code == 2


def test_server_rejected_keeps_the_json_rpc_code() -> None:
    error = ServerRejected("unknown skill", code=-32602, server="acme")
    assert error.code == -32602
    assert "-32602" in str(error)


@pytest.mark.threat("T23")
@pytest.mark.parametrize("hostile", ["\x1b[2J", "\u202e", "\u200b", "\U000e0041", "\x07", "\r"])
def test_untrusted_text_cannot_drive_the_terminal(hostile: str) -> None:
    error = OriginError(f"bad {hostile} thing", server="acme", uri=f"skill://x{hostile}/SKILL.md")
    assert hostile not in str(error)
    assert hostile not in printable(hostile)


def test_printable_bounds_length() -> None:
    assert len(printable("x" * 10_000, limit=50)) == 53
