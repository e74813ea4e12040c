"""The file key store: the approval store's key and rollback counter in private files, for
machines without a keyring, chosen in the user's config and refused by a policy that
wants the OS keyring."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillward.core.errors import RememberUnavailable, StoreTampered
from skillward.edge._local import LocalSkillDir
from skillward.host.skillhost import HostConfig, SkillHost
from skillward.trust._keyfile import FileKeyring, read_user_config, user_keys
from skillward.trust._keys import OsKeyring
from skillward.trust._store import FileApprovalStore
from skillward.trust._userconfig import parse_user_config
from skillward.trust.approvals import ApprovalRecord, Scope, record_for
from skillward.trust.audit import AuditTrail
from skillward.trust.book import ApprovalBook
from tests.support.approvals import HTTP, Scripted, make_entry
from tests.support.keys import MemoryKeys
from tests.support.policies import PolicyDirs

pytestmark = pytest.mark.threat("T58")

RECORD: ApprovalRecord = record_for(
    make_entry({"notes.md": b"n\n"}),
    label="acme",
    identity=HTTP,
    scope=Scope.REMEMBER,
    granted_at=1.0,
)


@pytest.fixture
def umask() -> Iterator[None]:
    """A permissive umask, as many machines have: what skillward makes must not follow it."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


