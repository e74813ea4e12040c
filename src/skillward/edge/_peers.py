"""Whose process is at the other end of a loopback TCP connection.

A loopback port is open to every user of the machine, so a URL is all that guards a page
served on one, and a URL given to a browser on its command line can be read by any user
(``/proc/PID/cmdline``). On Linux the kernel lists each TCP socket with the uid that
owns it (``/proc/net/tcp`` and ``tcp6``): the peer's socket is the one whose local
address is the peer's and whose remote address is ours. Elsewhere this cannot be told
here, and :func:`same_user` says so (None).
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["Address", "SameUser", "same_user", "uid_in_table"]

#: An endpoint as an ASGI scope's ``client`` or ``server`` gives it.
Address = tuple[str, int]
#: Whether the peer (first) of a connection to ``local`` (second) is this user's: None
#: when it cannot be told.
SameUser = Callable[[Address, Address], bool | None]

_TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
#: States of a socket that can still be sending a request: established, and closed by
#: the other side only (a TIME_WAIT row, for one, is listed as root's).
_CONNECTED = frozenset({"01", "08"})
#: At most this much of each table is read: a machine with more connections than that
#: has the peer's refused, which is the safe side.
_MAX_TABLE = 16 * 1024 * 1024


def _endpoint(text: str) -> Address | None:
    """``0100007F:1F90`` (or its IPv6 form) as an address: each 32-bit word of the
    address is in the host's byte order, which /proc writes as little-endian here."""
    address, _, port = text.partition(":")
    try:
        raw = bytes.fromhex(address)
        number = int(port, 16)
    except ValueError:
        return None
    if len(raw) not in (4, 16):
        return None
    ordered = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(ordered)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (str(ip), number)


def _normal(address: Address) -> Address:
    host, port = address
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (str(ip), port)


def uid_in_table(lines: Iterable[str], peer: Address, local: Address) -> int | None:
    """The uid owning the socket whose local address is ``peer`` and whose remote
    address is ``local``, as a ``/proc/net/tcp`` table lists it; None if none is."""
    want_peer, want_local = _normal(peer), _normal(local)
    for line in lines:
        fields = line.split()
        if len(fields) < 8 or not fields[0].endswith(":") or fields[3] not in _CONNECTED:
            continue  # the header, not a row, or no connection that can still send
        if _endpoint(fields[1]) == want_peer and _endpoint(fields[2]) == want_local:
            try:
                return int(fields[7])
            except ValueError:
                return None
    return None


def same_user(peer: Address, local: Address) -> bool | None:
    """Whether the process at ``peer``, connected to ``local``, runs as this user (the
    effective uid); None where the kernel's table cannot be read (not Linux)."""
    tables = [table for table in _TABLES if table.exists()]
    if not tables:
        return None
    for table in tables:
        try:
            with table.open(encoding="ascii", errors="replace") as file:
                uid = uid_in_table(_bounded(file), peer, local)
        except OSError:
            continue
        if uid is not None:
            return uid == os.geteuid()
    return False  # listed nowhere (gone already): not known to be ours


def _bounded(lines: Iterable[str]) -> Iterable[str]:
    read = 0
    for line in lines:
        read += len(line)
        if read > _MAX_TABLE:
            return
        yield line
