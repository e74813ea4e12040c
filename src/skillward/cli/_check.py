"""``skillward check``: audit skills servers against SEP-2640 (``docs/check.md``).

Connects the servers named (every configured one when none is), checks each with
:func:`skillward.check.runner.check_server`, and prints a report: text, ``--json`` or
``--format sarif``. Exit codes: 0 when no finding is an error (``--strict``: nor a
warning), 1 when one is (or a ``--baseline`` entry no longer occurs), 6 when a server
could not be reached or stopped answering within the deadline, 2 for usage errors, 5
when the administrator's policy refuses a server (it is never contacted).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio

from skillward.check.report import (
    Baseline,
    baseline_json,
    outcome,
    parse_baseline,
    render_json,
    render_sarif,
    render_text,
)
from skillward.check.runner import ServerReport, check_server
from skillward.cli._host import _limits, _server_specs
from skillward.cli._state import policy_in_force
from skillward.core.errors import ConfigError, UnknownServer, UsageError
from skillward.core.labels import normalise_label
from skillward.edge.servers import ServerSpec
from skillward.terminal.prompts import Terminal

__all__ = ["run"]

#: The largest baseline file read.
_MAX_BASELINE_BYTES = 8 * 1024 * 1024


def _chosen(args: argparse.Namespace, terminal: Terminal) -> list[ServerSpec]:
    specs = _server_specs(args, terminal)
    if not args.labels:
        if not specs:
            raise UsageError(
                "no servers to check",
                hint="Name one with --server LABEL=URL_OR_COMMAND, or configure servers "
                "(--config FILE).",
            )
        return specs
    by_label = {spec.label: spec for spec in specs}
    chosen: list[ServerSpec] = []
    for given in args.labels:
        try:
            label = normalise_label(given)
        except ConfigError as error:
            raise UsageError(error.message) from None
        if label not in by_label:
            known = ", ".join(sorted(by_label)) or "none"
            raise UnknownServer(f"no server is labelled {label!r} (configured: {known})")
        if by_label[label] not in chosen:
            chosen.append(by_label[label])
    return chosen


def _baseline(path: Path | None) -> Baseline | None:
    if path is None:
        return None
    try:
        with path.open("rb") as handle:
            data = handle.read(_MAX_BASELINE_BYTES + 1)
    except OSError as error:
        raise UsageError(f"cannot read the baseline {path}: {error.strerror or error}") from None
    if len(data) > _MAX_BASELINE_BYTES:
        raise UsageError(f"the baseline {path} is larger than {_MAX_BASELINE_BYTES} bytes")
    try:
        return parse_baseline(data.decode("utf-8"), name=str(path))
    except UnicodeDecodeError:
        raise UsageError(f"the baseline {path} is not UTF-8") from None
    except ConfigError as error:
        raise UsageError(error.message) from None


def run(args: argparse.Namespace, terminal: Terminal) -> int:
    if args.json and args.format not in (None, "json"):
        raise UsageError("--json and --format sarif are exclusive; choose one")
    output = "json" if args.json else (args.format or "text")
    baseline = _baseline(args.baseline)
    specs = _chosen(args, terminal)
    policy = policy_in_force(terminal, args)
    for spec in specs:
        # A server the administrator's policy refuses is never contacted.
        policy.check_server(spec)
    limits = policy.limits(_limits(args))

    async def check_all() -> list[ServerReport]:
        return [await check_server(spec, limits=limits) for spec in specs]

    reports = anyio.run(check_all)
    result = outcome(reports, baseline=baseline, strict=args.strict)
    if args.write_baseline is not None:
        try:
            args.write_baseline.write_text(baseline_json(reports) + "\n", encoding="utf-8")
        except OSError as error:
            raise UsageError(
                f"cannot write the baseline {args.write_baseline}: {error.strerror or error}"
            ) from None
    if output == "json":
        terminal.plain(render_json(result))
    elif output == "sarif":
        terminal.plain(render_sarif(result))
    else:
        terminal.plain(render_text(result))
    return result.exit_code
