"""Tests run as users of their own, and a run that touches the real user's directories fails.

The ``home`` fixture (tests/conftest.py) gives every test its own ``HOME`` and XDG base
directories; the guard in the same file compares the real user's skillward directories
before and after the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 120


def test_each_test_has_a_home_and_xdg_directories_of_its_own(home: Path) -> None:
    assert os.environ["HOME"] == str(home)
    for variable in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        assert Path(os.environ[variable]).is_relative_to(home), variable
    runtime = Path(os.environ["XDG_RUNTIME_DIR"])
    assert runtime.is_dir()
    assert runtime.stat().st_mode & 0o777 == 0o700


@pytest.fixture(scope="module")
def module_home() -> str:
    return os.environ["HOME"]


def test_what_starts_before_the_tests_own_home_has_one_of_the_sessions(
    module_home: str, tmp_path_factory: pytest.TempPathFactory, home: Path
) -> None:
    assert Path(module_home).is_relative_to(tmp_path_factory.getbasetemp())
    assert Path(module_home) != home


def test_the_processes_a_test_starts_keep_skillwards_files_in_its_home(home: Path) -> None:
    script = (
        "import json; from skillward.edge import _dirs; print(json.dumps([str(f()) for f in ("
        "_dirs.user_config_dir, _dirs.user_data_dir, _dirs.server_log_dir, _dirs.user_cache_dir,"
        " _dirs.audit_file, _dirs.gateway_token_file)]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
        check=True,
    )
    for path in json.loads(result.stdout):
        assert Path(path).is_relative_to(home), path


def test_a_stdio_servers_log_goes_to_the_tests_own_state_directory(home: Path) -> None:
    server = f"examples={sys.executable} -m skillward serve"
    result = subprocess.run(
        [sys.executable, "-m", "skillward", "list", "--no-local", "--no-cache", "--server", server],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert (home / ".local" / "state" / "skillward" / "server-logs" / "examples.log").is_file()


INNER = """
import os
from pathlib import Path

# Read while the module is collected, before the home fixture moves HOME: the real one.
REAL = Path(os.environ["HOME"])


def test_a_server_log():
    logs = {home} / ".local" / "state" / "skillward" / "server-logs"
    logs.mkdir(parents=True)
    (logs / "acme.log").write_text("written\\n")
"""


def run_inner(tmp_path: Path, home: str) -> subprocess.CompletedProcess[str]:
    """A pytest run, with this project's conftest, of one test writing a server log into
    ``home`` (an expression: ``REAL`` or ``Path.home()``); this test's home is its real one."""
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(INNER.format(home=home)))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=tmp_path,
        env=env,
        check=False,
    )


def test_a_run_that_changes_the_real_users_skillward_directories_fails_naming_them(
    tmp_path: Path, home: Path
) -> None:
    result = run_inner(tmp_path, "REAL")
    assert "1 passed" in result.stdout
    assert result.returncode == 1, result.stdout
    assert "the run changed the real user's skillward directories" in result.stdout
    log = home / ".local" / "state" / "skillward" / "server-logs" / "acme.log"
    assert f"created {log}" in result.stdout


def test_a_run_that_writes_only_to_its_tests_homes_passes(tmp_path: Path, home: Path) -> None:
    result = run_inner(tmp_path, "Path.home()")
    assert result.returncode == 0, result.stdout
    assert "1 passed" in result.stdout
    assert not (home / ".local").exists()
