"""A stdio peer that completes the 2025-11-25 handshake, then sends request after request
(``sampling/createMessage``, which the client never declared) and reads none of the
answers: each of them the SDK would hold in a task of its own. With ``same-id``, every
request has the same id (the SDK starts a task for each all the same).

Run as ``python -m tests.support.request_flood COUNT [same-id]``.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    count = int(sys.argv[1])
    same_id = sys.argv[2:] == ["same-id"]
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
    params = {"messages": [], "maxTokens": 1}
    for n in range(count):
        send(
            {
                "jsonrpc": "2.0",
                "id": "s" if same_id else f"s{n}",
                "method": "sampling/createMessage",
                "params": params,
            }
        )
    threading.Event().wait()  # until the client ends it


if __name__ == "__main__":
    main()
