"""Render ``docs/api.md`` from the public API, so the reference cannot drift from the code.

Run ``python -m skillward._apidoc > docs/api.md`` after changing a public name;
``tests/meta/test_api_reference.py`` fails while the file and the code disagree.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import inspect
import sys
import typing
from typing import Any

from pydantic import BaseModel

__all__ = ["INTEGRATIONS", "render"]

_INTRO = """\
# API reference

Every name `skillward` exports (`skillward.__all__`), grouped by the module that defines
it: signatures, fields and what they mean; then the agent framework integrations, each
module's names (its `__all__`), which need that framework's extra and which `skillward`
does not export. Generated from the code with `python -m skillward._apidoc > docs/api.md`;
a test fails when the two disagree. Modules whose names start with an underscore are
internal; `host.md` shows how the pieces fit.
"""

#: The integrations, each with the extra that installs its framework.
INTEGRATIONS = {
    "skillward.integrations.pydantic_ai": "pydantic-ai",
    "skillward.integrations.openai_agents": "openai-agents",
}


def _summary(obj: object) -> str:
    """The first paragraph of ``obj``'s own docstring, on one line."""
    doc = obj.__doc__ if isinstance(obj.__doc__, str) else None
    if not doc:
        return ""
    first = inspect.cleandoc(doc).split("\n\n", 1)[0]
    return " ".join(first.split())


def _signature(obj: Any) -> str:
    if isinstance(obj, type) and issubclass(obj, BaseModel):
        # Models are built on first use (defer_build); the signature comes with the build.
        obj.model_rebuild()
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def _fields(cls: type) -> list[tuple[str, str]]:
    if issubclass(cls, BaseModel):
        return [
            (name, str(info.annotation).replace("typing.", ""))
            for name, info in cls.model_fields.items()
        ]
    if dataclasses.is_dataclass(cls):
        fields = dataclasses.fields(cls)
        return [(f.name, str(f.type)) for f in fields if not f.name.startswith("_")]
    return []


def _members(cls: type) -> list[str]:
    lines: list[str] = []
    for name, member in sorted(vars(cls).items()):
        if name.startswith("_") and name not in {
            "__aenter__",
            "__aexit__",
            "__enter__",
            "__exit__",
        }:
            continue
        if isinstance(member, property | functools.cached_property):
            lines.append(f"- `{name}` (property): {_summary(member)}".rstrip(": "))
        elif isinstance(member, classmethod | staticmethod):
            func = member.__func__
            lines.append(f"- `{name}{_signature(func)}`: {_summary(func)}".rstrip(": "))
        elif inspect.isfunction(member):
            prefix = "async " if inspect.iscoroutinefunction(member) else ""
            text = f"- `{prefix}{name}{_signature(member)}`: {_summary(member)}"
            lines.append(text.rstrip(": "))
    return lines


def _entry(name: str, obj: Any) -> list[str]:
    if typing.get_origin(obj) is not None:
        return [f"### `{name}`", "", f"`{obj}`".replace("typing.", ""), ""]
    if isinstance(obj, type) and issubclass(obj, enum.Enum):
        out = [f"### `{name}` (enum)", "", _summary(obj), ""]
        out += [f"- `{member.name}` = `{member.value!r}`" for member in obj]
        return [*out, ""]
    if isinstance(obj, type):
        bases = [b.__name__ for b in obj.__bases__ if b is not object]
        kind = "protocol" if getattr(obj, "_is_protocol", False) else "class"
        heading = f"### `{name}`" + (f"({', '.join(bases)})" if bases else "")
        out = [f"{heading} ({kind})", "", _summary(obj), ""]
        if kind == "class" and not issubclass(obj, BaseException):
            out += [f"`{name}{_signature(obj)}`", ""]
        fields = _fields(obj)
        if fields:
            out += ["Fields:", ""]
            out += [f"- `{field}: {annotation}`" for field, annotation in fields]
            out.append("")
        members = _members(obj)
        if members:
            out += ["Members:", "", *members, ""]
        return out
    if callable(obj):
        prefix = "async " if inspect.iscoroutinefunction(obj) else ""
        return [f"### `{prefix}{name}{_signature(obj)}`", "", _summary(obj), ""]
    return [f"### `{name}`", "", f"A `{type(obj).__name__}` constant.", ""]


def render() -> str:
    import skillward  # noqa: PLC0415 (the facade imports this module's neighbours)

    by_module: dict[str, list[str]] = {}
    for name in skillward.__all__:
        obj = getattr(skillward, name)
        module = getattr(obj, "__module__", None) or "skillward"
        if typing.get_origin(obj) is not None:
            module = "skillward (type aliases)"
        elif not isinstance(obj, type) and not callable(obj):
            module = "skillward (constants)"
        by_module.setdefault(module, []).append(name)
    lines = [_INTRO]
    for module in sorted(by_module):
        lines += [f"## `{module}`", ""]
        for name in sorted(by_module[module]):
            lines += _entry(name, getattr(skillward, name))
    for module, extra in INTEGRATIONS.items():
        integration = importlib.import_module(module)
        lines += [f"## `{module}` (`skillward[{extra}]`)", "", _summary(integration), ""]
        for name in sorted(integration.__all__):
            lines += _entry(name, getattr(integration, name))
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
