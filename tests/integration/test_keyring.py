"""The store's key in a real Secret Service, and the paths where no keyring can be used.

The Secret Service tests need a session bus with an unlocked keyring; ``.ci/run`` starts
one (``dbus-run-session`` and ``gnome-keyring-daemon --unlock``). Elsewhere they skip,
saying so; in CI a skip fails the run.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import keyring.errors
import pytest
from jeepney.io.blocking import open_dbus_connection  # type: ignore[import-untyped]
from keyring.backend import KeyringBackend
from keyring.backends import fail
from secretstorage.exceptions import ItemNotFoundException, PromptDismissedException

from skillward.core.errors import RememberUnavailable
from skillward.trust._keys import ATTEMPTS, OsKeyring
from skillward.trust._store import VERIFY_ATTEMPTS, FileApprovalStore
from skillward.trust.approvals import Decision, Scope, record_for
from skillward.trust.book import ApprovalBook
from tests.support.approvals import HTTP, Scripted, make_entry, make_request, yes
from tests.support.secret_service import forget, secret_service_or_skip

pytestmark = pytest.mark.threat("T18")

# keyring's backends are untyped.
FAIL: Any = fail.Keyring

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def secret_service(tmp_path: Path) -> Iterator[Any]:
    backend = secret_service_or_skip()
    yield backend
    forget(backend, tmp_path / "approvals.json")


def record() -> Any:
    entry = make_entry({"notes.md": b"n\n"})
    return record_for(entry, label="acme", identity=HTTP, scope=Scope.REMEMBER, granted_at=1.0)


def test_the_key_and_counter_live_in_the_secret_service_and_another_process_reads_them(
    secret_service: Any, tmp_path: Path
) -> None:
    path = tmp_path / "approvals.json"
    store = FileApprovalStore(path, keys=OsKeyring(str(path.absolute()), backend=secret_service))
    store.put(record())
    store.put(record().model_copy(update={"granted_at": 2.0}))
    keys = OsKeyring(str(path.absolute()), backend=secret_service)
    # The generation, and the code line of the copy the counter vouches for.
    assert keys.counter() == "2 " + path.read_text().partition("\n")[0]
    key = keys.key(create=False)
    assert key is not None
    assert len(key) == 32
    script = (
        "import sys; from pathlib import Path; "
        "from skillward.trust._store import FileApprovalStore; "
        "from skillward.core.origins import SkillKey; "
        "s = FileApprovalStore(Path(sys.argv[1])); "
        "r = s.get(SkillKey('acme', 'skill://acme/billing/refunds/SKILL.md')); "
        "print(r.granted_at if r else None, s.problems)"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        check=False,
    )
    assert result.stdout.split() == ["2.0", "[]"], result.stderr


def test_an_older_copy_is_caught_by_the_counter_in_the_secret_service(
    secret_service: Any, tmp_path: Path
) -> None:
    path = tmp_path / "approvals.json"
    keys = OsKeyring(str(path.absolute()), backend=secret_service)
    store = FileApprovalStore(path, keys=keys)
    store.put(record())
    older = path.read_bytes()
    store.revoke(record().key, reason="changed")
    path.write_bytes(older)
    reader = FileApprovalStore(path, keys=OsKeyring(str(path.absolute()), backend=secret_service))
    assert reader.get(record().key) is None
    assert "older copy" in reader.problems[0].message


@pytest.mark.anyio
async def test_with_no_keyring_a_host_still_approves_for_the_session_and_says_why_once(
    tmp_path: Path,
) -> None:
    notes: list[str] = []
    store = FileApprovalStore(tmp_path / "a.json", keys=OsKeyring("x", backend=FAIL()))
    prompter = Scripted([yes(Scope.REMEMBER)])
    book = ApprovalBook(prompter, store=store, notify=notes.append)
    request = make_request(make_entry())
    assert await book.decide(request) is Decision.APPROVE
    assert await book.decide(request) is Decision.APPROVE
    assert prompter.questions[0].remember_unavailable is not None
    assert "fail Keyring" in prompter.questions[0].remember_unavailable
    assert len(notes) == 1
    assert "fail Keyring" in notes[0]


def test_a_keyring_that_cannot_hold_the_audit_trails_key_says_so_in_the_trails_words() -> None:
    approvals = OsKeyring("x", backend=FAIL()).unavailable()
    audit = OsKeyring("x", backend=FAIL(), prefix="audit").unavailable()
    assert approvals is not None
    assert "approvals cannot be remembered" in approvals
    assert audit is not None
    assert "the audit trail's checkpoints cannot be authenticated" in audit
    assert "approval" not in audit


class Plaintext(KeyringBackend):
    """Works, but keeps secrets in the clear: keyring rates such backends below 1."""

    priority = 0.5

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[service, username] = password

    def delete_password(self, service: str, username: str) -> None:
        self.items.pop((service, username), None)


class Locked(Plaintext):
    """Rated as recommended, but every write fails, as a locked keyring's does."""

    priority = 5

    def set_password(self, service: str, username: str, password: str) -> None:
        raise keyring.errors.KeyringLocked("the collection is locked")


