"""What checking a hostile listing costs `skillward check` in memory.

A client process starts a listing server of one shape (tests/support/listings.py) over
stdio, checks it, and prints as JSON how much its resident memory grew at the peak, and
the rules it reported::

    python -m tests.support.check_measure SHAPE
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio

from tests.support.listings import _reset_peak, _status_bytes, spec


async def measure(shape: str) -> dict[str, Any]:
    from skillward.check.runner import check_server  # noqa: PLC0415 (after the baseline imports)

    with anyio.fail_after(300):
        async with spec(shape) as server:
            before = _status_bytes("VmRSS")
            _reset_peak()
            report = await check_server(server)
            peak = _status_bytes("VmHWM")
    return {
        "shape": shape,
        "rules": sorted({finding.rule for finding in report.findings}),
        "error": None if report.error is None else type(report.error).__name__,
        "growth_mb": max(peak - before, 0) / 1e6,
    }


def main() -> None:
    print(json.dumps(anyio.run(measure, sys.argv[1])))


if __name__ == "__main__":
    main()
