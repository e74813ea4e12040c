"""The cyclic garbage collector, paused while a listing's objects are built.

CPython starts a collection every few hundred container objects allocated, and a full
one each time the heap has grown by a quarter. Building a listing of 10,000 skills
allocates about 80,000 objects that all live on, so the collector walked them again and
again while they were made (about 175 collections, one of them full, during
``SkillHost.connect`` at 10,000 skills: a tenth of its time on a quiet machine, a fifth
on a loaded one): work that finds nothing, since building entries makes no reference
cycles. Paused, the collector looks at them once, at the first allocation after the
pause ends.

A pause covers synchronous work, or the build of one listing page between its event
loop checkpoints (a few milliseconds of work, bounded by the page's limits), never a
wait on a server. Reference counting still frees everything acyclic during a pause.
Pauses nest, across tasks and threads: the collector resumes when the last one ends,
and only if it was enabled when the first began (a host that disabled it keeps it so).
A host thread that disables the collector while a pause is held has it enabled again
when the pause ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]

_lock = threading.Lock()
_held = 0
_resume = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Hold the garbage collector off for the ``with`` block (see the module's text)."""
    global _held, _resume  # noqa: PLW0603 - one collector per process, one count of its pauses
    with _lock:
        if _held == 0:
            _resume = gc.isenabled()
            gc.disable()
        _held += 1
    try:
        yield
    finally:
        with _lock:
            _held -= 1
            if _held == 0 and _resume:
                gc.enable()
