"""Reading the model tools' definitions in each API's shape (``ToolSet.definitions``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from skillward.core.tools import ToolStyle


def schema_of(tool: dict[str, Any], style: ToolStyle) -> dict[str, Any]:
    """The JSON schema of a tool's arguments, wherever ``style`` puts it."""
    if style == "mcp":
        schema: dict[str, Any] = tool["inputSchema"]
    elif style == "anthropic":
        schema = tool["input_schema"]
    elif style == "openai":
        schema = tool["function"]["parameters"]
    else:
        schema = tool["parameters"]
    return schema


def subschemas(schema: Any) -> Iterator[dict[str, Any]]:
    """Every object in ``schema``, nested ones included."""
    if isinstance(schema, dict):
        yield schema
        for value in schema.values():
            yield from subschemas(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from subschemas(value)
