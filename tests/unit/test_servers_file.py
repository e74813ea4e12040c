"""The servers file changed one entry at a time: values stored exactly as given, changes
made at once all kept, a linked file changed where it lives."""

from __future__ import annotations

import json
import shlex
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillward.core.errors import ConfigError
from skillward.edge._serversfile import add_server, new_entry, read_entries, remove_server
from skillward.edge.servers import load_mcp_servers

#: What an HTTP header value may hold: visible ASCII, spaces and tabs.
HEADER_VALUES = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E) | st.just("\t"))
WORDS = st.lists(st.text().filter(lambda t: "\0" not in t))


@settings(max_examples=60)
@given(value=HEADER_VALUES)
def test_a_header_value_is_stored_exactly_as_given(
    tmp_path_factory: pytest.TempPathFactory, value: str
) -> None:
    path = tmp_path_factory.mktemp("h") / "servers.json"
    entry = new_entry("docs", "https://docs.example.com/mcp", headers={"Authorization": value})
    add_server(path, "docs", entry)
    stored = json.loads(path.read_text(encoding="utf-8"))["mcpServers"]["docs"]
    assert stored == {"url": "https://docs.example.com/mcp", "headers": {"Authorization": value}}


@settings(max_examples=60)
@given(command=st.text(min_size=1).filter(lambda t: "\0" not in t), args=WORDS)
def test_a_command_line_given_as_one_argument_comes_back_as_its_words(
    tmp_path_factory: pytest.TempPathFactory, command: str, args: list[str]
) -> None:
    path = tmp_path_factory.mktemp("c") / "servers.json"
    entry = new_entry("team", shlex.join([command, *args]))
    if "url" in entry:
        return  # the command looks like a URL: a URL it is, as for --server
    add_server(path, "team", entry)
    stored = json.loads(path.read_text(encoding="utf-8"))["mcpServers"]["team"]
    assert stored == {"command": command, "args": args}


@pytest.mark.threat("T24")
def test_text_that_cannot_be_written_as_utf8_is_refused_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "servers.json"
    entry = new_entry("team", "team-mcp", env={"NAME": "caf\udce9"})  # argv's undecodable bytes
    with pytest.raises(ConfigError, match="UTF-8"):
        add_server(path, "team", entry)
    assert not path.exists()
    assert list(tmp_path.glob(".servers.json.*.tmp")) == []


def test_changes_made_at_once_are_all_kept(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    labels = [f"server-{n}" for n in range(16)]
    start = threading.Barrier(len(labels))

    def add(label: str) -> None:
        start.wait()
        add_server(path, label, new_entry(label, f"{label}-mcp --stdio"))

    threads = [threading.Thread(target=add, args=(label,)) for label in labels]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(load_mcp_servers(path).servers) == sorted(labels)
    removals = [threading.Thread(target=remove_server, args=(path, label)) for label in labels[1:]]
    for thread in removals:
        thread.start()
    for thread in removals:
        thread.join(timeout=60)
    assert [entry.label for entry in read_entries(path)] == labels[:1]


def test_a_linked_servers_file_is_changed_where_it_lives_and_stays_linked(
    tmp_path: Path,
) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "servers.json"
    real.write_text('{"mcpServers": {}}')
    link = tmp_path / "config" / "servers.json"
    link.parent.mkdir()
    link.symlink_to(real)
    add_server(link, "acme", new_entry("acme", "acme-mcp"))
    assert link.is_symlink()
    assert json.loads(real.read_text())["mcpServers"] == {
        "acme": {"command": "acme-mcp", "args": []}
    }
