"""Whose process is at the other end of a loopback connection, as the kernel's TCP table
lists it: the row whose local address is the peer's and whose remote address is ours."""

from __future__ import annotations

import os
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillward.edge._peers import same_user, uid_in_table

pytestmark = pytest.mark.threat("T46")

HEADER = (
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
    "timeout inode"
)


def row(local: str, remote: str, uid: int) -> str:
    return f"   1: {local} {remote} 01 00000000:00000000 00:00000000 00000000  {uid}  0 1 1"


def test_the_row_of_the_peers_socket_gives_its_uid() -> None:
    table = [
        HEADER,
        row("0100007F:D431", "0100007F:1F90", 0).replace(" 01 ", " 06 "),  # TIME_WAIT
        row("0100007F:1F90", "0100007F:D431", 0),  # our side of the connection
        row("0100007F:D431", "0100007F:1F90", 1002),  # the peer's side
    ]
    assert uid_in_table(table, ("127.0.0.1", 0xD431), ("127.0.0.1", 0x1F90)) == 1002
    assert uid_in_table(table, ("127.0.0.1", 0x1F90), ("127.0.0.1", 0xD431)) == 0
    assert uid_in_table(table, ("127.0.0.1", 1), ("127.0.0.1", 0x1F90)) is None


def test_ipv6_rows_and_ipv4_mapped_addresses_are_read() -> None:
    loopback = "00000000000000000000000001000000"
    mapped = "0000000000000000FFFF00000100007F"
    table = [
        row(f"{loopback}:C350", f"{loopback}:1F90", 7),
        row(f"{mapped}:C351", f"{mapped}:1F90", 8),
    ]
    assert uid_in_table(table, ("::1", 0xC350), ("::1", 0x1F90)) == 7
    assert uid_in_table(table, ("127.0.0.1", 0xC351), ("::ffff:127.0.0.1", 0x1F90)) == 8


@given(st.lists(st.text(max_size=200), max_size=20))
def test_any_table_text_gives_a_uid_or_none(lines: list[str]) -> None:
    found = uid_in_table(lines, ("127.0.0.1", 1), ("127.0.0.1", 2))
    assert found is None or isinstance(found, int)


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="the kernel lists no TCP table")
def test_a_connection_of_this_process_is_this_users_and_one_gone_is_not() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        local = server.getsockname()[:2]
        with socket.create_connection(local) as client:
            peer = client.getsockname()[:2]
            accepted, _ = server.accept()
            with accepted:
                assert same_user(peer, local) is True
    assert same_user(peer, local) is False  # listed nowhere now: not known to be ours
