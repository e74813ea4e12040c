"""An administrator's ``audit.require_tamper_evident`` on a real SkillHost: no skill loads
while the host's trail cannot be tamper-evident, the refusal says why and whose rule it
is, and it is said at start-up; with a key store that works, the same load goes ahead."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest

from skillward.core.errors import PolicyDenied
from skillward.host.skillhost import HostConfig, SkillHost
from skillward.trust.audit import AuditTrail, read_events, verify_trail
from tests.support.doubles import Approving
from tests.support.gated import Served, build_gated_tree, serve
from tests.support.keys import Keyring, MemoryKeys
from tests.support.policies import PolicyDirs

pytestmark = [pytest.mark.anyio, pytest.mark.threat("T62")]

WAIT = 20
REQUIRE = 'version = 1\ncontact = "IT"\n[audit]\nrequire_tamper_evident = true\n'


@pytest.fixture
def served(tmp_path: Path) -> Served:
    root = tmp_path / "acme"
    build_gated_tree(root, tmp_path / "marker")
    return serve(root, "acme")


async def load(served: Served, dirs: PolicyDirs, audit: AuditTrail) -> None:
    config = HostConfig(local_dirs=())
    with anyio.fail_after(WAIT):
        async with SkillHost(
            config=config, approver=Approving(), policy=dirs.load(), audit=audit
        ) as host:
            await host.connect(served.spec)
            await host.activate("acme:plain")


async def test_no_skill_loads_while_the_trail_cannot_be_vouched_for(
    tmp_path: Path, served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    dirs = PolicyDirs(tmp_path / "policy")
    dirs.admin(REQUIRE)
    path = tmp_path / "audit.jsonl"
    locked = AuditTrail(path, keys=MemoryKeys(Keyring(refuse="the keyring is locked")))
    with (
        caplog.at_level(logging.WARNING, logger="skillward"),
        pytest.raises(PolicyDenied) as refused,
    ):
        await load(served, dirs, locked)
    message = refused.value.message
    assert "tamper-evident audit trail" in message
    assert "the keyring is locked" in message
    assert "audit.require_tamper_evident = True" in message
    assert "contact: IT" in message
    assert "skillward doctor" in (refused.value.hint or "")
    # Said when the host started, before anyone asked for a skill.
    assert any("tamper-evident audit trail" in r.getMessage() for r in caplog.records)
    (denial,) = read_events(path).events
    assert denial.event == "policy_denial"
    assert denial.skill_uri == "skill://plain/SKILL.md"


async def test_a_host_whose_trail_keeps_no_file_loads_nothing_under_that_policy(
    tmp_path: Path, served: Served
) -> None:
    dirs = PolicyDirs(tmp_path / "policy")
    dirs.admin(REQUIRE)
    with pytest.raises(PolicyDenied) as refused:
        await load(served, dirs, AuditTrail())
    assert "it keeps no file" in refused.value.message


async def test_with_a_key_store_that_works_the_same_load_goes_ahead_and_is_vouched_for(
    tmp_path: Path, served: Served
) -> None:
    dirs = PolicyDirs(tmp_path / "policy")
    dirs.admin(REQUIRE)
    path = tmp_path / "audit.jsonl"
    keyring = Keyring()
    trail = AuditTrail(path, keys=MemoryKeys(keyring))
    await load(served, dirs, trail)
    trail.close()
    assert [e.event for e in read_events(path).events] == ["approval"]
    assert verify_trail(path, keys=MemoryKeys(keyring)).intact


async def test_a_load_whose_approval_cannot_be_written_to_the_trail_uses_nothing(
    tmp_path: Path, served: Served
) -> None:
    # The trail was fine at start-up; then its file could no longer be written.
    dirs = PolicyDirs(tmp_path / "policy")
    dirs.admin(REQUIRE)
    path = tmp_path / "audit.jsonl"
    trail = AuditTrail(path, keys=MemoryKeys(Keyring()))
    config = HostConfig(local_dirs=())
    with anyio.fail_after(WAIT):
        async with SkillHost(
            config=config, approver=Approving(), policy=dirs.load(), audit=trail
        ) as host:
            await host.connect(served.spec)
            await host.activate("acme:plain")
            host.deactivate("acme:plain")
            trail.close()
            path.unlink()
            path.mkdir()  # what is at the trail's path can no longer be appended to
            with pytest.raises(PolicyDenied) as refused:
                await host.activate("acme:plain")
            assert host.active() == []
            assert "could not be written" in refused.value.message
            # Nor does the next, refused before anything is fetched, until it can be.
            with pytest.raises(PolicyDenied) as again:
                await host.activate("acme:deploy")
            assert "could not be written" in again.value.message
            assert host.active() == []
            path.rmdir()
            await host.activate("acme:plain")
            assert [a.record.name for a in host.active()] == ["plain"]
