"""Layering rules from docs/architecture.md, checked on the source."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import skillward

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "skillward"

# Third-party libraries each confined to the modules named here (paths under
# src/skillward).
CONFINED = {
    # The client edge (never _process.py, which starts stdio servers before it is imported).
    "mcp": {
        "edge/client.py",
        "edge/_transport.py",
        # Serving stdio from the event loop, its lines held to the same caps.
        "edge/_stdioserver.py",
        "serve/server.py",
        "gateway/server.py",
        "gateway/_asking.py",
        "gateway/_http.py",
    },
    "mcp_types": {
        "edge/client.py",
        "edge/_transport.py",
        "serve/server.py",
        "edge/_methods.py",
        "edge/_contents.py",
        "gateway/server.py",
        "gateway/_asking.py",
        "gateway/_tools.py",
        "gateway/_http.py",
    },
    # The SDK's HTTP client, held to the message caps at the client edge's transport.
    "httpx2": {"edge/_transport.py"},
    "keyring": {"trust/_keys.py"},
    "filelock": {"trust/_store.py"},
    "platformdirs": {"edge/_dirs.py"},
    # Server host names in the IDNA form the HTTP client gives them.
    "idna": {"core/urls.py"},
    "rich": {"terminal/prompts.py", "terminal/_describe.py", "terminal/_render.py"},
    "yaml": {"core/frontmatter.py"},
    "uvicorn": {"edge/_listen.py"},
    # The disk cache's, the audit file's and the servers file's locks; the standard
    # library, but POSIX-only and easy to misuse.
    "fcntl": {"cache/_files.py", "trust/audit.py", "edge/_serversfile.py"},
    # Policy files and the user's config are read once, at the boundary.
    "tomllib": {"trust/_policyfile.py", "trust/_userconfig.py"},
    # skillward[otel]: audit events as log records over OTLP/HTTP, imported only by the
    # export thread of a trail that exports.
    "opentelemetry": {"trust/_otlp.py"},
    # skillward[pydantic-ai] and skillward[openai-agents]: one module each, which nothing
    # in skillward imports (FRAMEWORKS below).
    "pydantic_ai": {"integrations/pydantic_ai.py"},
    "agents": {"integrations/openai_agents.py"},
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


def where(path: Path) -> str:
    """``path`` as the tables name it: relative to src/skillward, with forward slashes."""
    return path.relative_to(PACKAGE).as_posix()


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "examples" not in p.relative_to(PACKAGE).parts)
# The verifier core takes bytes and returns verified objects: no I/O of any kind.
# trust/_policyfile.py, trust/_userconfig.py and trust/approvals.py are not the verifier, but
# held to the same rule: policy or config text in, a document out; an entry and a record
# in, a verdict out.
PURE = sorted(
    [p for p in MODULES if where(p).startswith("core/")]
    + [
        PACKAGE / "trust" / "_policyfile.py",
        PACKAGE / "trust" / "_policylines.py",
        PACKAGE / "trust" / "_patterns.py",
        PACKAGE / "trust" / "_userconfig.py",
        PACKAGE / "trust" / "approvals.py",
        PACKAGE / "trust" / "pending.py",
        PACKAGE / "trust" / "_socketwire.py",
        PACKAGE / "trust" / "_chain.py",
    ]
)


@pytest.mark.parametrize("path", MODULES, ids=where)
def test_third_party_libraries_stay_in_their_one_module(path: Path) -> None:
    used = imports_of(path)
    for library, allowed in CONFINED.items():
        if library in used:
            assert where(path) in allowed, (
                f"{where(path)} imports {library}; only {sorted(allowed)} may"
            )


def test_every_confined_library_names_modules_that_exist() -> None:
    for library, allowed in CONFINED.items():
        for name in allowed:
            assert (PACKAGE / name).is_file(), f"{library}: {name} does not exist"


@pytest.mark.parametrize("path", PURE, ids=where)
def test_verifier_core_does_no_io(path: Path) -> None:
    assert path.is_file()
    assert not imports_of(path) & IO_MODULES


def test_public_api_has_an_explicit_all() -> None:
    assert skillward.__all__
    for name in skillward.__all__:
        assert hasattr(skillward, name), name


def test_the_host_package_exports_the_facades_host_names() -> None:
    import skillward.host  # noqa: PLC0415

    assert skillward.host.__all__
    for name in skillward.host.__all__:
        assert getattr(skillward.host, name) is getattr(skillward, name), name


def is_module(name: str) -> bool:
    """Whether dotted ``name`` (``skillward.edge.client``) is a module of the package."""
    parts = name.split(".")[1:]
    return (PACKAGE.joinpath(*parts).with_suffix(".py")).is_file() or (
        PACKAGE.joinpath(*parts, "__init__.py").is_file()
    )


def path_of(name: str) -> Path:
    parts = name.split(".")[1:]
    module = PACKAGE.joinpath(*parts).with_suffix(".py")
    return module if module.is_file() else PACKAGE.joinpath(*parts, "__init__.py")


def modules_imported(path: Path) -> set[str]:
    """The ``skillward`` modules ``path`` imports, dotted (``from skillward.edge import
    _process`` gives ``skillward.edge`` and ``skillward.edge._process``), at any level of
    the module: a function's own imports and those for type checkers too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "skillward"}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{where(path)}: a relative import; name the module"
            module = node.module or ""
            if module.split(".")[0] != "skillward":
                continue
            found.add(module)
            found |= {f"{module}.{a.name}" for a in node.names if is_module(f"{module}.{a.name}")}
    return found


