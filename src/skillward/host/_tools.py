"""The model's tools for one session, as :class:`~skillward.core.tools.ToolSet` defines
them: ``list_skills``, ``read_skill``, ``read_skill_file`` and, where the host lets the
model name URIs, ``read_resource`` (as blocks that never raise: an error becomes a block
tagged with the origin whose text it may quote); the code-execution tools a host names
(gated); one call for a host's tool loop; the catalog; and the tools' definitions in
each API's shape.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from skillward.core.context import (
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
from skillward.core.tools import (
    LIST_SKILLS,
    READ_RESOURCE,
    READ_SKILL,
    ToolStyle,
    call_arguments,
)
from skillward.host._activation import Activator
from skillward.host._gates import Gates
from skillward.host._reads import Reads
from skillward.host._shared import Shared
from skillward.host._window import ActingWindow
from skillward.host.types import Activation

__all__ = ["Tools"]

logger = logging.getLogger("skillward")


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
        self._names = window.tools

    def _origin(self, label: str) -> Origin | None:
        return self._shared.registry.find_origin(label)

    def catalog(self, *, for_model: bool = True) -> list[CatalogItem]:
        """The skills the model may load; for the model, their origins are in context from
        now on (:meth:`SkillHost.catalog`)."""
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
        if for_model:
            self._window.seen(item.origin.label for item in items if item.origin.is_mcp)
        return items

    def catalog_block(self) -> ContextBlock:
        """The catalog for the model's context (omit it when ``catalog()`` is empty)."""
        return self._window.emit(catalog_block(self.catalog(), tools=self._names))

    async def activate(self, record: SkillRecord, *, reuse: bool = False) -> Activation:
        """Activate ``record`` (hold :meth:`Activator.lock`), as :meth:`held`."""
        return self.held(await self._activator.activate(record, reuse=reuse))

    def held(self, activation: Activation) -> Activation:
        """``activation`` as the window holds it: its block naming the tools in force."""
        return self._window.get(activation.record.key) or activation

    async def read_skill_block(self, ref: str) -> ContextBlock:
        """``read_skill`` as a block (:meth:`SkillHost.read_skill_block`). Never raises."""
        try:
            record = self._tool_record(ref)
        except SkillwardError as error:
            return self.tool_error(error, None, host_words=True)
        except Exception:
            logger.exception("read_skill failed")
            failure = UsageError("skillward failed to load the skill")
            return self.tool_error(failure, None, host_words=True)
        try:
            if record is None:  # an opted-in LABEL:URI lookup
                record = await self._shared.lookup(ref)
            async with self._activator.lock(record):
                # A skill this context already acts on, unchanged, asks nobody again.
                return (await self.activate(record, reuse=True)).block
        except SkillwardError as error:
            return self.tool_error(error, record.origin if record else None)
        except Exception:
            logger.exception("read_skill failed")
            failure = UsageError("skillward failed to load the skill")
            return self.tool_error(failure, record.origin if record else None)

    async def read_skill_file_block(self, ref: str, path: str) -> ContextBlock:
        """``read_skill_file`` as a block (:meth:`SkillHost.read_skill_file_block`). Never
        raises."""
        try:
            record = self._tool_record(ref)
        except SkillwardError as error:
            return self.tool_error(error, None, host_words=True)
        except Exception:
            logger.exception("read_skill_file failed")
            failure = UsageError("skillward failed to read the file")
            return self.tool_error(failure, None, host_words=True)
        if record is None:  # a LABEL:URI no listing mentions: no skill loaded here
            missing = SkillNotFound(
                "no skill loaded in this session has that ref; call "
                f"{self._names.read_skill} with its ref first"
            )
            return self.tool_error(missing, None, host_words=True)
        try:
            return await self._reads.read_listed_file(record, path)
        except SkillwardError as error:
            return self.tool_error(error, record.origin)
        except Exception:
            logger.exception("read_skill_file failed")
            return self.tool_error(UsageError("skillward failed to read the file"), record.origin)

    def _tool_record(self, ref: object) -> SkillRecord | None:
        """The catalog skill ``ref`` names; None for an allowed ``LABEL:URI`` lookup."""
        if not isinstance(ref, str):
            raise self._refuse()
        try:
            reference = parse_reference(ref)
        except UsageError:
            raise self._refuse() from None
        try:
            record = self._shared.registry.resolve(reference)
        except AmbiguousName:
            shown = f"pass a ref exactly as {self._names.list_skills} shows it"
            raise UsageError(f"that ref matches several skills; {shown}") from None
        except (SkillNotFound, UnknownServer):
            if (
                self._shared.config.allow_uri_lookups
                and reference.kind == "uri"
                and reference.label is not None
            ):
                return None
            raise self._refuse() from None
        if not record.listed and not self._shared.config.allow_uri_lookups:
            raise self._refuse()
        return record

    def _refuse(self) -> SkillNotFound:
        # Made only when raised: a call that resolves (every read) builds no error.
        shown = f"pass a ref exactly as {self._names.list_skills} shows it"
        return SkillNotFound(f"no skill in the catalog has that ref; {shown}")

    def tool_error(
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
            return self.tool_error(error, None, host_words=True)
        try:
            return await self._reads.read_resource(server, uri)
        except SkillwardError as error:
            return self.tool_error(error, origin)
        except Exception:
            logger.exception("read_resource failed")
            return self.tool_error(UsageError("skillward failed to read the resource"), origin)

    async def handle_tool_call(
        self, name: str, arguments: Mapping[str, Any] | str | None = None
    ) -> ContextBlock | None:
        """One call for a host's tool loop (:meth:`SkillHost.handle_tool_call`). Never raises."""
        if not isinstance(name, str):
            return self.tool_error(
                UsageError("a tool call needs a tool name"), None, host_words=True
            )
        gated = name in self._shared.config.execution_tools
        try:
            call = self._names.read_call(name, arguments, limits=self._shared.limits)
            args = call_arguments(arguments) if gated else {}
        except UsageError as error:
            return self.tool_error(error, None, host_words=True)
        if call is not None:
            tool, taken = call
            if tool == LIST_SKILLS:
                return self.catalog_block()
            if tool == READ_SKILL:
                return await self.read_skill_block(taken["ref"])
            if tool == READ_RESOURCE:
                return await self.read_resource_block(taken["server"], taken["uri"])
            return await self.read_skill_file_block(taken["ref"], taken["path"])
        if not gated:
            return None  # not skillward's, and not gated: nothing to add
        try:
            await self._gates.authorize_execution(name, detail=_command(args), arguments=args)
        except SkillwardError as error:
            return self.tool_error(error, None)
        except Exception:
            logger.exception("authorizing %s failed", name)
            failure = ExecutionDenied("skillward could not decide on running the tool")
            return self.tool_error(failure, None, host_words=True)
        return None

    def tool_definitions(self, style: ToolStyle = "mcp") -> list[dict[str, Any]]:
        """The tools offered, in ``style``'s shape (:meth:`SkillHost.tool_definitions`)."""
        refs = [item.ref for item in self.catalog()]
        return self._names.definitions(refs, style, limits=self._shared.limits)
