"""The gateway's bearer token: a fresh 0600 file in the state directory, or the person's
own ``--token-file``, refused when others could read or change it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillward.core.errors import ConfigError
from skillward.gateway._token import MIN_TOKEN_LENGTH, load_or_create_token

OWN = "own-token-4Rt7Yp2Wq9Ls6Kd1"

CREATE = """
import json
from skillward.core.errors import ConfigError
from skillward.gateway._token import load_or_create_token
try:
    token, path = load_or_create_token(None)
except ConfigError as error:
    print(json.dumps({"error": str(error)}))
else:
    print(json.dumps({"token": token, "path": str(path)}))
"""


def create_default(state: Path) -> dict[str, str]:
    """``load_or_create_token(None)`` in a process whose state directory is ``state``."""
    env = {**os.environ, "XDG_STATE_HOME": str(state), "HOME": str(state.parent)}
    done = subprocess.run(
        [sys.executable, "-c", CREATE],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    answer: dict[str, str] = json.loads(done.stdout)
    return answer


def mode_of(path: Path) -> int:
    return path.lstat().st_mode & 0o777


@pytest.mark.threat("T51")
def test_a_new_token_goes_to_a_0600_file_in_the_state_directory(tmp_path: Path) -> None:
    state = tmp_path / "state"
    made = create_default(state)
    path = Path(made["path"])
    assert path == state / "skillward" / "gateway-token"
    assert mode_of(path) == 0o600
    assert path.read_text("ascii").strip() == made["token"]
    assert len(made["token"]) >= 43  # 32 random bytes
    assert sorted(p.name for p in path.parent.iterdir()) == ["gateway-token"]


@pytest.mark.threat("T51")
def test_each_start_replaces_the_token(tmp_path: Path) -> None:
    first = create_default(tmp_path / "state")
    second = create_default(tmp_path / "state")
    assert first["path"] == second["path"]
    assert first["token"] != second["token"]
    assert Path(second["path"]).read_text("ascii").strip() == second["token"]


@pytest.mark.threat("T51")
def test_a_file_others_could_read_at_the_path_is_replaced_by_a_private_one(
    tmp_path: Path,
) -> None:
    planted = tmp_path / "state" / "skillward" / "gateway-token"
    planted.parent.mkdir(parents=True)
    planted.write_text("known-to-someone-else\n")
    planted.chmod(0o644)
    made = create_default(tmp_path / "state")
    assert mode_of(planted) == 0o600
    assert planted.read_text("ascii").strip() == made["token"]


@pytest.mark.threat("T51")
def test_a_symlink_planted_at_the_path_is_replaced_not_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    victim.chmod(0o644)
    planted = tmp_path / "state" / "skillward" / "gateway-token"
    planted.parent.mkdir(parents=True)
    planted.symlink_to(victim)
    made = create_default(tmp_path / "state")
    assert victim.read_text() == "untouched\n"
    assert not planted.is_symlink()
    assert mode_of(planted) == 0o600
    assert planted.read_text("ascii").strip() == made["token"]


def test_a_state_directory_that_cannot_be_made_is_a_config_error_naming_it(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("a file where the directory should be\n")
    made = create_default(blocker)
    assert "gateway-token" in made["error"]
    assert "token" not in made


def own_file(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "token"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_a_token_file_of_ones_own_is_read_and_stripped(tmp_path: Path) -> None:
    path = own_file(tmp_path, f"  {OWN}\n")
    assert load_or_create_token(path) == (OWN, path)
    assert path.read_text() == f"  {OWN}\n"  # read, never rewritten


@pytest.mark.threat("T51")
@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o602, 0o660, 0o666])
def test_a_token_file_open_to_group_or_others_is_refused_naming_it(
    tmp_path: Path, mode: int
) -> None:
    path = own_file(tmp_path, OWN, mode)
    with pytest.raises(ConfigError, match="group or others") as caught:
        load_or_create_token(path)
    assert str(path) in str(caught.value)
    assert OWN not in caught.value.diagnostics()


@pytest.mark.threat("T51")
@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "empty"),
        (" \n\t\n", "empty"),
        (f"{OWN} {OWN}", "more than one"),
        (f"{OWN}\n{OWN}\n", "more than one"),
        (f"{OWN}\x00", "more than one"),
        ("é" * 20, "more than one"),
        ("x" * (MIN_TOKEN_LENGTH - 1), "shorter"),
    ],
    ids=["empty", "blank", "two-words", "two-lines", "nul", "not-ascii", "short"],
)
def test_a_token_file_without_one_good_token_is_refused(
    tmp_path: Path, text: str, words: str
) -> None:
    path = own_file(tmp_path, text)
    with pytest.raises(ConfigError, match=words) as caught:
        load_or_create_token(path)
    assert str(path) in str(caught.value)


def test_a_missing_token_file_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read") as caught:
        load_or_create_token(tmp_path / "absent")
    assert "absent" in str(caught.value)


@pytest.mark.threat("T51")
@pytest.mark.parametrize("kind", ["directory", "fifo", "huge"])
def test_a_token_file_that_is_not_a_small_regular_file_is_refused(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "token"
    if kind == "directory":
        path.mkdir(mode=0o700)
    elif kind == "fifo":
        os.mkfifo(path, 0o600)  # nobody writes: a blocking read would never return
    else:
        own_file(tmp_path, "x" * 100_000)
    with pytest.raises(ConfigError, match="cannot read") as caught:
        load_or_create_token(path)
    assert str(path) in str(caught.value)
