"""The reference server's catalog: what it serves, and what it refuses at start-up."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from skillward.core.config import Limits
from skillward.core.errors import ServerRejected
from skillward.core.verify import sha256_digest
from skillward.core.wire import parse_entry
from skillward.edge._tree import (
    FileTooLarge,
    _prefix,
    encode_segment,
    find_skill_dirs,
    read_regular_file,
    walk_files,
)
from skillward.edge.client import SkillsClient
from skillward.edge.servers import InMemoryTransport, ServerSpec
from skillward.serve.catalog import ServedSkill, SkillCatalog, example_skills_dir
from skillward.serve.server import SkillsServer, build_server
from tests.support.trees import build_tree, skill_md, write


def test_every_skill_in_a_tree_is_found_with_nested_paths(tmp_path: Path) -> None:
    build_tree(tmp_path)
    catalog = SkillCatalog.from_directory(tmp_path, unlisted=["hidden-skill"])
    assert catalog.problems == []
    assert [s.uri for s in catalog.listed()] == [
        "skill://acme/billing/refunds/SKILL.md",
        "skill://acme/billing/refunds/partial/SKILL.md",
        "skill://git-workflow/SKILL.md",
    ]
    assert "skill://hidden-skill/SKILL.md" in catalog.skills


def test_enclosing_skill_lists_its_nested_skill_files(tmp_path: Path) -> None:
    build_tree(tmp_path)
    refunds = SkillCatalog.from_directory(tmp_path).skills["skill://acme/billing/refunds/SKILL.md"]
    uris = [f.uri for f in refunds.files]
    assert "skill://acme/billing/refunds/partial/SKILL.md" in uris
    assert "skill://acme/billing/refunds/partial/steps.md" in uris


def test_entries_are_valid_and_digests_cover_the_raw_bytes(tmp_path: Path) -> None:
    files = build_tree(tmp_path)
    catalog = SkillCatalog.from_directory(tmp_path)
    for skill in catalog.skills.values():
        entry = parse_entry(skill.entry())
        for item in entry.manifest.values():
            assert item.digest == sha256_digest(files[item.uri])
            assert item.size == len(files[item.uri])


def test_a_tree_whose_root_is_a_skill_publishes_it_under_the_root_name(tmp_path: Path) -> None:
    root = tmp_path / "solo"
    write(root, "SKILL.md", skill_md("solo"))
    assert list(SkillCatalog.from_directory(root).skills) == ["skill://solo/SKILL.md"]


@pytest.mark.parametrize(
    ("relative", "content", "reason"),
    [
        ("Bad-Name/SKILL.md", skill_md("bad-name"), "must equal frontmatter.name"),
        ("mismatch/SKILL.md", skill_md("other"), "must equal frontmatter.name"),
        ("no-fm/SKILL.md", b"# no frontmatter\n", "must begin"),
        ("bad-yaml/SKILL.md", b"---\nname: [\n---\n", "not valid YAML"),
        ("no-desc/SKILL.md", b"---\nname: no-desc\n---\n", "description"),
        ("meta/SKILL.md", skill_md("meta", extra="metadata:\n  v: 1\n"), "metadata"),
        ("under_score/SKILL.md", skill_md("under_score"), "skill name"),
    ],
)
def test_skills_breaking_the_rules_are_refused_with_a_reason(
    tmp_path: Path, relative: str, content: bytes, reason: str
) -> None:
    write(tmp_path, "good/SKILL.md", skill_md("good"))
    write(tmp_path, relative, content)
    catalog = SkillCatalog.from_directory(tmp_path)
    assert list(catalog.skills) == ["skill://good/SKILL.md"]
    assert len(catalog.problems) == 1
    assert reason in catalog.problems[0]
    assert "refused" in catalog.problems[0]


class _HostChecked(SkillCatalog):
    """The catalog checking each entry exactly as a host does, with parse_entry."""

    def _check_entry(self, skill: ServedSkill) -> None:
        parse_entry(skill.entry(), limits=self.limits)


# Segments a host reads differently as the authority (":", "@"), that need encoding
# (space, "%", non-ASCII), or that are long enough, nested, to pass the URI length cap.
_SEGMENTS = st.one_of(
    st.text(alphabet="ab-:@%~!é .", min_size=1, max_size=6),
    st.sampled_from(["a", "ab", "x:y", "a@b", "%41", "é" * 100, "é" * 100]),
).filter(lambda s: s not in (".", "..") and not s.startswith("."))
_NAMES = st.sampled_from(["a", "ab", "a-b", "Ab", "a_b", "-a"])
# (folders above the skill's own, its name, whether its folder is named otherwise, files)
_SKILLS = st.lists(
    st.tuples(
        st.lists(_SEGMENTS, max_size=3),
        _NAMES,
        st.booleans(),
        st.lists(st.lists(_SEGMENTS, min_size=1, max_size=4), max_size=3),
    ),
    min_size=1,
    max_size=4,
)


@pytest.mark.threat("T10")
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(skills=_SKILLS)
@example(skills=[([], "a", False, [["é" * 100] * 4])])
@example(skills=[(["x:y"], "a", False, []), (["a@b"], "ab", False, [])])
def test_the_server_serves_exactly_the_entries_a_host_accepts(
    skills: list[tuple[list[str], str, bool, list[list[str]]]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for prefix, name, renamed, files in skills:
            directory = root.joinpath(*prefix, name + "-x" if renamed else name)
            try:
                write(directory, "SKILL.md", skill_md(name))
                for parts in files:
                    write(directory, "/".join(parts), b"x")
            except OSError:
                continue  # a name this filesystem refuses, or a file where a folder is
        served = SkillCatalog.from_directory(root)
        checked = _HostChecked.from_directory(root)
    assert sorted(served.skills) == sorted(checked.skills)
    assert len(served.problems) == len(checked.problems)
    for skill in served.skills.values():
        parse_entry(skill.entry())


@pytest.mark.threat("T11")
def test_a_frontmatter_within_the_yaml_cap_but_larger_as_json_is_refused(tmp_path: Path) -> None:
    # 2000 short pairs: about 62 KB as YAML, 68 KB as JSON (quotes, colons and commas).
    pairs = "".join(f"k{i:03}: {'v' * 24}\n" for i in range(2000))
    write(tmp_path, "big/SKILL.md", skill_md("big", extra=pairs))
    write(tmp_path, "small/SKILL.md", skill_md("small"))
    for catalog in (SkillCatalog.from_directory(tmp_path), _HostChecked.from_directory(tmp_path)):
        assert list(catalog.skills) == ["skill://small/SKILL.md"]
        assert "larger than 65536 bytes as JSON" in catalog.problems[0]


@pytest.mark.threat("T10")
def test_a_first_segment_no_authority_can_be_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "team:one/s/SKILL.md", skill_md("s"))
    write(tmp_path, "team/x:y/SKILL.md", skill_md("x:y"))
    write(tmp_path, "team/s/SKILL.md", skill_md("s"))
    catalog = SkillCatalog.from_directory(tmp_path)
    assert list(catalog.skills) == ["skill://team/s/SKILL.md"]
    assert any("port" in problem for problem in catalog.problems)


def test_a_file_uri_longer_than_hosts_accept_refuses_its_skill(tmp_path: Path) -> None:
    deep = "/".join(["é" * 100] * 4)  # each "é" is six characters once percent-encoded
    write(tmp_path, "s/SKILL.md", skill_md("s"))
    write(tmp_path, f"s/{deep}/file.md", b"x")
    catalog = SkillCatalog.from_directory(tmp_path)
    assert catalog.skills == {}
    assert "hosts accept at most 2048" in catalog.problems[0]


def test_building_a_catalog_leaves_no_garbage_for_the_collector(tmp_path: Path) -> None:
    # `skillward serve` builds with the collector off, then freezes what it built.
    build_tree(tmp_path)
    write(tmp_path, "bad/SKILL.md", b"---\nname: [\n---\n")
    write(tmp_path, "other/SKILL.md", skill_md("mismatch"))
    gc.collect()
    gc.disable()
    try:
        catalog = SkillCatalog.from_directory(tmp_path)
        server = build_server(catalog)
        assert len(catalog.problems) == 2
        assert gc.collect() == 0
    finally:
        gc.enable()
    assert server.name == "skillward-serve"


def test_a_walk_over_kept_listings_finds_what_a_fresh_walk_finds(tmp_path: Path) -> None:
    build_tree(tmp_path)
    write(tmp_path, "git-workflow/.hidden/x", b"x")
    os.symlink(tmp_path / "hidden-skill", tmp_path / "git-workflow" / "link")
    kept: dict[str, Any] = {}
    found, _ = find_skill_dirs(tmp_path, keep=kept)
    assert len(found) == 4
    for _, directory in found:
        assert walk_files(directory, listings=kept) == walk_files(directory)


@pytest.mark.threat("T11")
def test_files_are_read_whole_up_to_the_cap_and_refused_one_byte_past_it(tmp_path: Path) -> None:
    data = os.urandom(3 * 1024 * 1024 + 7)
    path = write(tmp_path, "big.bin", data)
    assert read_regular_file(path, len(data)) == data
    assert read_regular_file(path, len(data), snapshot=True) == data
    with pytest.raises(FileTooLarge):
        read_regular_file(path, len(data) - 1)
    assert read_regular_file(path, 100, cut=True) == data[:100]
    assert read_regular_file(write(tmp_path, "empty", b""), 10) == b""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
def test_a_file_longer_than_its_size_says_is_still_read_to_its_end(tmp_path: Path) -> None:
    # /proc files report a size of 0: the reader must not trust fstat for the length.
    status = Path("/proc/self/status")
    assert status.stat().st_size == 0
    for snapshot in (False, True):
        text = read_regular_file(status, 1_000_000, snapshot=snapshot)
        assert text.startswith(b"Name:")
        assert b"\nPid:" in text
    with pytest.raises(FileTooLarge):
        read_regular_file(status, 10)


def test_a_skill_over_the_file_limit_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "big/SKILL.md", skill_md("big"))
    for i in range(512):
        write(tmp_path, f"big/f{i:03}.txt", b"x")
    catalog = SkillCatalog.from_directory(tmp_path)
    assert catalog.skills == {}
    assert "513 files" in catalog.problems[0]


@pytest.mark.threat("T10")
def test_symlinks_are_never_followed_out_of_the_tree(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "secret.txt", b"secret")
    write(outside, "evil/SKILL.md", skill_md("evil"))
    tree = tmp_path / "tree"
    write(tree, "safe/SKILL.md", skill_md("safe"))
    os.symlink(outside / "secret.txt", tree / "safe" / "secret.txt")
    os.symlink(outside / "evil", tree / "evil")
    os.symlink(outside, tree / "safe" / "more")
    catalog = SkillCatalog.from_directory(tree)
    assert list(catalog.skills) == ["skill://safe/SKILL.md"]
    assert list(catalog.files) == ["skill://safe/SKILL.md"]
    assert all(b"secret" not in f.data for f in catalog.files.values())
    assert any("symlink" in p for p in catalog.problems)


def test_a_skills_files_are_served_as_deep_as_the_walk_goes_and_no_deeper(
    tmp_path: Path,
) -> None:
    write(tmp_path, "s/SKILL.md", skill_md("s"))
    write(tmp_path, "s/" + "d/" * 14 + "deep.md", b"deep")
    write(tmp_path, "s/" + "d/" * 16 + "deeper.md", b"deeper")
    catalog = SkillCatalog.from_directory(tmp_path)
    assert "skill://s/" + "d/" * 14 + "deep.md" in catalog.files
    assert not [uri for uri in catalog.files if uri.endswith("deeper.md")]
    assert any("deeper than 16 levels" in problem for problem in catalog.problems)


def test_hidden_files_are_not_part_of_a_skill(tmp_path: Path) -> None:
    write(tmp_path, "s/SKILL.md", skill_md("s"))
    write(tmp_path, "s/.git/config", b"x")
    write(tmp_path, "s/.DS_Store", b"x")
    assert list(SkillCatalog.from_directory(tmp_path).files) == ["skill://s/SKILL.md"]


def test_file_names_become_canonical_uri_segments(tmp_path: Path) -> None:
    write(tmp_path, "s/SKILL.md", skill_md("s"))
    write(tmp_path, "s/my notes/café.md", b"x")
    assert "skill://s/my%20notes/caf%C3%A9.md" in SkillCatalog.from_directory(tmp_path).files


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "back\\slash", "tab\there"])
def test_names_no_canonical_uri_can_carry_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match=r"cannot|character"):
        encode_segment(name)


def test_decorator_registers_skill_directories_at_their_skill_paths(tmp_path: Path) -> None:
    write(tmp_path, "refunds/SKILL.md", skill_md("refunds"))
    write(tmp_path, "refunds/templates/a.md", b"a")
    skills = SkillsServer(name="acme-skills")

    @skills.skill("acme/billing/refunds")
    def refunds() -> Path:
        return tmp_path / "refunds"

    catalog = skills.catalog()
    assert list(catalog.skills) == ["skill://acme/billing/refunds/SKILL.md"]
    assert "skill://acme/billing/refunds/templates/a.md" in catalog.files
    server = skills.build()
    assert server.name == "acme-skills"
    assert server.extensions == {"io.modelcontextprotocol/skills": {"directoryRead": True}}


@pytest.mark.threat("T10")
def test_a_registered_folder_reached_through_a_link_is_served_but_no_link_below_it(
    tmp_path: Path,
) -> None:
    write(tmp_path, "real/refunds/SKILL.md", skill_md("refunds"))
    write(tmp_path, "outside/secret.md", b"secret")
    os.symlink(tmp_path / "real", tmp_path / "checkout")
    os.symlink(tmp_path / "outside", tmp_path / "real" / "refunds" / "more")
    skills = SkillsServer(name="acme-skills")

    @skills.skill("refunds")
    def refunds() -> Path:
        return tmp_path / "checkout" / "refunds"

    @skills.skill("gone")
    def gone() -> Path:
        return tmp_path / "nowhere"

    catalog = skills.catalog()
    assert list(catalog.files) == ["skill://refunds/SKILL.md"]
    assert [r.skill_path for r in catalog.refusals if r.message.startswith("refused")] == ["gone"]


def test_bundled_examples_are_all_servable() -> None:
    catalog = SkillCatalog.from_directory(example_skills_dir())
    assert catalog.problems == []
    assert len(catalog.skills) >= 3
    assert any(f.uri.endswith(".png") for f in catalog.files.values())


async def _with_client(catalog: SkillCatalog, **options: Any) -> Any:
    spec = ServerSpec(
        label="ref", transport=InMemoryTransport(server=build_server(catalog, **options))
    )
    return SkillsClient.connect(spec, limits=Limits())


@pytest.mark.anyio
async def test_tamper_flips_one_byte_while_the_listing_keeps_the_true_digest(
    tmp_path: Path,
) -> None:
    files = build_tree(tmp_path)
    uri = "skill://git-workflow/SKILL.md"
    catalog = SkillCatalog.from_directory(tmp_path)
    with anyio.fail_after(10):
        async with await _with_client(catalog, tamper=[uri]) as client:
            entry = await client.get_skill(uri)
            data = await client.read_resource(uri)
    assert entry.manifest[uri].digest == sha256_digest(files[uri])
    assert data != files[uri]
    assert len(data) == len(files[uri])
    assert sum(a != b for a, b in zip(data, files[uri], strict=True)) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("cursor", ["garbage", "c2tpbGxzOjk5OQ==", "ZGlyOng6MQ=="])
async def test_unknown_cursors_get_invalid_params(tmp_path: Path, cursor: str) -> None:
    build_tree(tmp_path)
    catalog = SkillCatalog.from_directory(tmp_path)
    with anyio.fail_after(10):
        async with await _with_client(catalog, page_size=1) as client:
            with pytest.raises(ServerRejected) as info:
                await client.list_skills_page(cursor)
    assert info.value.code == -32602


@given(
    path=st.text(alphabet="/ab.\\:", max_size=8),
    name=st.text(alphabet="ab.\\: ", min_size=1, max_size=4),
)
def test_a_walks_paths_are_joined_as_os_path_join_joins_them(path: str, name: str) -> None:
    assert _prefix(path) + name == os.path.join(path, name)


@pytest.mark.threat("T11")
@settings(max_examples=60)
@given(length=st.integers(1, 60), size=st.integers(20, 100))
def test_a_frontmatter_of_a_name_and_description_alone_is_bounded_as_a_host_bounds_it(
    length: int, size: int
) -> None:
    limits = Limits(max_frontmatter_bytes=size)
    with tempfile.TemporaryDirectory() as tmp:
        write(Path(tmp), "s/SKILL.md", skill_md("s", description="d" * length))
        served = SkillCatalog.from_directory(tmp, limits=limits)
        checked = _HostChecked.from_directory(tmp, limits=limits)
    assert list(served.skills) == list(checked.skills)
    assert bool(served.skills) is (28 + 1 + length <= size)


_SWAPPER = """
import os, sys
tree, outside, stop, ready = sys.argv[1:]
folders = sorted(os.path.join(tree, name, "references") for name in os.listdir(tree))
open(ready, "w").close()
while not os.path.exists(stop):
    for folder in folders:
        os.rename(folder, folder + ".real")
        os.symlink(outside, folder)
        os.unlink(folder)
        os.rename(folder + ".real", folder)