FOLDERS = (
    "core",
    "edge",
    "trust",
    "cache",
    "host",
    "terminal",
    "cli",
    "serve",
    "gateway",
    "check",
    "integrations",
)
#: Which folders each folder's modules may import: the folder table of
#: docs/architecture.md.
MAY_IMPORT: dict[str, set[str]] = {
    "core": {"core"},
    "edge": {"core", "edge"},
    "trust": {"core", "edge", "trust"},
    "cache": {"core", "edge", "cache"},
    "host": {"core", "edge", "trust", "cache", "host"},
    # The host's public names only, from skillward.host itself (PUBLIC_ONLY).
    "terminal": {"core", "trust", "host", "terminal"},
    "cli": {*FOLDERS},
    "serve": {"core", "edge", "serve"},
    "gateway": {"core", "edge", "trust", "cache", "host", "gateway"},
    "check": {"core", "edge", "check"},
    # The host's public names only (PUBLIC_ONLY), and core's and trust's public modules.
    "integrations": {"core", "trust", "host", "integrations"},
}
#: (importer, imported): only the imported folder's package, not its modules.
PUBLIC_ONLY = {("terminal", "host"), ("integrations", "host")}
#: Top-level modules any folder may import: the installed version, a leaf.
SHARED = {"skillward._version"}


