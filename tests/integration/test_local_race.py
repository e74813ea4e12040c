"""Local skill folders swapped for symlinks to an outside folder while skillward reads them.

Another process swaps the skill's folder with a symlink by ``rename``, round after round, while
the host discovers, loads and reads the skill: whatever the moment, what is served is
the folder's own content, or a typed error naming the local label; never what the
symlink points to.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from skillward.core.config import Limits
from skillward.core.errors import InvalidEntry, UsageError
from skillward.edge._local import LocalSkillDir, discover
from skillward.host.skillhost import HostConfig, SkillHost
from tests.support.doubles import Approving
from tests.support.trees import skill_md, write

pytestmark = pytest.mark.threat("T10")

ROUNDS = 300
DISCOVERIES = 300
INSIDE, OUTSIDE = "inside the skills directory", "OUTSIDE the skills directory"


def two_trees(tmp_path: Path) -> tuple[Path, Path]:
    """A skills directory with team/foo, and an outside folder with a team/foo of its own."""
    skills, outside = tmp_path / "skills", tmp_path / "outside"
    for root, text in ((skills, INSIDE), (outside, OUTSIDE)):
        write(root, "team/foo/SKILL.md", skill_md("foo", text) + f"{text}\n".encode())
        write(root, "team/foo/secret.txt", text.encode())
    return skills, outside


# Swaps PLACE with the symlink at LINK by rename, again and again until killed, moving the
# folder to REAL meanwhile; writes one byte when the first swap is done.
SWAPPER = """
import os, sys
place, real, link = sys.argv[1:]
first = True
while True:
    os.rename(place, real)
    os.rename(link, place)
    os.rename(place, link)
    os.rename(real, place)
    if first:
        print(end="s", flush=True)
        first = False
"""


@contextlib.asynccontextmanager
async def swapping(skills: Path, relative: str, outside: Path) -> AsyncIterator[None]:
    """``skills/relative`` swapped with a symlink to ``outside/relative`` by another process,
    again and again while the block runs."""
    place = skills / relative
    real, link = place.with_name(".real"), place.with_name(".link")  # hidden: never listed
    link.symlink_to(outside / relative)
    command = [sys.executable, "-c", SWAPPER, str(place), str(real), str(link)]
    async with await anyio.open_process(command) as process:
        try:
            assert process.stdout is not None
            assert await process.stdout.receive(1) == b"s"
            yield
        finally:
            process.kill()
            await process.wait()


async def load_and_read(host: SkillHost) -> str | InvalidEntry | UsageError:
    """The skill's SKILL.md as loaded and its secret.txt as read, or why they were refused."""
    try:
        activation = await host.activate("project:team/foo")
        host.deactivate("project:team/foo")
        read = await host.read_file("project:team/foo", "secret.txt")
    except (InvalidEntry, UsageError) as error:
        return error
    return activation.block.text() + read.text()


@pytest.mark.anyio
@pytest.mark.parametrize("relative", ["team", "team/foo"])
async def test_a_folder_swapped_for_a_symlink_while_a_skill_is_loaded_and_read_serves_only_its_own(
    tmp_path: Path, relative: str
) -> None:
    skills, outside = two_trees(tmp_path)
    config = HostConfig(local_dirs=(LocalSkillDir("project", skills),))
    with anyio.fail_after(120):
        async with (
            SkillHost(config=config, approver=Approving()) as host,
            swapping(skills, relative, outside),
        ):
            for _ in range(ROUNDS):
                outcome = await load_and_read(host)
                if isinstance(outcome, str):
                    assert outcome.count(INSIDE) == 2  # the body, and the file
                    assert OUTSIDE not in outcome
                else:
                    assert outcome.server == "project"
                    assert outcome.local
                    assert OUTSIDE not in str(outcome)


@pytest.mark.anyio
@pytest.mark.parametrize("relative", ["team", "team/foo"])
async def test_a_folder_swapped_for_a_symlink_during_discovery_is_never_discovered_through(
    tmp_path: Path, relative: str
) -> None:
    skills, outside = two_trees(tmp_path)
    # Listed after team/foo is found and before its SKILL.md is read: the scan lingers.
    for index in range(800):
        write(skills, f"zzz/f{index}", b"")
    with anyio.fail_after(120):
        async with swapping(skills, relative, outside):
            for _ in range(DISCOVERIES):
                source = LocalSkillDir("project", skills)
                _, records, declined, _ = discover(source, limits=Limits())
                assert [r.description for r in records] in ([INSIDE], [])
                assert all(OUTSIDE not in str(d.error) for d in declined)
