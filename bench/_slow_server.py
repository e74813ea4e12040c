"""A stand-in upstream for bench_gateway_startup.py: a SEP-2640 server over stdio that
takes ``DELAY`` seconds to start (as one that downloads or boots a runtime does) and
then answers ``server/discover`` and ``skills/list`` with ``COUNT`` skills, in pages of
2,500, and ``resources/read`` of each one's SKILL.md. The standard library only, so
that its own start-up is the delay, not an import.

Run: python bench/_slow_server.py DELAY COUNT
"""

from __future__ import annotations

import hashlib
import json
import sys
import time

PAGE = 2500
SKILL_MD = b"---\nname: {name}\ndescription: One of many.\n---\nBody\n"


def entry(index: int) -> dict[str, object]:
    name = f"skill-{index}"
    data = SKILL_MD.replace(b"{name}", name.encode())
    uri = f"skill://team-{index % 50}/{name}/SKILL.md"
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    return {
        "uri": uri,
        "frontmatter": {"name": name, "description": "One of many."},
        "resources": [{"uri": uri, "digest": digest, "size": len(data)}],
    }


def main() -> None:
    delay, count = float(sys.argv[1]), int(sys.argv[2])
    time.sleep(delay)
    entries = [entry(index) for index in range(count)]
    discover: dict[str, object] = {
        "capabilities": {"extensions": {"io.modelcontextprotocol/skills": {}}, "resources": {}},
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "slow", "version": "1"}},
    }
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method = message.get("method")
        if method == "server/discover":
            result: dict[str, object] = discover
        elif method == "resources/read":
            uri = str((message.get("params") or {}).get("uri"))
            name = uri.rsplit("/", 2)[-2]
            text = SKILL_MD.replace(b"{name}", name.encode()).decode()
            result = {
                "contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}],
                "resultType": "complete",
                "ttlMs": 0,
                "cacheScope": "private",
            }
        elif method == "skills/list":
            start = int((message.get("params") or {}).get("cursor") or 0)
            result = {"skills": entries[start : start + PAGE], "resultType": "complete"}
            if start + PAGE < count:
                result["nextCursor"] = str(start + PAGE)
        else:
            error = {"code": -32601, "message": "not here"}
            answer = {"jsonrpc": "2.0", "id": message["id"], "error": error}
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
            continue
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}))
        sys.stdout.write("\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
