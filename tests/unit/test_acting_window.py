"""The acting window alone: real activations and blocks, no host around it.

Its invariant is that it closes only when the host says so: a failure ends an
activation's content and keeps it (and its gates) in the window.
"""

from __future__ import annotations

import pytest

from skillward.core.context import ContextBlock, catalog_block, error_block, skill_block
from skillward.core.errors import DigestMismatch, SkillChanged, UsageError
from skillward.core.origins import Origin
from skillward.core.registry import SkillRecord
from skillward.host._window import ActingWindow
from skillward.host.types import Activation
from tests.support.approvals import make_entry

ACME = Origin("mcp", "acme")
OTHER = Origin("mcp", "other")


def activation(
    root: str = "skill://acme/billing/refunds", origin: Origin = ACME, tools: tuple[str, ...] = ()
) -> Activation:
    entry = make_entry(root=root)
    record = SkillRecord.from_entry(origin, entry)
    block = skill_block(
        origin=origin,
        uri=entry.uri,
        digest=None,
        body="body\n",
        root=str(entry.root) + "/",
        files=["SKILL.md"],
        verified=True,
    )
    return Activation(record, block, entry, granted_tools=tools)


@pytest.mark.threat("T33")
def test_a_failure_ends_an_activations_content_and_keeps_it_in_the_window() -> None:
    window = ActingWindow()
    held = activation(tools=("Read",))
    window.open(held)
    first = DigestMismatch("bad", server="acme")
    window.end(held.record.key, first)
    window.end(held.record.key, DigestMismatch("again", server="acme"))
    [kept] = window.active()
    assert kept.ended is first  # the first reason stays
    assert window.acting_mcp() == [kept]  # its gates still apply
    assert window.granted_tools() == ()  # its grants do not
    changed = SkillChanged("changed", server="acme")
    window.end(held.record.key, changed, replace=True)
    assert window.active()[0].ended is changed


def test_closing_an_origin_closes_only_that_origins_activations() -> None:
    window = ActingWindow()
    window.open(activation())
    window.open(activation("skill://other/x", OTHER))
    window.close_origin("acme")
    assert [a.record.origin.label for a in window.active()] == ["other"]


def test_the_deepest_skill_root_is_tried_first() -> None:
    window = ActingWindow()
    window.open(activation("skill://acme/a"))
    window.open(activation("skill://acme/a/b/c"))
    window.open(activation("skill://other/a/b/c/d", OTHER))
    roots = [str(a.entry.root) for a in window.acting_on("acme") if a.entry is not None]
    assert roots == ["skill://acme/a/b/c", "skill://acme/a"]


@pytest.mark.threat("T16")
def test_what_reached_the_model_counts_until_the_context_is_reset() -> None:
    seen: list[ContextBlock] = []
    window = ActingWindow(seen.append)
    window.emit(error_block(DigestMismatch("x", server="other"), origin=OTHER))
    window.open(activation())
    assert window.context_origins() == {"acme", "other"}
    assert len(seen) == 1
    window.close_all()
    assert window.context_origins() == set()
    assert window.active() == []


def test_granted_tools_are_the_union_of_the_windows_grants_each_once() -> None:
    window = ActingWindow()
    window.open(activation(tools=("Read", "Bash(git:*)")))
    window.open(activation("skill://other/x", OTHER, tools=("Read", "Write")))
    assert window.granted_tools() == ("Read", "Bash(git:*)", "Write")


def test_a_dynamic_skills_budget_starts_over_with_each_activation_and_ends_with_it() -> None:
    window = ActingWindow()
    key = activation().record.key
    window.spend(key, 10, start=True)
    window.spend(key, 5)
    assert window.spent(key) == 15
    window.spend(key, 0, start=True)
    assert window.spent(key) == 0
    window.spend(key, 7)
    window.close(key)
    assert window.spent(key) == 0


def test_one_origins_calls_share_one_lock_and_others_do_not() -> None:
    window = ActingWindow()
    assert window.lock("acme") is window.lock("acme")
    assert window.lock("acme") is not window.lock("other")
    assert ActingWindow().lock("acme") is not window.lock("acme")


def test_a_shut_window_takes_no_activation_and_hands_out_nothing() -> None:
    seen: list[ContextBlock] = []
    window = ActingWindow(seen.append)
    window.open(activation())
    window.shut()
    assert window.active() == []
    with pytest.raises(UsageError, match="session is closed"):
        window.open(activation())
    with pytest.raises(UsageError):
        window.emit(catalog_block([]))
    with pytest.raises(UsageError):
        window.acting_mcp()  # a closed context authorizes nothing
    assert seen == []