def test_a_plaintext_backend_is_refused_as_not_recommended() -> None:
    backend = Plaintext()
    why = OsKeyring("x", backend=backend).unavailable()
    assert why is not None
    assert "not a recommended one" in why
    assert backend.items == {}  # nothing was written to it


class Failing(Plaintext):
    """Recommended and working at first; then the bus goes away mid-session."""

    priority = 5
    broken = False

    def get_password(self, service: str, username: str) -> str | None:
        if self.broken:
            raise RuntimeError("org.freedesktop.DBus.Error.NoReply")
        return super().get_password(service, username)


def test_a_keyring_that_fails_after_the_check_grants_nothing_and_raises_nothing(
    tmp_path: Path,
) -> None:
    backend = Failing()
    store = FileApprovalStore(tmp_path / "approvals.json", keys=OsKeyring("x", backend=backend))
    store.put(record())
    backend.broken = True
    reader = FileApprovalStore(tmp_path / "approvals.json", keys=OsKeyring("x", backend=backend))
    assert reader.get(record().key) is None
    assert (tmp_path / "approvals.json").exists()  # not moved aside: it may be fine
    with pytest.raises(RememberUnavailable, match="NoReply"):
        reader.put(record())


@pytest.mark.parametrize(
    ("backend", "named"),
    [(FAIL, "fail Keyring"), (Locked, "KeyringLocked")],
    ids=["fail-backend", "locked"],
)
def test_an_unusable_keyring_grants_nothing_refuses_to_remember_and_never_crashes(
    tmp_path: Path, backend: Any, named: str
) -> None:
    keys = OsKeyring("x", backend=backend())
    why = keys.unavailable()
    assert why is not None
    assert named in why
    store = FileApprovalStore(tmp_path / "approvals.json", keys=keys)
    assert store.get(record().key) is None
    assert store.records() == []
    with pytest.raises(RememberUnavailable, match=named):
        store.put(record())
    assert not (tmp_path / "approvals.json").exists()


class Racing(Plaintext):
    """Recommended and working, but reads of chosen items fail for a while, as a read racing
    a replace in a non-transactional keyring does: ``vanish`` reads raise the exception
    secretstorage raises for an item found and then gone; ``miss`` reads find nothing."""

    priority = 5

    def __init__(self) -> None:
        super().__init__()
        self.vanish: dict[str, int] = {}
        self.miss: dict[str, int] = {}
        self.reads: dict[str, int] = {}

    @staticmethod
    def _what(username: str) -> str:
        return username.split("-")[1]  # approvals-WHAT-SCOPE

    def get_password(self, service: str, username: str) -> str | None:
        what = self._what(username)
        self.reads[what] = self.reads.get(what, 0) + 1
        if self.vanish.get(what, 0) > 0:
            self.vanish[what] -= 1
            raise ItemNotFoundException("Item does not exist!")
        if self.miss.get(what, 0) > 0:
            self.miss[what] -= 1
            return None
        return super().get_password(service, username)


def stored_twice(path: Path, backend: Racing) -> bytes:
    """A store at generation 2, written by another process; its bytes."""
    store = FileApprovalStore(path, keys=OsKeyring("x", backend=backend))
    store.put(record())
    store.put(record().model_copy(update={"granted_at": 2.0}))
    return path.read_bytes()