"""


@pytest.mark.threat("T10", "T65")
def test_a_folder_swapped_for_a_link_while_the_tree_is_read_serves_nothing_from_outside(
    tmp_path: Path,
) -> None:
    # Another process swaps each skill's references/ for a link out of the tree, and back,
    # as fast as it can, while the tree is scanned and read again and again.
    outside = tmp_path / "outside"
    write(outside, "guide.md", b"the secret outside the tree\n")
    tree = tmp_path / "tree"
    for index in range(40):
        write(tree, f"s{index:02}/SKILL.md", skill_md(f"s{index:02}"))
        write(tree, f"s{index:02}/references/guide.md", b"the skill's own guide\n")
    stop, ready = tmp_path / "stop", tmp_path / "ready"
    argv = [str(tree), str(outside), str(stop), str(ready)]
    swapper = subprocess.Popen([sys.executable, "-c", _SWAPPER, *argv])
    try:
        waited_until = time.monotonic() + 30
        while not ready.exists() and swapper.poll() is None and time.monotonic() < waited_until:
            os.sched_yield()
        assert ready.exists(), "the swapping process did not start"
        served_whole = 0
        for _ in range(150):
            catalog = SkillCatalog.from_directory(tree)
            assert all(b"secret" not in f.data for f in catalog.files.values())
            served_whole += sum(len(skill.files) == 2 for skill in catalog.skills.values())
        assert served_whole  # the race was run: skills were read whole between the swaps
    finally:
        stop.touch()
        swapper.wait(timeout=30)
    assert swapper.returncode == 0


_FEW_DESCRIPTORS = """
import resource, sys
from skillward.serve.catalog import SkillCatalog
resource.setrlimit(resource.RLIMIT_NOFILE, (48, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
catalog = SkillCatalog.from_directory(sys.argv[1])
print(len(catalog.files), catalog.problems)
"""


def test_a_skill_with_a_folder_for_each_file_is_read_with_few_descriptors_open(
    tmp_path: Path,
) -> None:
    # Each folder is opened through its parent's, and closed once its files are read: a
    # skill of 200 folders is served by a process allowed 48 open files.
    write(tmp_path, "s/SKILL.md", skill_md("s"))
    for index in range(200):
        write(tmp_path, f"s/d{index:03}/f.md", b"f")
    done = subprocess.run(
        [sys.executable, "-c", _FEW_DESCRIPTORS, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.split(" ", 1) == ["201", "[]\n"]
