"""Keeping the gateway's catalog current while it serves: each upstream server listed
again when its listing's time is up, and connected again, with a bounded backoff, when it
died or never connected."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

from skillward.core.errors import SkillwardError
from skillward.edge.servers import ServerSpec

if TYPE_CHECKING:
    from skillward.gateway.server import Gateway

__all__ = ["Upstreams", "follow_upstreams"]

logger = logging.getLogger("skillward")

#: Bounds on the wait before connecting a dead or failed server again (it doubles).
_BACKOFF_MIN = 1.0
_BACKOFF_MAX = 300.0
#: The shortest time a listing is kept, whatever ``ttlMs`` a server gives; and how often
#: the rounds run (at most), so a shorter ``ttlMs`` than the interval is followed.
_TTL_MIN = 5.0


class Upstreams:
    """Keeps the catalog current while the gateway serves: lists each server again when
    its listing's ``ttlMs`` (at least 5 s, at most ``interval``) or else ``interval`` has
    passed, connects again (with a bounded backoff) servers that died or never connected,
    and tells the clients when the catalog changed. One server's failure is its own: it
    is logged and retried, never raised."""

    def __init__(self, gateway: Gateway, failed: list[ServerSpec], interval: float = 60.0) -> None:
        self.gateway = gateway
        self.pending = {spec.label: spec for spec in failed}
        self.interval = interval
        self._waits: dict[str, float] = {}
        self._due: dict[str, float] = {}

    def _failed(self, label: str, error: SkillwardError, now: float) -> None:
        wait = min(_BACKOFF_MAX, max(_BACKOFF_MIN, self._waits.get(label, 0.0) * 2))
        self._waits[label], self._due[label] = wait, now + wait
        logger.info("server %s: %s (again in %.0f s)", label, error.message, wait)

    def _listed(self, label: str, ttl: float | None, now: float) -> None:
        self._waits.pop(label, None)
        keep = self.interval if ttl is None else min(self.interval, max(_TTL_MIN, ttl))
        self._due[label] = now + keep

    async def step(self) -> bool:
        """One round: what is due. True if the catalog changed."""
        host = self.gateway.host
        now = anyio.current_time()
        for status in host.servers():
            label = status.label
            if self._due.get(label, 0.0) > now:
                continue
            try:
                if status.state == "connected":
                    await host.refresh(label)
                else:
                    await host.reconnect(label)
            except SkillwardError as error:
                self._failed(label, error, now)
                continue
            listed = next((s for s in host.servers() if s.label == label), status)
            self._listed(label, listed.listing_ttl, now)
        for label, spec in list(self.pending.items()):
            if self._due.get(label, 0.0) > now:
                continue
            try:
                await host.connect(spec)
            except SkillwardError as error:
                self._failed(label, error, now)
                continue
            del self.pending[label]
            self._listed(label, None, now)
        return await self.gateway.catalog_changed()


async def follow_upstreams(gateway: Gateway, failed: list[ServerSpec], interval: float) -> None:
    """Run :class:`Upstreams` for as long as the gateway serves."""
    upstreams = Upstreams(gateway, failed, interval)
    while True:
        await anyio.sleep(min(max(0.05, interval), _TTL_MIN))
        await upstreams.step()
