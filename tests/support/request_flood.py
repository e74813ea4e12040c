"""A stdio peer that completes the 2025-11-25 handshake, then sends request after request
(``sampling/createMessage``, which the client never declared) and reads none of the
answers: each of them the SDK would hold in a task of its own.

``same-id``: every request has the same id (the SDK starts a task for each all the same).
``cancel-late``: ``ping`` requests in batches of 32, each batch called off with
``notifications/cancelled`` a moment after it was sent, once the client's answers are
being written (blocked, as nothing is read): too late to cancel them, and the SDK ignores
such a cancel.

Run as ``python -m tests.support.request_flood COUNT [same-id | cancel-late]``.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    count = int(sys.argv[1])
    mode = sys.argv[2] if len(sys.argv) > 2 else ""
    hello = json.loads(sys.stdin.readline())
    capabilities: dict[str, Any] = {
        "resources": {},
        "extensions": {"io.modelcontextprotocol/skills": {}},
    }
    result = {
        "protocolVersion": "2025-11-25",
        "capabilities": capabilities,
        "serverInfo": {"name": "request-flood", "version": "1"},
    }
    send({"jsonrpc": "2.0", "id": hello["id"], "result": result})
    sys.stdin.readline()  # notifications/initialized; nothing is read after it
    if mode == "cancel-late":
        for start in range(0, count, 32):
            ids = [f"p{n}" for n in range(start, start + 32)]
            for ident in ids:
                send({"jsonrpc": "2.0", "id": ident, "method": "ping"})
            time.sleep(0.005)  # the client answers them meanwhile
            for ident in ids:
                cancel = {"requestId": ident}
                send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
    else:
        params = {"messages": [], "maxTokens": 1}
        for n in range(count):
            ident = "s" if mode == "same-id" else f"s{n}"
            method = "sampling/createMessage"
            send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
    threading.Event().wait()  # until the client ends it


if __name__ == "__main__":
    main()