class Machine:
    """A user's directories under ``root``: the store, the keys, a project they work in,
    and a skills directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.store_path = root / "data" / "approvals.json"
        self.directory = root / "state" / "keys"
        self.workspace = root / "project"
        self.skills = root / "skills"

    def keys(self, directory: Path | None = None) -> FileKeyring:
        """The key provider as a new process builds it."""
        return FileKeyring(
            str(self.store_path),
            directory or self.directory,
            discovery=[self.skills],
            workspace=self.workspace,
        )

    def store(self, keys: FileKeyring | None = None) -> FileApprovalStore:
        return FileApprovalStore(self.store_path, keys=keys or self.keys(), clock=lambda: 0.0)

    def key_file(self) -> Path:
        return self.keys().key_path

    def aside(self) -> list[Path]:
        return sorted(self.store_path.parent.glob("approvals.json.untrusted-*"))


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    return Machine(tmp_path)


@pytest.mark.threat("T18")
@pytest.mark.usefixtures("umask")
def test_the_key_and_counter_live_in_private_files_and_another_process_reads_them(
    machine: Machine,
) -> None:
    machine.store().put(RECORD)
    assert machine.store().get(RECORD.key) == RECORD
    keys = machine.keys()
    assert keys.key_path.parent == machine.directory
    assert sorted(p.name for p in machine.directory.iterdir()) == sorted(
        [keys.key_path.name, keys.counter_path.name]
    )  # nothing else: no temp file left behind
    assert machine.directory.stat().st_mode & 0o777 == 0o700
    assert keys.key_path.stat().st_mode & 0o777 == 0o600
    assert keys.counter_path.stat().st_mode & 0o777 == 0o600
    assert keys.counter() == "1 " + machine.store_path.read_text().partition("\n")[0]


def test_two_stores_never_share_a_key_file(machine: Machine, tmp_path: Path) -> None:
    other = FileKeyring(str(tmp_path / "elsewhere.json"), machine.directory)
    assert other.key_path != machine.key_file()
    assert other.key_path.parent == machine.key_file().parent


@pytest.mark.threat("T18")
def test_a_tampered_store_grants_nothing_with_the_file_key_store(machine: Machine) -> None:
    machine.store().put(RECORD)
    data = bytearray(machine.store_path.read_bytes())
    data[-10] ^= 0x01
    machine.store_path.write_bytes(bytes(data))
    reader = machine.store()
    assert reader.get(RECORD.key) is None
    (problem,) = reader.problems
    assert isinstance(problem, StoreTampered)
    assert [p.read_bytes() for p in machine.aside()] == [bytes(data)]


@pytest.mark.threat("T18")
def test_an_older_copy_is_caught_by_the_counter_in_its_file(machine: Machine) -> None:
    store = machine.store()
    store.put(RECORD)
    older = machine.store_path.read_bytes()
    store.revoke(RECORD.key, reason="changed")
    machine.store_path.write_bytes(older)
    reader = machine.store()
    assert reader.get(RECORD.key) is None
    assert "older copy" in reader.problems[0].message


@pytest.mark.threat("T18")
def test_what_is_wrong_with_a_store_names_the_file_key_store_never_a_keyring(
    machine: Machine,
) -> None:
    store = machine.store()
    store.put(RECORD)
    older = machine.store_path.read_bytes()
    store.revoke(RECORD.key, reason="changed")
    said = []
    for damage in ("older", "tampered", "no counter"):
        if damage == "tampered":
            machine.store_path.write_bytes(older[:-10] + b"X" + older[-9:])
        else:
            machine.store_path.write_bytes(older)
        if damage == "no counter":
            machine.keys().counter_path.unlink()
        reader = machine.store()
        assert reader.get(RECORD.key) is None
        said.append(reader.problems[0].message)
    older_copy, tampered, no_counter = said
    assert "the file key store expects" in older_copy
    assert "or the key in the file key store is missing or changed" in tampered
    assert "the file key store holds its key but no rollback counter" in no_counter
    assert not [message for message in said if "keyring" in message]


@pytest.mark.threat("T18")
def test_switching_key_stores_starts_over_and_keeps_the_old_store_aside(
    machine: Machine,
) -> None:
    FileApprovalStore(machine.store_path, keys=MemoryKeys()).put(RECORD)
    signed = machine.store_path.read_bytes()
    reader = machine.store()
    assert reader.get(RECORD.key) is None
    assert [p.read_bytes() for p in machine.aside()] == [signed]
    reader.put(RECORD)
    assert machine.store().get(RECORD.key) == RECORD


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_a_key_file_others_can_read_is_refused_naming_the_path_and_the_fix(
    machine: Machine, mode: int
) -> None:
    machine.store().put(RECORD)
    before = machine.store_path.read_bytes()
    key_file = machine.key_file()
    key_file.chmod(mode)
    keys = machine.keys()
    why = keys.unavailable()
    assert why is not None
    assert str(key_file) in why
    assert f"chmod 600 {key_file}" in why
    store = machine.store(keys)
    assert store.get(RECORD.key) is None
    with pytest.raises(RememberUnavailable) as refused:
        store.put(RECORD)
    assert f"chmod 600 {key_file}" in refused.value.message
    # Refused, not called tampered: the store is kept as it is, for when it is fixed.
    assert machine.store_path.read_bytes() == before
    assert store.problems == []
    key_file.chmod(0o600)
    assert machine.store().get(RECORD.key) == RECORD


@pytest.mark.parametrize("problem", ["open to others", "a symbolic link"])
def test_the_audit_trails_key_files_are_refused_in_the_trails_words_never_the_approvals(
    machine: Machine, tmp_path: Path, problem: str
) -> None:
    def audit_keys() -> FileKeyring:  # as a new process builds the trail's
        return FileKeyring(
            str(tmp_path / "audit.jsonl"),
            machine.directory,
            discovery=[machine.skills],
            workspace=machine.workspace,
            prefix="audit",
        )

    keys = audit_keys()
    assert keys.key(create=True) is not None
    if problem == "open to others":
        keys.key_path.chmod(0o644)
    else:
        elsewhere = tmp_path / "planted"
        elsewhere.write_bytes(keys.key_path.read_bytes())
        keys.key_path.unlink()
        keys.key_path.symlink_to(elsewhere)
    why = audit_keys().unavailable()
    assert why is not None
    assert str(keys.key_path) in why
    assert "audit trail's checkpoints" in why
    assert "approval" not in why


def test_a_key_file_opened_to_others_while_a_process_runs_is_refused_at_its_next_read(
    machine: Machine,
) -> None:
    keys = machine.keys()
    store = machine.store(keys)
    store.put(RECORD)
    keys.key_path.chmod(0o644)
    with pytest.raises(RememberUnavailable, match="chmod 600"):
        keys.key(create=False, fresh=True)
    with pytest.raises(RememberUnavailable, match="chmod 600"):
        store.put(RECORD.model_copy(update={"granted_at": 2.0}))


def test_a_symlinked_key_file_is_refused_and_never_followed(
    machine: Machine, tmp_path: Path
) -> None:
    machine.store().put(RECORD)
    key_file = machine.key_file()
    elsewhere = tmp_path / "planted-key"
    elsewhere.write_bytes(key_file.read_bytes())
    elsewhere.chmod(0o600)
    planted = elsewhere.read_bytes()
    key_file.unlink()
    key_file.symlink_to(elsewhere)
    keys = machine.keys()
    why = keys.unavailable()
    assert why is not None
    assert "symbolic link" in why
    assert str(key_file) in why
    store = machine.store(keys)
    assert store.get(RECORD.key) is None
    with pytest.raises(RememberUnavailable, match="symbolic link"):
        store.put(RECORD)
    assert key_file.is_symlink()
    assert elsewhere.read_bytes() == planted


def test_a_link_planted_at_the_counter_after_the_check_is_replaced_never_written_through(
    machine: Machine, tmp_path: Path
) -> None:
    keys = machine.keys()
    assert keys.unavailable() is None
    target = tmp_path / "target"
    target.write_text("untouched")
    keys.counter_path.symlink_to(target)
    keys.set_counter("1 " + "0" * 64)
    assert target.read_text() == "untouched"
    assert not keys.counter_path.is_symlink()
    assert keys.counter_path.stat().st_mode & 0o777 == 0o600


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_a_key_file_another_user_owns_is_refused(machine: Machine) -> None:
    machine.store().put(RECORD)
    key_file = machine.key_file()
    os.chown(key_file, 54321, 54321)
    why = machine.keys().unavailable()
    assert why is not None
    assert "uid 54321" in why
    assert str(key_file) in why


def test_a_key_directory_others_can_enter_is_refused_naming_the_fix(machine: Machine) -> None:
    machine.directory.mkdir(parents=True)
    machine.directory.chmod(0o755)
    why = machine.keys().unavailable()
    assert why is not None
    assert f"chmod 700 {machine.directory}" in why


@pytest.mark.usefixtures("umask")
def test_a_key_directory_is_made_private_whatever_the_umask(machine: Machine) -> None:
    assert machine.keys().unavailable() is None
    assert machine.directory.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize(
    "where",
    ["in-skills", "holds-skills", "in-workspace", "linked-into-workspace", "skills-linked"],
)
def test_a_key_directory_where_skills_are_discovered_or_in_the_workspace_is_refused(
    machine: Machine, where: str
) -> None:
    machine.workspace.mkdir()
    machine.skills.mkdir()
    if where == "in-skills":
        directory = machine.skills / "keys"
    elif where == "holds-skills":
        directory = machine.root
    elif where == "in-workspace":
        directory = machine.workspace / ".keys"
    elif where == "linked-into-workspace":
        (machine.root / "link").symlink_to(machine.workspace)
        directory = machine.root / "link" / "keys"
    else:
        (machine.skills / "linked").symlink_to(machine.root / "state")
        directory = machine.root / "state" / "keys"
    keys = FileKeyring(
        str(machine.store_path),
        directory,
        discovery=[machine.skills / "linked" if where == "skills-linked" else machine.skills],
        workspace=machine.workspace,
    )
    why = keys.unavailable()
    assert why is not None
    assert str(directory) in why
    assert "key directory" in why
    with pytest.raises(RememberUnavailable):
        FileApprovalStore(machine.store_path, keys=keys).put(RECORD)
    assert not machine.store_path.exists()
    if where not in ("holds-skills", "skills-linked"):
        assert not directory.exists()  # nothing was made there


def test_run_from_the_home_directory_the_key_directory_below_it_is_used(
    machine: Machine,
) -> None:
    keys = FileKeyring(
        str(machine.store_path),
        machine.directory,
        discovery=[],
        workspace=machine.root,
        home=machine.root,
    )
    assert keys.unavailable() is None


# --- the user's choice -----------------------------------------------------------------------


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_keyring_is_used_unless_the_user_config_chooses_the_file_key_store(
    tmp_path: Path,
) -> None:
    store = tmp_path / "approvals.json"
    missing = read_user_config(tmp_path / "config" / "config.toml")
    assert missing.key_store == "keyring"
    assert missing.problems == ()
    assert isinstance(user_keys(store, missing), OsKeyring)
    chosen = read_user_config(config(tmp_path, '[approvals]\nkey_store = "file"\n'))
    keys = user_keys(store, chosen)
    assert isinstance(keys, FileKeyring)
    assert keys.chosen == f"approvals.key_store = 'file' in {tmp_path}/config/config.toml:2"
    said = read_user_config(config(tmp_path, 'approvals.key_store = "keyring"\n'))
    assert isinstance(user_keys(store, said), OsKeyring)


@pytest.mark.parametrize(
    ("text", "problem", "line"),
    [
        ('[approvals]\nkey_store = "files"\n', "is not 'keyring' or 'file'", 2),
        ("[approvals]\nkey_store = true\n", "is not 'keyring' or 'file'", 2),
        ('[approvals]\nkeystore = "file"\n', "unknown key 'approvals.keystore'", 2),
        ('approvals = "file"\n', "'approvals' is not a table", 1),
        ('[approval]\nkey_store = "file"\n', "unknown key 'approval'", 1),
        ('[approvals\nkey_store = "file"\n', "is not TOML", 1),
    ],
)
def test_a_mistake_in_the_user_config_keeps_the_keyring_and_names_the_file_and_line(
    tmp_path: Path, text: str, problem: str, line: int
) -> None:
    path = config(tmp_path, text)
    read = read_user_config(path)
    assert read.key_store == "keyring"
    (said,) = read.problems
    assert said.startswith(f"{path}:{line}: ")
    assert problem in said


def test_a_user_config_that_cannot_be_read_keeps_the_keyring_and_says_why(
    tmp_path: Path,
) -> None:
    path = tmp_path / "config.toml"
    path.mkdir()
    read = read_user_config(path)
    assert read.key_store == "keyring"
    (said,) = read.problems
    assert str(path) in said


@given(st.text(max_size=200))
def test_any_text_reads_as_one_key_store_and_never_raises(text: str) -> None:
    read = parse_user_config(text, "config.toml")
    assert read.key_store in ("keyring", "file")
    assert all("\n" not in problem and "\x1b" not in problem for problem in read.problems)


@given(st.one_of(st.text(max_size=30), st.integers(), st.booleans()))
def test_only_the_word_file_chooses_the_file_key_store(value: object) -> None:
    # JSON's scalars, written so, are TOML's too (a few strings TOML refuses read as keyring).
    text = "[approvals]\nkey_store = " + json.dumps(value, ensure_ascii=False)
    read = parse_user_config(text, "config.toml")
    assert (read.key_store == "file") == (value == "file")
    assert (read.problems == ()) == (value in ("file", "keyring"))


# --- the policy ------------------------------------------------------------------------------


@pytest.mark.threat("T40")
def test_a_policy_requiring_the_os_keyring_refuses_the_file_key_store_naming_both_files(
    machine: Machine, tmp_path: Path
) -> None:
    dirs = PolicyDirs(tmp_path / "policy")
    admin = dirs.admin('version = 1\ncontact = "IT"\n[keyring]\nrequire_recommended = true\n')
    keys = FileKeyring(
        str(machine.store_path), machine.directory, chosen="approvals.key_store in my.toml:2"
    )
    rules = dirs.load().approval_rules(FileApprovalStore(machine.store_path, keys=keys))
    refused = rules.remember_refused
    assert refused is not None
    assert "the file key store (approvals.key_store in my.toml:2)" in refused
    assert f"{admin}:4" in refused
    assert "contact: IT" in refused
    assert "a key provider the host supplies" not in refused


@pytest.mark.anyio
async def test_a_skills_directory_a_host_adds_is_kept_apart_from_the_key_files(
    machine: Machine,
) -> None:
    # --skills-dir pointing at (or above) the key directory: whatever writes skills there
    # could replace the key, as with the default discovery paths.
    store = FileApprovalStore(machine.store_path, keys=machine.keys(), clock=lambda: 0.0)
    trail_keys = FileKeyring(
        str(machine.root / "audit.jsonl"),
        machine.directory,
        discovery=[machine.skills],
        workspace=machine.workspace,
        prefix="audit",
    )
    trail = AuditTrail(machine.root / "audit.jsonl", keys=trail_keys)
    assert store.keys.unavailable() is None  # checked once already, before the host
    config = HostConfig(local_dirs=(LocalSkillDir("mine", machine.root / "state"),))
    async with SkillHost(
        config=config, approver=ApprovalBook(Scripted(), store=store), audit=trail
    ):
        for keys in (store.keys, trail_keys):
            why = keys.unavailable()
            assert why is not None
            assert "overlaps the skill discovery path" in why
    with pytest.raises(RememberUnavailable):
        store.put(RECORD)
