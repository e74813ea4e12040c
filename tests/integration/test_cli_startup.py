"""Start-up: the commands that connect no server never import mcp or the server stack,
``import skillward`` imports nothing until a name is used, and no model is built at
import. (How long it takes is for bench/bench_startup.py, never a test.)"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from skillward.cli._context import EXIT_CODES

TIMEOUT = 60
REPO = Path(__file__).resolve().parents[2]
#: What a command that talks to no server has no use for.
SERVER_STACK = (
    "mcp",
    "mcp_types",
    "uvicorn",
    "starlette",
    "sse_starlette",
    "httpx",
    "skillward.host",
    "skillward.edge.client",
    "skillward.serve",
    "skillward.cli._host",
)
POLICY = str(REPO / "policies" / "default.toml")
#: Every command the issue names, with common options on both sides for good measure.
STATE_COMMANDS = [
    ["--version"],
    ["--help"],
    ["policy", "show"],
    ["policy", "check", POLICY],
    ["policy", "schema"],
    ["audit", "--since", "1h"],
    ["approvals", "list"],
    ["approvals", "revoke", "brave_search:deploy"],
    ["approvals", "reset", "--yes"],
    ["doctor"],
    ["cache", "list"],
    ["cache", "purge", "brave_search"],
    ["logs", "brave_search"],
    ["servers", "list"],
    ["servers", "add", "brave_search", "brave-mcp --stdio", "--env", "KEY=${BRAVE_KEY}"],
    ["servers", "remove", "brave_search"],
    ["gateway", "--print-config", "claude-desktop", "--no-local"],
    ["--json", "--no-local", "policy", "show", "--server", "acme=https://acme.example/mcp"],
    ["--skills-dir", "mine=/nowhere", "cache", "list", "--config", "/nowhere.json", "--json"],
]


def environment(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "PYTHONPATH": str(REPO),
    }


def modules_after(home: Path, *argv: str) -> tuple[object, list[str]]:
    out = home / "modules.json"
    subprocess.run(
        [sys.executable, "-m", "tests.support.imports_after", str(out), *argv],
        env=environment(home),
        cwd=REPO,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    data = json.loads(out.read_text())
    return data["code"], data["modules"]


def stack_in(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == s or m.startswith(s + ".") for s in SERVER_STACK)]


@pytest.mark.parametrize("argv", STATE_COMMANDS, ids=" ".join)
def test_a_command_that_connects_no_server_imports_no_server_stack(
    tmp_path: Path, argv: list[str]
) -> None:
    code, modules = modules_after(tmp_path, *argv)
    assert code in EXIT_CODES
    assert stack_in(modules) == []


def test_version_imports_neither_pydantic_nor_rich(tmp_path: Path) -> None:
    code, modules = modules_after(tmp_path, "--version")
    assert code == 0
    assert [m for m in modules if m.split(".")[0] in {"pydantic", "rich", "anyio"}] == []


def test_a_command_that_connects_a_server_imports_the_host_and_the_sdk(tmp_path: Path) -> None:
    # The check above would pass for a driver that imported nothing at all.
    server = "local=" + shlex.join([sys.executable, "-m", "skillward", "serve"])
    code, modules = modules_after(tmp_path, "list", "--no-local", "--json", "--server", server)
    assert code == 0
    assert {
        "mcp",
        "skillward.edge.client",
        "skillward.host.skillhost",
        "skillward.cli._host",
    } <= set(modules)


def test_the_host_imports_the_sdk_only_when_it_connects_a_server(tmp_path: Path) -> None:
    # So that a stdio server, started first, starts up while this process imports it.
    code, modules = modules_after(tmp_path, "list", "--no-local", "--json")
    assert code == 0
    assert "skillward.host.skillhost" in modules
    host = [m for m in modules if m == "skillward.host" or m.startswith("skillward.host.")]
    assert stack_in(modules) == ["skillward.cli._host", *host]


@pytest.mark.parametrize("module", ["skillward.host", "skillward.edge._process"])
def test_importing_the_host_or_the_process_module_imports_no_sdk(module: str) -> None:
    code = f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT, check=True
    )
    imported = json.loads(result.stdout)
    assert module in imported
    assert [m for m in imported if m.split(".")[0] in {"mcp", "mcp_types", "httpx2"}] == []


def test_importing_skillward_imports_none_of_its_modules_until_a_name_is_used() -> None:
    code = (
        "import json, sys, skillward; before = sorted(sys.modules); skillward.Limits; "
        "print(json.dumps([before, sorted(sys.modules)]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT, check=True
    )
    before, after = json.loads(result.stdout)
    assert [m for m in before if m.startswith("skillward.")] == []
    assert [m for m in before if m.split(".")[0] in {"pydantic", "mcp", "rich", "yaml"}] == []
    assert "skillward.core.config" in after
    assert stack_in(after) == []


#: Run in a fresh process: in this one, other tests have used the models already.
BUILT_AT_IMPORT = """
import importlib, json, pkgutil
from pydantic import BaseModel
import skillward

for module in pkgutil.walk_packages(skillward.__path__, "skillward."):
    if module.name != "skillward.__main__":
        importlib.import_module(module.name)

def subclasses(cls):
    return [c for sub in cls.__subclasses__() for c in (sub, *subclasses(sub))]

print(json.dumps(sorted(
    f"{model.__module__}.{model.__qualname__}"
    for model in subclasses(BaseModel)
    if model.__module__.startswith("skillward.")
    # The SDK's generic request types are built when parametrized, as mcp's own are.
    and model.__module__ != "skillward.edge._methods"
    and model.__pydantic_complete__
)))
"""


def test_no_model_of_skillward_is_built_at_import() -> None:
    result = subprocess.run(
        [sys.executable, "-c", BUILT_AT_IMPORT],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
    )
    assert json.loads(result.stdout) == []