@pytest.mark.threat("T27")
@pytest.mark.parametrize("what", ["generation", "key", "probe"])
def test_a_keyring_read_that_races_a_replace_is_tried_again_and_nothing_is_lost(
    tmp_path: Path, what: str
) -> None:
    backend = Racing()
    path = tmp_path / "approvals.json"
    stored_twice(path, backend)
    backend.vanish[what] = ATTEMPTS - 1
    pauses: list[float] = []
    store = FileApprovalStore(path, keys=OsKeyring("x", backend=backend, pause=pauses.append))
    assert store.unavailable() is None
    found = store.get(record().key)
    assert found is not None
    assert found.granted_at == 2.0
    store.put(record().model_copy(update={"granted_at": 3.0}))
    assert backend.vanish[what] == 0
    assert len(pauses) == ATTEMPTS - 1
    assert sum(pauses) < 0.1  # bounded: the lock is held meanwhile
    assert store.problems == []
    assert not list(tmp_path.glob("approvals.json.untrusted-*"))


@pytest.mark.threat("T27")
@pytest.mark.parametrize("what", ["generation", "key"])
def test_a_read_that_misses_an_item_mid_replace_does_not_untrust_the_store(
    tmp_path: Path, what: str
) -> None:
    backend = Racing()
    path = tmp_path / "approvals.json"
    stored_twice(path, backend)
    # The counter reads as 0 (so the file looks ahead of it), or there is no key.
    backend.miss[what] = VERIFY_ATTEMPTS - 1
    reader = FileApprovalStore(path, keys=OsKeyring("x", backend=backend))
    found = reader.get(record().key)
    assert found is not None
    assert found.granted_at == 2.0
    assert reader.problems == []
    assert not list(tmp_path.glob("approvals.json.untrusted-*"))


@pytest.mark.threat("T27")
def test_a_counter_that_stays_missing_still_untrusts_the_store_after_the_bounded_checks(
    tmp_path: Path,
) -> None:
    backend = Racing()
    path = tmp_path / "approvals.json"
    stored_twice(path, backend)
    backend.miss["generation"] = 10**6
    backend.reads.clear()
    reader = FileApprovalStore(path, keys=OsKeyring("x", backend=backend))
    assert reader.get(record().key) is None
    assert "no rollback counter" in reader.problems[0].message
    assert len(list(tmp_path.glob("approvals.json.untrusted-*"))) == 1
    assert backend.reads["generation"] == VERIFY_ATTEMPTS


@pytest.mark.threat("T27")
@pytest.mark.parametrize("what", ["generation", "probe"])
def test_a_keyring_that_keeps_failing_mid_read_refuses_to_remember_and_records_nothing(
    tmp_path: Path, what: str
) -> None:
    backend = Racing()
    path = tmp_path / "approvals.json"
    before = stored_twice(path, backend)
    backend.vanish[what] = 10**6
    backend.reads.clear()
    pauses: list[float] = []
    store = FileApprovalStore(path, keys=OsKeyring("x", backend=backend, pause=pauses.append))
    with pytest.raises(RememberUnavailable, match="ItemNotFoundException"):
        store.put(record().model_copy(update={"granted_at": 3.0}))
    assert path.read_bytes() == before
    assert backend.reads[what] == ATTEMPTS  # tried again, a bounded number of times
    assert store.get(record().key) is None  # grants nothing meanwhile, and raises nothing
    assert path.read_bytes() == before  # not moved aside: the file may well be fine
    assert store.problems == []


class CounterRefused(Plaintext):
    """Recommended and working, but while ``refuse`` every update of the store's counter
    fails, as in a keyring locked again or a bus gone away mid-write."""

    priority = 5
    refuse = False

    def set_password(self, service: str, username: str, password: str) -> None:
        if self.refuse and username.startswith("approvals-generation-"):
            raise keyring.errors.PasswordSetError("the collection is locked")
        super().set_password(service, username, password)


