"""The model's tools for one session: ``read_skill`` and ``read_resource`` (as blocks
that never raise: an error becomes a block tagged with the origin whose text it may
quote), the code-execution tools a host names (gated), one call for a host's tool
loop, the catalog, and the tools' definitions in each API's shape.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Mapping
from typing import Any

from skillward.core.context import (
    READ_RESOURCE_TOOL,
    READ_SKILL_TOOL,
    CatalogItem,
    ContextBlock,
    catalog_block,
    error_block,
)
from skillward.core.errors import (
    AmbiguousName,
    ExecutionDenied,
    SkillNotFound,
    SkillwardError,
    UnknownServer,
    UsageError,
)
from skillward.core.origins import Origin
from skillward.core.registry import SkillRecord, parse_reference
from skillward.host._activation import Activator
from skillward.host._gates import Gates
from skillward.host._reads import Reads
from skillward.host._shared import Shared
from skillward.host._window import ActingWindow
from skillward.host.types import TOOL_SCHEMAS, ToolStyle

__all__ = ["Tools"]

logger = logging.getLogger("skillward")


def _tool_arguments(arguments: object) -> Mapping[str, Any]:
    """A tool call's arguments: a mapping, a JSON object string, or nothing."""
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):  # the model may nest its arguments without end
            raise UsageError("the tool arguments are not a JSON object") from None
    if not isinstance(arguments, Mapping):
        raise UsageError("the tool arguments are not a JSON object")
    return arguments


