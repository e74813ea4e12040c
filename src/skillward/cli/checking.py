"""Checking: ``check``, an audit of skills servers against SEP-2640 (``docs/check.md``).

Connects the servers named (every configured one when none is), checks each with
:func:`skillward.check.runner.check_server`, and prints a report: text, ``--json`` or
``--format sarif``. It approves nothing and caches nothing. Exit codes: 0 when no
finding is an error (``--strict``: nor a warning), 1 when one is (or a ``--baseline``
entry no longer occurs), 6 when a server could not be reached or stopped answering
within the deadline, 2 for usage errors, 5 when the administrator's policy refuses a
server (it is never contacted).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from skillward.cli._context import add_command, policy_in_force
from skillward.core.errors import ConfigError, UnknownServer, UsageError

if TYPE_CHECKING:
    from skillward.check.report import Baseline
    from skillward.cli._context import Commands
    from skillward.edge.servers import ServerSpec
    from skillward.terminal.prompts import Terminal

__all__ = ["add_commands", "check"]

#: The largest baseline file read.
_MAX_BASELINE_BYTES = 8 * 1024 * 1024


def add_commands(commands: Commands) -> None:
    check_ = add_command(
        commands,
        "check",
        check,
        help="audit skills servers against SEP-2640 (for the people who write servers)",
        description="Connect each server named (every configured one if none is) and "
        "report every SEP-2640 rule it breaks (docs/check.md), without approving or "
        "caching anything. Exit 0 when no finding is an error, 1 when one is, 6 when a "
        "server cannot be reached or stops answering within the deadline.",
    )
    check_.add_argument("labels", metavar="LABEL", nargs="*", help="servers to check")
    check_.add_argument(
        "--format",
        choices=["text", "json", "sarif"],
        help="text (the default), json (as --json) or sarif (SARIF 2.1.0, for code scanning)",
    )
    check_.add_argument(
        "--strict", action="store_true", help="warnings fail the check too (exit 1)"
    )
    check_.add_argument(
        "--baseline",
        type=Path,
        metavar="FILE",
        help="accept the findings FILE lists; fail on an entry that no longer occurs",
    )
    check_.add_argument(
        "--write-baseline",
        type=Path,
        metavar="FILE",
        help="write every finding of this run to FILE, as a baseline",
    )


def _chosen(args: argparse.Namespace, terminal: Terminal) -> list[ServerSpec]:
    from skillward.cli._host import adding_servers, server_specs
    from skillward.core.labels import normalise_label

    specs = server_specs(args, terminal)
    if not args.labels:
        if not specs:
            raise UsageError("no servers to check", hint=adding_servers(args))
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
            raise UnknownServer(
                f"no server is labelled {label!r} (configured: {known})",
                hint=adding_servers(args),
            )
        if by_label[label] not in chosen:
            chosen.append(by_label[label])
    return chosen


def _baseline(path: Path | None) -> Baseline | None:
    from skillward.check.report import parse_baseline

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


def check(args: argparse.Namespace, terminal: Terminal) -> int:
    import anyio

    from skillward.check.report import (
        baseline_json,
        outcome,
        render_json,
        render_sarif,
        render_text,
    )
    from skillward.check.runner import ServerReport, check_server
    from skillward.cli._host import limits

    if args.json and args.format not in (None, "json"):
        raise UsageError("--json and --format sarif are exclusive; choose one")
    output = "json" if args.json else (args.format or "text")
    baseline = _baseline(args.baseline)
    specs = _chosen(args, terminal)
    policy = policy_in_force(terminal, args)
    for spec in specs:
        # A server the administrator's policy refuses is never contacted.
        policy.check_server(spec)
    bounds = policy.limits(limits(args))

    async def check_all() -> list[ServerReport]:
        return [await check_server(spec, limits=bounds) for spec in specs]

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
