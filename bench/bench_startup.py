"""Start-up: how soon the command answers, and what importing skillward costs.

Each command runs in a fresh process, best of several runs, alternating with its
baselines so that load on a shared machine falls on all alike. Baselines, measured here:
``python -c pass`` (the interpreter) and ``python -c "import mcp"`` (the SDK, which every
command that talks to a server must import). Goals:

* ``skillward --version`` within 250 ms;
* ``import skillward``, and importing every public name, each at most 150 ms more than
  ``import mcp`` alone. No public name imports the SDK: the host imports its client edge
  (and so ``mcp``) when it first connects a server. So every public name and the client
  edge are timed together too, against the same goal: skillward's own part of a cold
  start that connects a server;
* ``skillward list`` against a local stdio server dominated by that server's own start-up
  (its time to an initialized session, measured with a bare ``mcp.Client``): at most 2x it.
  Both processes import ``mcp``; the command starts the server before it imports the SDK,
  so the two imports run at the same time. The command's own part, the list less the
  server's start-up, is printed against ``import mcp`` too.

skillward's modules are compiled to bytecode first (``_timing``), as installing a wheel
leaves them, so that no run pays for compiling them.

Run: .venv/bin/python bench/bench_startup.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).parent))

from _timing import report, report_added, report_within

ROUNDS = 11
PYTHON = sys.executable
SERVE = [PYTHON, "-m", "skillward", "serve"]  # the bundled example skills, over stdio


def skillward_argv() -> list[str]:
    """The installed console script, as people run it (``python -m`` adds runpy)."""
    script = shutil.which("skillward", path=str(Path(PYTHON).parent))
    return [script] if script else [PYTHON, "-m", "skillward"]


def timed(argv: Sequence[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def best_alternating(runs: dict[str, list[str]], env: dict[str, str]) -> dict[str, float]:
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(ROUNDS):
        for name, argv in runs.items():
            best[name] = min(best[name], timed(argv, env))
    return best


async def list_and_server(listing: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Best times of ``skillward list`` and of its server's start-up alone (launch to an
    initialized session), run in alternation."""
    # The server's stderr to /dev/null, through sh (a millisecond): skillward logs it.
    quiet = ["-c", 'exec "$@" 2>/dev/null', "sh", *SERVE]
    params = StdioServerParameters(command="sh", args=quiet, env=env)
    best_list = best_server = float("inf")
    for _ in range(ROUNDS):
        started = time.perf_counter()
        await anyio.run_process(listing, env=env)
        best_list = min(best_list, time.perf_counter() - started)
        started = time.perf_counter()
        async with Client(params, cache=None) as client:
            best_server = min(best_server, time.perf_counter() - started)
            assert client.server_capabilities is not None
    return best_list, best_server


def main() -> None:
    with tempfile.TemporaryDirectory() as home:
        # A clean home: no servers file, policy, keyring or cache of the user's.
        env = {
            **os.environ,
            "HOME": home,
            "XDG_CONFIG_HOME": f"{home}/.config",
            "XDG_CACHE_HOME": f"{home}/.cache",
            "XDG_STATE_HOME": f"{home}/.local/state",
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        }
        command = skillward_argv()
        every_name = "import skillward\nfor n in skillward.__all__: getattr(skillward, n)"
        best = best_alternating(
            {
                "pass": [PYTHON, "-c", "pass"],
                "mcp": [PYTHON, "-c", "import mcp"],
                "version": [*command, "--version"],
                "policy": [*command, "policy", "show", "--json"],
                "import": [PYTHON, "-c", "import skillward"],
                "every name": [PYTHON, "-c", every_name],
                "and the edge": [PYTHON, "-c", every_name + "\nimport skillward.edge.client"],
            },
            env,
        )
        listing = [*command, "list", "--no-local", "--server", "local=" + " ".join(SERVE)]
        listed, serving = anyio.run(list_and_server, listing, env)

    print(f"start-up, best of {ROUNDS} runs each")
    report_within(
        "skillward --version", best["version"], "python -c pass", best["pass"], goal_ms=250
    )
    report(
        "skillward policy show --json (no server, no mcp)",
        best["policy"],
        "python -c 'import mcp'",
        best["mcp"],
    )
    report_added("import skillward", best["import"], "import mcp", best["mcp"], goal_ms=150)
    report_added(
        "import skillward and every public name",
        best["every name"],
        "import mcp",
        best["mcp"],
        goal_ms=150,
    )
    report_added(
        "import skillward, every public name and the client edge (mcp included)",
        best["and the edge"],
        "import mcp",
        best["mcp"],
        goal_ms=150,
    )
    report(
        "skillward list, one local stdio server",
        listed,
        "that server's start-up alone",
        serving,
        goal=2.0,
    )
    report(
        "  of which the command's own part (the list less the server's start-up)",
        listed - serving,
        "python -c 'import mcp'",
        best["mcp"],
    )


if __name__ == "__main__":
    main()
