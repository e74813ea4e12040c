"""The acting window of one model context: the activations it acts on, which servers'
text it has seen, and what each dynamic skill has spent.

Its invariant: **it closes only when the host says so.** An activation leaves it only
through :meth:`ActingWindow.close`, :meth:`~ActingWindow.close_origin` (the host
disconnected that server) and :meth:`~ActingWindow.close_all` (the host reset the
context); a failed verification only *ends* an activation's content
(:meth:`~ActingWindow.end`), which keeps it here, so its gates still apply. Nothing a
server sends reaches a method that closes it.

Every block handed to the model leaves through :meth:`ActingWindow.emit`, so the
origins in context (for the cross-origin rule) are counted in one place, and every block
names the model tools in force. A window
that is :meth:`~ActingWindow.shut` (its session closed) takes no activation and hands
out nothing more.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable

import anyio

from skillward.core.context import ContextBlock
from skillward.core.errors import SkillwardError, UsageError
from skillward.core.origins import SkillKey
from skillward.core.tools import DEFAULT_TOOLS, ToolSet
from skillward.host.types import Activation, ContextSink

__all__ = ["ActingWindow"]

logger = logging.getLogger("skillward")


class ActingWindow:
    """The activations of one model context, and what has reached it."""

    def __init__(self, sink: ContextSink | None = None, tools: ToolSet = DEFAULT_TOOLS) -> None:
        self._sink = sink
        #: The model tools in force, which every block handed out names.
        self.tools = tools
        self._activations: dict[SkillKey, Activation] = {}
        # MCP origins whose text has reached the model since the context was last reset.
        self._in_context: set[str] = set()
        # Bytes retrieved so far per dynamic skill: nothing else bounds them.
        self._spent: dict[SkillKey, int] = {}
        # One origin's calls in this context run one at a time, in the order they came.
        self._locks: dict[str, anyio.Lock] = {}
        self._shut = False

    def shut(self) -> None:
        """Close every activation, and take none again: this context is over. Nothing
        more is handed to the model through it."""
        self.close_all()
        self._shut = True

    def check_open(self) -> None:
        if self._shut:
            raise UsageError("this session is closed", hint="Start another with host.session(...).")

    # --- activations ------------------------------------------------------------------

    def get(self, key: SkillKey) -> Activation | None:
        return self._activations.get(key)

    def active(self) -> list[Activation]:
        """Every activation, including those whose content ended."""
        return list(self._activations.values())

    def open(self, activation: Activation) -> None:
        """Act on ``activation`` (replacing an earlier one of the same skill); its block
        names the tools in force."""
        self.check_open()
        block = activation.block.naming(self.tools)
        if block is not activation.block:
            activation = dataclasses.replace(activation, block=block)
        self._activations[activation.record.key] = activation

    def end(self, key: SkillKey, error: SkillwardError, *, replace: bool = False) -> None:
        """Serve nothing more under ``key``'s activation, which stays in the window.
        The first reason is kept unless ``replace`` (a changed skill says so instead)."""
        activation = self._activations.get(key)
        if activation is not None and (replace or activation.ended is None):
            self._activations[key] = dataclasses.replace(activation, ended=error)

    def close(self, key: SkillKey) -> None:
        """End ``key``'s acting window, and with it a dynamic skill's byte budget."""
        if self._activations.pop(key, None) is not None:
            logger.info("deactivated %s:%s", key.origin, key.locator)
        self._spent.pop(key, None)

    def close_origin(self, label: str) -> None:
        """Close every activation of ``label``'s skills (the host let the origin go)."""
        for key in [k for k in self._activations if k.origin == label]:
            self.close(key)

    def close_all(self) -> None:
        """Close every activation and forget which servers' text was in context."""
        for key in list(self._activations):
            self.close(key)
        self._in_context.clear()

    def acting_mcp(self) -> list[Activation]:
        """The activations of MCP skills, in key order (those whose content ended too).
        A closed session has none to offer: asking raises."""
        self.check_open()
        return sorted(
            (a for a in self._activations.values() if a.record.origin.is_mcp),
            key=lambda a: a.record.key,
        )

    def acting_on(self, server: str) -> list[Activation]:
        """``server``'s activations with a pinned entry, the deepest skill root first."""
        pinned = [
            a
            for a in self._activations.values()
            if a.entry is not None and a.record.origin.label == server
        ]
        return sorted(pinned, key=lambda a: -len(a.entry.root.segments))  # type: ignore[union-attr]

    def granted_tools(self) -> tuple[str, ...]:
        """The union of the tools granted by every activation whose content has not ended."""
        tools = (
            tool
            for activation in self._activations.values()
            if activation.ended is None
            for tool in activation.granted_tools
        )
        return tuple(dict.fromkeys(tools))

    # --- what reached the model -----------------------------------------------------------

    def emit(self, block: ContextBlock) -> ContextBlock:
        """``block`` on its way to the model, naming the tools in force: its origins count
        as in context, and the sink sees it."""
        self.check_open()
        block = block.naming(self.tools)
        origins = [block.origin, *(item.origin for item in block.items)]
        self.seen(o.label for o in origins if o is not None and o.is_mcp)
        if self._sink is not None:
            self._sink(block)
        return block

    def seen(self, labels: Iterable[str]) -> None:
        """MCP origins whose text is now in the model's context."""
        self._in_context.update(labels)

    def context_origins(self) -> set[str]:
        """MCP origins whose text is in the model's context: every block handed out since
        the last reset, and every activation in the window."""
        window = {
            a.record.origin.label for a in self._activations.values() if a.record.origin.is_mcp
        }
        return self._in_context | window

    # --- dynamic skills' budgets, and the order of calls ----------------------------------------

    def spent(self, key: SkillKey) -> int:
        return self._spent.get(key, 0)

    def spend(self, key: SkillKey, size: int, *, start: bool = False) -> None:
        """Count ``size`` more bytes read of dynamic skill ``key`` (from zero if ``start``)."""
        self._spent[key] = size + (0 if start else self._spent.get(key, 0))

    def lock(self, label: str) -> anyio.Lock:
        """The lock that keeps this context's calls to ``label`` in order."""
        lock = self._locks.get(label)
        if lock is None:
            # A free lock is taken without a trip round the event loop (a cancelled
            # caller still stops here); a held one is waited for in order, as any.
            lock = self._locks[label] = anyio.Lock(fast_acquire=True)
        return lock