def _command(arguments: Mapping[str, Any]) -> str:
    """A code-execution call's arguments as one line of JSON, whole (untrusted); the
    person is shown them apart (``ExecutionRequest.shown``)."""
    try:
        return json.dumps(dict(arguments), ensure_ascii=False, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        return repr(dict(arguments))


class Tools:
    """What one session's model is shown and may call."""

    def __init__(
        self,
        shared: Shared,
        window: ActingWindow,
        activator: Activator,
        reads: Reads,
        gates: Gates,
    ) -> None:
        self._shared = shared
        self._window = window
        self._activator = activator
        self._reads = reads
        self._gates = gates

    def _origin(self, label: str) -> Origin | None:
        return self._shared.registry.find_origin(label)

    def catalog(self) -> list[CatalogItem]:
        """The skills the model may load; their origins are in context from now on."""
        items = [
            CatalogItem(
                ref=self._shared.registry.display_ref(record),
                name=record.name,
                description=record.description,
                origin=record.origin,
            )
            for record in self._shared.registry.records()
            if record.listed
        ]
        self._window.seen(item.origin.label for item in items if item.origin.is_mcp)
        return items

    def catalog_block(self) -> ContextBlock:
        """The catalog for the model's context (omit it when ``catalog()`` is empty)."""
        return self._window.emit(catalog_block(self.catalog()))

    async def read_skill_block(self, name: str) -> ContextBlock:
        """``read_skill`` as a block (:meth:`SkillHost.read_skill_block`). Never raises."""
        try:
            record = self._tool_record(name)
        except SkillwardError as error:
            return self._tool_error(error, None, host_words=True)
        except Exception:
            logger.exception("read_skill failed")
            failure = UsageError("skillward failed to load the skill")
            return self._tool_error(failure, None, host_words=True)
        try:
            if record is None:  # an opted-in LABEL:URI lookup
                record = await self._shared.lookup(name)
            async with self._activator.lock(record):
                # A skill this context already acts on, unchanged, asks nobody again.
                return (await self._activator.activate(record, reuse=True)).block
        except SkillwardError as error:
            return self._tool_error(error, record.origin if record else None)
        except Exception:
            logger.exception("read_skill failed")
            failure = UsageError("skillward failed to load the skill")
            return self._tool_error(failure, record.origin if record else None)

    def _tool_record(self, name: object) -> SkillRecord | None:
        """The catalog skill ``name`` names; None for an allowed ``LABEL:URI`` lookup."""
        refuse = SkillNotFound(
            "no skill in the catalog has that reference; pass a ref exactly as the catalog shows it"
        )
        if not isinstance(name, str):
            raise refuse
        try:
            ref = parse_reference(name)
        except UsageError:
            raise refuse from None
        try:
            record = self._shared.registry.resolve(ref)
        except AmbiguousName:
            raise UsageError(
                "that reference matches several skills; pass a ref exactly as the catalog shows it"
            ) from None
        except (SkillNotFound, UnknownServer):
            if (
                self._shared.config.allow_uri_lookups
                and ref.kind == "uri"
                and ref.label is not None
            ):
                return None
            raise refuse from None
        if not record.listed and not self._shared.config.allow_uri_lookups:
            raise refuse
        return record

    def _tool_error(
        self, error: SkillwardError, origin: Origin | None, *, host_words: bool = False
    ) -> ContextBlock:
        """An error block for the model. Tagged with the origin whose text it may quote;
        a host block (no origin) carries only skillward's own words."""
        if origin is None and error.server is not None:
            origin = self._origin(error.server)
        if origin is None and not host_words:
            # It may quote the model's arguments, or an origin this host does not know.
            error = UsageError(f"the request failed ({type(error).__name__})")
        return self._window.emit(error_block(error, origin=origin))

    async def read_resource_block(self, server: str, uri: str) -> ContextBlock:
        """``read_resource`` as a block: a verified, origin-tagged read, or an error block.
        Never raises."""
        origin = None
        if isinstance(server, str):
            origin = self._origin(server)
        if origin is None or not origin.is_mcp or not isinstance(uri, str):
            error = UnknownServer(
                "no connected server has that label; use the server label a skill block names"
            )
            return self._tool_error(error, None, host_words=True)
        try:
            return await self._reads.read_resource(server, uri)
        except SkillwardError as error:
            return self._tool_error(error, origin)
        except Exception:
            logger.exception("read_resource failed")
            return self._tool_error(UsageError("skillward failed to read the resource"), origin)

    async def handle_tool_call(
        self, name: str, arguments: Mapping[str, Any] | str | None = None
    ) -> ContextBlock | None:
        """One call for a host's tool loop (:meth:`SkillHost.handle_tool_call`). Never raises."""
        try:
            args = _tool_arguments(arguments)
        except UsageError as error:
            return self._tool_error(error, None, host_words=True)
        if not isinstance(name, str):
            return self._tool_error(
                UsageError("a tool call needs a tool name"), None, host_words=True
            )
        if name == READ_SKILL_TOOL:
            ref = args.get("name")
            if not isinstance(ref, str):
                return self._tool_error(
                    UsageError("read_skill needs a string argument 'name'"), None, host_words=True
                )
            return await self.read_skill_block(ref)
        if name == READ_RESOURCE_TOOL:
            server, uri = args.get("server"), args.get("uri")
            if not isinstance(server, str) or not isinstance(uri, str):
                return self._tool_error(
                    UsageError("read_resource needs string arguments 'server' and 'uri'"),
                    None,
                    host_words=True,
                )
            return await self.read_resource_block(server, uri)
        if name not in self._shared.config.execution_tools:
            return None
        try:
            await self._gates.authorize_execution(name, detail=_command(args), arguments=args)
        except SkillwardError as error:
            return self._tool_error(error, None)
        except Exception:
            logger.exception("authorizing %s failed", name)
            failure = ExecutionDenied("skillward could not decide on running the tool")
            return self._tool_error(failure, None, host_words=True)
        return None

    def tool_definitions(self, style: ToolStyle = "mcp") -> list[dict[str, Any]]:
        """The two tools in ``style``'s shape (:meth:`SkillHost.tool_definitions`)."""
        refs = [item.ref for item in self.catalog()]
        name: dict[str, Any] = {"type": "string", "description": "The skill reference"}
        if refs:
            name["enum"] = refs  # an empty enum is no valid schema: left out instead
        read_skill = {
            **TOOL_SCHEMAS["read_skill"],
            "inputSchema": {"type": "object", "properties": {"name": name}, "required": ["name"]},
        }
        tools = [read_skill, TOOL_SCHEMAS["read_resource"]]
        if style == "mcp":
            return [copy.deepcopy(tool) for tool in tools]
        if style == "anthropic":
            return [
                {
                    "name": t["name"],
                    "description": t["description"],
                    "input_schema": copy.deepcopy(t["inputSchema"]),
                }
                for t in tools
            ]
        if style == "openai":
            return [
                {
                    "type": "function",
                    "function": {
                        "name": t["name"],
                        "description": t["description"],
                        "parameters": copy.deepcopy(t["inputSchema"]),
                    },
                }
                for t in tools
            ]
        if style == "openai-responses":
            return [
                {
                    "type": "function",
                    "name": t["name"],
                    "description": t["description"],
                    "parameters": {
                        **copy.deepcopy(t["inputSchema"]),
                        "additionalProperties": False,
                    },
                    "strict": True,
                }
                for t in tools
            ]
        raise UsageError(
            f"unknown tool style {style!r}; use 'mcp', 'anthropic', 'openai' or 'openai-responses'"
        )