def folder_of(name: str) -> str | None:
    """The folder of dotted module ``name``; None for a top-level module."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else None


def test_every_folder_is_a_layer_with_a_row_in_the_table() -> None:
    folders = {
        path.parent.name for path in PACKAGE.glob("*/__init__.py") if path.parent.name != "examples"
    }
    assert folders == set(FOLDERS)
    assert set(FOLDERS) <= set(MAY_IMPORT)
    for folder in FOLDERS:
        doc = ast.get_docstring(ast.parse((PACKAGE / folder / "__init__.py").read_text("utf-8")))
        assert "May import:" in (doc or ""), f"{folder}/__init__.py says what it may import"


def test_every_module_lives_in_a_folder_or_is_the_facade() -> None:
    top = {where(path) for path in MODULES if path.parent == PACKAGE}
    assert top == {"__init__.py", "__main__.py", "_version.py", "_apidoc.py"}


@pytest.mark.parametrize("path", MODULES, ids=where)
def test_each_folder_imports_only_the_folders_its_layer_may(path: Path) -> None:
    folder = where(path).split("/")[0] if path.parent != PACKAGE else None
    if folder is None:
        return  # the facade, python -m skillward and the API reference see everything
    for name in sorted(modules_imported(path)):
        if name in SHARED:
            continue
        imported = folder_of(name)
        assert imported is not None, f"{where(path)} imports the top-level {name}"
        assert imported in MAY_IMPORT[folder], (
            f"{where(path)} imports {name}: {folder}/ may import only {sorted(MAY_IMPORT[folder])}"
        )
        if (folder, imported) in PUBLIC_ONLY:
            assert name == f"skillward.{imported}", (
                f"{where(path)} imports {name}: only skillward.{imported}'s public names"
            )


def test_the_architecture_document_states_the_folder_table() -> None:
    text = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text("utf-8")
    rows = re.findall(r"^\| `(\w+)/`[^|]*\|[^|]*\| ([^|]+) \|$", text, flags=re.MULTILINE)
    stated = {
        folder: {*FOLDERS} if cell.strip() == "anything" else set(re.findall(r"`(\w+)`", cell))
        for folder, cell in rows
    }
    assert stated == MAY_IMPORT


def test_only_the_command_line_imports_the_reference_server() -> None:
    for path in MODULES:
        if where(path).startswith(("cli/", "serve/")):
            continue
        served = {m for m in modules_imported(path) if m.startswith("skillward.serve")}
        assert not served, f"{where(path)} imports {sorted(served)}"


def reached_from(name: str) -> set[str]:
    """The ``skillward`` modules importing ``name`` runs, directly or through each other,
    at any level of the module (a function's own imports too), and the folders' own
    ``__init__`` on the way. The facade (``skillward/__init__.py``) imports its names
    lazily and is left out: ``test_cli_startup`` keeps it so."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current in seen or current == "skillward" or not is_module(current):
            continue
        seen.add(current)
        todo += [current.rsplit(".", 1)[0], *modules_imported(path_of(current))]
    return seen


#: The SDK, its types, and its HTTP client.
SDK = {"mcp", "mcp_types", "httpx2"}


def test_the_process_module_imports_no_sdk_not_even_through_another_module() -> None:
    # The host starts a stdio server with it before importing the SDK, so that the two
    # start up at the same time.
    reached = reached_from("skillward.edge._process")
    assert "skillward.edge.servers" in reached  # the walk does follow imports
    assert "skillward.edge._transport" not in reached
    assert "skillward.edge.client" not in reached
    for name in sorted(reached):
        assert not imports_of(path_of(name)) & SDK, f"_process reaches {name}"


def test_the_host_depends_on_the_cache_seam_never_on_the_disk_cache() -> None:
    users = {where(path) for path in MODULES if "skillward.cache._disk" in modules_imported(path)}
    assert users <= {"__init__.py", "cli/administering.py", "cli/_host.py"}, users
    # The disk cache's parts (its blobs, index and files) are its own.
    for path in MODULES:
        if where(path).startswith("cache/"):
            continue
        parts = {
            m
            for m in modules_imported(path)
            if m.startswith("skillward.cache._") and m != "skillward.cache._disk"
        }
        assert not parts, f"{where(path)} imports {sorted(parts)}"


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


@pytest.mark.parametrize("path", MODULES, ids=where)
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
    assert not direct, f"{where(path)} reads os.{direct[0]}: use getattr(os, ..., 0)"


def test_the_integrations_use_only_the_public_modules_of_other_folders() -> None:
    for path in MODULES:
        if not where(path).startswith("integrations/"):
            continue
        for name in modules_imported(path):
            if folder_of(name) == "integrations":
                continue
            private = [part for part in name.split(".") if part.startswith("_")]
            assert not private, f"{where(path)} imports the internal {name}"


#: The agent frameworks, each imported by its integration module only.
FRAMEWORKS = ("pydantic_ai", "agents", "openai")


def test_importing_skillward_and_every_public_name_imports_no_agent_framework() -> None:
    probe = (
        "import sys, skillward, skillward.host, skillward.integrations\n"
        "for name in skillward.__all__: getattr(skillward, name)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"
