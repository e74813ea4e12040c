"""The error hierarchy: split by fault, one line naming label and URI, safe to print."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

import skillward
from skillward.core import errors
from skillward.core._ignorable import DEFAULT_IGNORABLE
from skillward.core.errors import (
    AmbiguousName,
    ApprovalDenied,
    ApprovalError,
    ApprovalTimedOut,
    DeadlineExceeded,
    DigestMismatch,
    FrontmatterMismatch,
    IntegrityError,
    OriginError,
    PolicyDenied,
    RememberUnavailable,
    ServerDisconnected,
    ServerRejected,
    SkillwardError,
    StoreTampered,
    TransportError,
    UsageError,
    printable,
)

#: What names the library's API: a person at the command line can do nothing with it.
PYTHON_API = re.compile(r"SkillHost|HostConfig|ApprovalBook|Limits\.|approver=|\bhost\.\w")
#: What names the command's options or commands: a host's code has no use for them.
COMMAND_LINE = re.compile(r"--[a-z]|skillward (approve|load|read|show|list)\b")

FAULTS = (OriginError, TransportError, PolicyDenied, ApprovalError, StoreTampered, UsageError)


def test_every_public_error_is_a_skillward_error_under_exactly_one_fault() -> None:
    for name in errors.__all__:
        obj = getattr(errors, name)
        if not isinstance(obj, type):
            continue
        assert issubclass(obj, SkillwardError), name
        if obj is SkillwardError or obj in FAULTS:
            continue
        assert sum(issubclass(obj, fault) for fault in FAULTS) == 1, name


def test_a_timed_out_approval_is_its_own_error_and_never_a_denial() -> None:
    late = ApprovalTimedOut("no answer in time")
    assert isinstance(late, ApprovalError)
    assert not isinstance(late, ApprovalDenied)
    assert late.exit_code == ApprovalDenied.exit_code == 3
    assert "in time" in late.hint


def test_the_old_approval_error_name_still_works_and_warns_each_time() -> None:
    for _ in range(2):
        with pytest.warns(DeprecationWarning, match="use ApprovalError"):
            assert skillward.ApprovalRequired is ApprovalError  # type: ignore[attr-defined]
    with pytest.warns(DeprecationWarning, match="skillward.core.errors.ApprovalRequired"):
        from skillward.core.errors import ApprovalRequired  # type: ignore[attr-defined]  # noqa: PLC0415
    assert ApprovalRequired is ApprovalError
    assert "ApprovalRequired" not in skillward.__all__


def test_a_name_neither_public_nor_deprecated_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        skillward.ApprovalRequested  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        errors.ApprovalRequested  # type: ignore[attr-defined]


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
    assert ApprovalError.exit_code == 3
    assert DigestMismatch.exit_code == 4
    assert PolicyDenied.exit_code == 5
    assert TransportError.exit_code == 6
    assert UsageError.exit_code == 2


def test_server_rejected_keeps_the_json_rpc_code() -> None:
    error = ServerRejected("unknown skill", code=-32602, server="acme")
    assert error.code == -32602
    assert "-32602" in str(error)


@pytest.mark.threat("T23")
@pytest.mark.parametrize(
    "hostile",
    # The last four are printable to Python, and drawn as nothing.
    [
        "\x1b[2J",
        "\u202e",
        "\u200b",
        "\U000e0041",
        "\x07",
        "\r",
        "\u3164",
        "\ufe0f",
        "\u034f",
        "\U000e0101",
    ],
)
def test_untrusted_text_cannot_drive_the_terminal(hostile: str) -> None:
    error = OriginError(f"bad {hostile} thing", server="acme", uri=f"skill://x{hostile}/SKILL.md")
    assert hostile not in str(error)
    assert hostile not in printable(hostile)


@pytest.mark.threat("T23")
@given(
    st.lists(
        st.characters(codec=None, exclude_categories=())
        | st.sampled_from([chr(low) for low, _ in DEFAULT_IGNORABLE])
    ).map("".join)
)
def test_printable_text_holds_nothing_drawn_as_nothing(text: str) -> None:
    shown = printable(text, limit=10_000)
    assert shown.isprintable()
    assert not any(low <= ord(ch) <= high for ch in shown for low, high in DEFAULT_IGNORABLE)


def test_printable_bounds_length() -> None:
    assert len(printable("x" * 10_000, limit=50)) == 53


def every_error() -> list[SkillwardError]:
    """One of each error, as raised with no hint of its own."""
    made: list[SkillwardError] = []
    for name in errors.__all__:
        kind = getattr(errors, name)
        if not isinstance(kind, type):
            continue
        if kind is ServerRejected:
            made.append(ServerRejected("no", code=-1))
        elif kind is AmbiguousName:
            made.append(AmbiguousName("two", candidates=["a:x", "b:x"]))
        elif kind is FrontmatterMismatch:
            made.append(FrontmatterMismatch("differs", fields=["name"]))
        else:
            made.append(kind("failed"))
    return made


@pytest.mark.parametrize("error", every_error(), ids=lambda error: type(error).__name__)
def test_each_hint_is_worded_for_its_audience(error: SkillwardError) -> None:
    assert not PYTHON_API.search(error.command_hint), error.command_hint
    assert not COMMAND_LINE.search(error.hint), error.hint


def test_the_library_keeps_its_api_hint_and_the_command_gets_its_own() -> None:
    disconnected = ServerDisconnected("the connection closed", server="acme")
    assert "SkillHost.reconnect" in disconnected.hint
    assert "run the command again" in disconnected.command_hint
    late = DeadlineExceeded("too slow")
    assert "Limits.operation_timeout" in late.hint
    assert "--timeout SECONDS" in late.command_hint
    assert "--approve-once" in ApprovalError("approve first").command_hint


def test_remember_unavailable_names_the_file_key_store_and_doctor_only_for_the_command() -> None:
    unavailable = RememberUnavailable("no usable keyring")
    for hint in (unavailable.hint, unavailable.command_hint):
        assert 'approvals.key_store = "file"' in hint
    assert "FileApprovalStore" in unavailable.hint
    assert "skillward doctor" not in unavailable.hint
    assert "`skillward doctor`" in unavailable.command_hint


def test_a_hint_given_where_the_error_is_raised_is_for_both_unless_worded_apart() -> None:
    given = ServerDisconnected("gone", hint="Start it again.")
    assert given.command_hint == given.hint == "Start it again."
    apart = ServerDisconnected("gone", hint="Call it.", command_hint="Run it.")
    assert (apart.hint, apart.command_hint) == ("Call it.", "Run it.")
    # A subclass's own hint is not given the command hint of the class above it.
    declined = ApprovalDenied("no")
    assert declined.command_hint == declined.hint == ApprovalDenied.default_hint
