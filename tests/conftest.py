"""Shared test configuration.

In CI (``CI=true``) a skipped test is a failed test: CI must run everything,
including the tests that need real servers and a real Secret Service.

Every test runs as a user of its own: ``HOME`` and the XDG base directories point
into a fresh directory (the ``home`` fixture), and every process a test starts
inherits them. A run that changes the real user's skillward directories fails,
naming what changed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from skillward.edge._dirs import audit_file, user_cache_dir, user_config_dir, user_data_dir

IN_CI = os.environ.get("CI", "").lower() == "true"

# No example is held to a time: speed is bench/'s to measure, and on a loaded machine
# hypothesis's default deadline (200 ms) fails an example that runs slowly once.
settings.register_profile("skillward", deadline=None)
settings.load_profile("skillward")

#: The base directories a test's ``HOME`` holds, where they are when XDG leaves them unset.
XDG_HOMES = {
    "XDG_CONFIG_HOME": ".config",
    "XDG_DATA_HOME": ".local/share",
    "XDG_STATE_HOME": ".local/state",
    "XDG_CACHE_HOME": ".cache",
}


def _real_dirs() -> tuple[Path, ...]:
    """The real user's skillward directories: where ``HOME`` puts them, and where
    skillward looks (which the XDG variables may move). Called before any test runs."""
    home = Path.home()
    usual = [home / relative / "skillward" for relative in XDG_HOMES.values()]
    # audit_file() is in skillward's state directory.
    resolved = [user_config_dir(), user_data_dir(), audit_file().parent, user_cache_dir()]
    return tuple(dict.fromkeys(usual + resolved))


Snapshot = dict[Path, tuple[int, int, int]]


def _snapshot(roots: tuple[Path, ...]) -> Snapshot:
    """Each path under ``roots``, the roots too: its mode, size and mtime."""
    seen: Snapshot = {}
    for root in roots:
        for path in (root, *root.rglob("*")):
            with contextlib.suppress(FileNotFoundError):
                status = path.lstat()
                seen[path] = (status.st_mode, status.st_size, status.st_mtime_ns)
    return seen


def _changes(before: Snapshot, after: Snapshot) -> list[str]:
    changes = []
    for path in sorted(before.keys() | after.keys()):
        if path not in before:
            changes.append(f"created {path}")
        elif path not in after:
            changes.append(f"removed {path}")
        elif before[path] != after[path]:
            changes.append(f"changed {path}")
    return changes


REAL_DIRS = pytest.StashKey[tuple[Path, ...]]()
BEFORE = pytest.StashKey[Snapshot]()
CHANGED = pytest.StashKey[list[str]]()


def pytest_configure(config: pytest.Config) -> None:
    # Before any test: the environment is still the real user's.
    config.stash[REAL_DIRS] = _real_dirs()
    config.stash[BEFORE] = _snapshot(config.stash[REAL_DIRS])


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    changes = _changes(config.stash[BEFORE], _snapshot(config.stash[REAL_DIRS]))
    if changes:
        config.stash[CHANGED] = changes
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    changes = config.stash.get(CHANGED, [])
    if changes:
        terminalreporter.write_sep(
            "=", "FAILED: the run changed the real user's skillward directories", red=True
        )
        for line in changes[:20]:
            terminalreporter.write_line(line)
        if len(changes) > 20:
            terminalreporter.write_line(f"... and {len(changes) - 20} more")


def _isolate(monkeypatch: pytest.MonkeyPatch, user: Path) -> Path:
    """Point ``HOME`` at ``user/home``, the XDG base directories at their usual places in
    it, and ``XDG_RUNTIME_DIR`` at a private ``user/run``; return the home.

    ``DBUS_SESSION_BUS_ADDRESS`` stays: the keyring tests use the session's Secret
    Service, whose daemon keeps its files under the ``HOME`` it was started with.
    """
    home = user / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for variable, relative in XDG_HOMES.items():
        monkeypatch.setenv(variable, str(home / relative))
    runtime = user / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    return home


@pytest.fixture(scope="session", autouse=True)
def session_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A home for what starts before any test's own: module-scoped servers and the like."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield _isolate(monkeypatch, tmp_path_factory.mktemp("session"))


@pytest.fixture(autouse=True)
def home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's own ``HOME``, with the XDG base directories in their usual places in
    it, and a private ``XDG_RUNTIME_DIR`` beside it; what the test starts inherits them."""
    return _isolate(monkeypatch, tmp_path_factory.mktemp("user"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where every test must run: {reason}"


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"
