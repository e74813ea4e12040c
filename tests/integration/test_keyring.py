"""The store's key in a real Secret Service, and the paths where no keyring can be used.

The Secret Service tests need a session bus with an unlocked keyring; ``.ci/run`` starts
one (``dbus-run-session`` and ``gnome-keyring-daemon --unlock``). Elsewhere they skip,
saying so; in CI a skip fails the run.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import keyring.errors
import pytest
from keyring.backend import KeyringBackend
from keyring.backends import SecretService, fail

from skillward._keys import SERVICE, OsKeyring
from skillward._store import FileApprovalStore
from skillward.approvals import ApprovalBook, Decision, Scope, record_for
from skillward.errors import RememberUnavailable
from tests.support.approvals import HTTP, Scripted, make_entry, make_request, yes

pytestmark = pytest.mark.threat("T18")

# keyring's backends are untyped.
FAIL: Any = fail.Keyring
SECRET_SERVICE: Any = SecretService.Keyring

REPO = Path(__file__).resolve().parents[2]


def secret_service_or_skip() -> Any:
    backend = SECRET_SERVICE()
    why = OsKeyring("probe", backend=backend).unavailable()
    if why is not None:
        pytest.skip(
            f"no usable Secret Service ({why}); run under dbus-run-session with an unlocked "
            "gnome-keyring-daemon, as .ci/run does"
        )
    return backend


@pytest.fixture
def secret_service(tmp_path: Path) -> Iterator[Any]:
    backend = secret_service_or_skip()
    yield backend
    scope = OsKeyring(str((tmp_path / "approvals.json").absolute()), backend=backend)
    for what in ("key", "generation"):
        with contextlib.suppress(keyring.errors.PasswordDeleteError):
            backend.delete_password(SERVICE, scope._account(what))


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
    assert keys.generation() == 2
    key = keys.key(create=False)
    assert key is not None
    assert len(key) == 32
    script = (
        "import sys; from pathlib import Path; "
        "from skillward._store import FileApprovalStore; "
        "from skillward.origins import SkillKey; "
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
