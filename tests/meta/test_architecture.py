"""Layering rules from docs/architecture.md, checked on the source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import skillward

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "skillward"

# Third-party libraries each confined to the modules named here.
CONFINED = {
    # The client edge (never _process.py, which starts stdio servers before it is imported).
    "mcp": {"client.py", "_transport.py", "server.py"},
    "mcp_types": {"client.py", "_transport.py", "server.py", "_methods.py"},
    # The SDK's HTTP client, held to the message caps at the client edge's transport.
    "httpx2": {"_transport.py"},
    "keyring": {"_keys.py"},
    "filelock": {"_store.py"},
    "platformdirs": {"_dirs.py"},
    "rich": {"prompts.py"},
    "yaml": {"frontmatter.py"},
    "uvicorn": {"server.py"},
    # The disk cache's and the audit file's locks; the standard library, but POSIX-only
    # and easy to misuse.
    "fcntl": {"_diskcache.py", "audit.py"},
    # Policy files are read once, at the boundary.
    "tomllib": {"_policyfile.py"},
}
# The verifier core takes bytes and returns verified objects: no I/O of any kind.
PURE = {
    "errors.py",
    "config.py",
    "uris.py",
    "wire.py",
    "frontmatter.py",
    "verify.py",
    "context.py",
    "origins.py",
    # Not the verifier, but held to the same rule: policy text in, a document out.
    "_policyfile.py",
}
IO_MODULES = {
    "os",
    "io",
    "pathlib",
    "socket",
    "subprocess",
    "shutil",
    "tempfile",
    "asyncio",
    "anyio",
    "httpx",
    "mcp",
    "keyring",
    "platformdirs",
    "rich",
    "urllib",
    "http",
    "sys",
}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "examples" not in p.relative_to(PACKAGE).parts)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_third_party_libraries_stay_in_their_one_module(path: Path) -> None:
    used = imports_of(path)
    for library, allowed in CONFINED.items():
        if library in used:
            assert path.name in allowed, (
                f"{path.name} imports {library}; only {sorted(allowed)} may"
            )
            assert path.parent == PACKAGE


@pytest.mark.parametrize("name", sorted(n for n in PURE if (PACKAGE / n).exists()))
def test_verifier_core_does_no_io(name: str) -> None:
    assert not imports_of(PACKAGE / name) & IO_MODULES


def test_public_api_has_an_explicit_all() -> None:
    assert skillward.__all__
    for name in skillward.__all__:
        assert hasattr(skillward, name), name


def test_only_the_command_line_imports_the_reference_server() -> None:
    for path in MODULES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            imported = any(n == "skillward.server" for n in names) or (
                isinstance(node, ast.ImportFrom)
                and node.module == "skillward"
                and any(a.name == "server" for a in node.names)
            )
            if imported:
                assert path.name in {"cli.py", "server.py"}, f"{path.name} imports the server"


def submodules_imported(path: Path) -> set[str]:
    """The ``skillward`` submodules ``path`` imports (``skillward.x`` gives ``x``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.module.removeprefix("skillward.")
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("skillward.")
    }


def reached_from(name: str) -> set[str]:
    """The ``skillward`` modules ``name`` imports, directly or through each other, at any
    level of the module (a function's own imports too)."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        path = PACKAGE / f"{current}.py"
        if current in seen or not path.exists():
            continue
        seen.add(current)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "skillward":
                todo += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("skillward."):
                todo.append((node.module or "").removeprefix("skillward.").split(".")[0])
            elif isinstance(node, ast.Import):
                todo += [
                    alias.name.removeprefix("skillward.").split(".")[0]
                    for alias in node.names
                    if alias.name.startswith("skillward.")
                ]
    return seen


#: The SDK, its types, and its HTTP client.
SDK = {"mcp", "mcp_types", "httpx2"}


def test_the_process_module_imports_no_sdk_not_even_through_another_module() -> None:
    # The host starts a stdio server with it before importing the SDK, so that the two
    # start up at the same time.
    reached = reached_from("_process")
    assert "_transport" not in reached
    assert "client" not in reached
    for name in sorted(reached):
        assert not imports_of(PACKAGE / f"{name}.py") & SDK, f"_process reaches {name}.py"


def test_the_host_depends_on_the_cache_seam_never_on_the_disk_cache() -> None:
    users = {path.name for path in MODULES if "_diskcache" in submodules_imported(path)}
    assert users <= {"__init__.py", "_clistate.py", "_clihost.py"}, users


def test_the_lazy_facade_imports_for_type_checkers_exactly_what_it_exports() -> None:
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    (checked,) = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    ]
    imported = {
        node.module: tuple(alias.name for alias in node.names)
        for node in checked.body
        if isinstance(node, ast.ImportFrom)
    }
    assert imported == skillward._MODULES
    assert sorted(name for names in imported.values() for name in names) == sorted(
        skillward.__all__
    )


# Open flags some platforms lack (Windows): read as getattr(os, NAME, 0), or `_tree`'s
# shared constants, so that importing skillward works there.
POSIX_FLAGS = {"O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC", "O_DIRECTORY"}


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_open_flags_some_platforms_lack_are_never_read_directly(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    direct = sorted(
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
        and node.attr in POSIX_FLAGS
    )
    assert not direct, f"{path.name} reads os.{direct[0]}: use getattr(os, ..., 0)"