@pytest.mark.anyio
@pytest.mark.threat("T9")
async def test_a_revocation_the_keyring_could_not_count_holds_and_no_restored_copy_undoes_it(
    tmp_path: Path,
) -> None:
    backend = CounterRefused()
    path = tmp_path / "approvals.json"

    def book(prompter: Scripted) -> ApprovalBook:
        return ApprovalBook(
            prompter, store=FileApprovalStore(path, keys=OsKeyring("x", backend=backend))
        )

    v1, v2 = (make_request(make_entry({"notes.md": text})) for text in (b"v1\n", b"v2\n"))
    other = make_request(make_entry({"notes.md": b"v1\n"}, root="skill://acme/other"))
    prompter = Scripted([yes(Scope.REMEMBER)])
    approvals = book(prompter)
    assert await approvals.decide(v1) is Decision.APPROVE
    previous = path.read_bytes()
    backend.refuse = True
    assert await approvals.decide(v2) is Decision.DENY  # changed: v1's approval is revoked
    path.write_bytes(previous)  # the copy from before the revocation, put back
    assert await approvals.decide(v1) is Decision.DENY  # the revocation holds here
    change = prompter.questions[-1].change
    assert change is not None
    assert change.revoked
    backend.refuse = False
    prompter.answers.append(yes(Scope.REMEMBER))
    assert await approvals.decide(other) is Decision.APPROVE  # the next write: counted
    stored = FileApprovalStore(path, keys=OsKeyring("x", backend=backend)).get(v1.key)
    assert stored is not None
    assert stored.revoked is not None
    path.write_bytes(previous)
    assert await book(Scripted()).decide(v1) is Decision.DENY  # refused as an older copy


class Counting(Locked):
    """A locked keyring that counts the writes asked of it (each one an unlock prompt)."""

    writes = 0

    def set_password(self, service: str, username: str, password: str) -> None:
        self.writes += 1
        super().set_password(service, username, password)


@pytest.mark.threat("T27")
def test_a_locked_keyring_is_asked_once_not_again_and_again(tmp_path: Path) -> None:
    backend = Counting()
    store = FileApprovalStore(tmp_path / "approvals.json", keys=OsKeyring("x", backend=backend))
    with pytest.raises(RememberUnavailable, match="KeyringLocked"):
        store.put(record())
    assert store.unavailable() is not None
    assert backend.writes == 1


class NoCollection(Plaintext):
    """A Secret Service with no default collection, where the prompt to create one was
    dismissed: keyring raises this InitError from every call."""

    priority = 5

    def _fail(self) -> None:
        try:
            raise PromptDismissedException("Prompt dismissed.")
        except PromptDismissedException as exc:
            raise keyring.errors.InitError(
                "Failed to create the collection: Prompt dismissed.."
            ) from exc

    def get_password(self, service: str, username: str) -> str | None:
        self._fail()
        return None

    def set_password(self, service: str, username: str, password: str) -> None:
        self._fail()


def test_a_keyring_with_no_default_collection_says_what_to_do_in_one_line(
    tmp_path: Path,
) -> None:
    store = FileApprovalStore(
        tmp_path / "approvals.json", keys=OsKeyring("x", backend=NoCollection())
    )
    why = store.unavailable()
    assert why is not None
    assert "has no default keyring" in why
    assert "gnome-keyring-daemon --replace --unlock" in why
    assert "InitError" not in why
    assert "\n" not in why
    with pytest.raises(RememberUnavailable, match="no default keyring"):
        store.put(record())
    assert not (tmp_path / "approvals.json").exists()


def _connections_opened_so_far() -> int:
    """How many connections the session bus has accepted (each gets the next unique name,
    ``:1.N``), read by opening one more."""
    with open_dbus_connection(bus="SESSION") as connection:
        return int(connection.unique_name.rpartition(".")[2])


@pytest.mark.threat("T27")
def test_the_secret_service_is_reached_through_one_connection_however_many_calls(
    secret_service: Any, tmp_path: Path
) -> None:
    # A connection opened and closed per call lets gnome-keyring-daemon abort on a race in
    # its records of clients, and the next call starts a daemon with nothing unlocked.
    keys = OsKeyring(str((tmp_path / "approvals.json").absolute()), backend=secret_service)
    keys.set_counter("1")
    before = _connections_opened_so_far()
    for n in range(40):
        keys.set_counter(str(n))
        assert keys.counter() == str(n)
    opened = _connections_opened_so_far() - before - 1
    assert opened == 0
