"""Checking: ``check``, an audit of skills servers against SEP-2640 (``docs/check.md``).

Checks the servers named (every configured one when none is), and the skills
directories in the repository named by path (``_checkdir.py``: served in process, as
``skillward serve`` would serve them, findings at their files and lines; a file names
the skill it is in), each with :func:`skillward.check.runner.check_server`, and prints a
report: text, ``--json`` or ``--format sarif``. It approves nothing and caches nothing.
Exit codes: 0 when no finding is an error (``--strict``: nor a warning), or when
``--write-baseline`` accepted them all; 1 when one is (or a ``--baseline`` entry no
longer occurs); 6 when a server could not be reached or stopped answering within the
deadline; 2 for usage errors; 5 when the administrator's policy refuses a server (it is
never contacted).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from skillward.cli._context import EXIT_OK, add_command, policy_in_force
from skillward.core.errors import ConfigError, UnknownServer, UsageError

if TYPE_CHECKING:
    from skillward.check.report import Baseline
    from skillward.check.runner import ServerReport
    from skillward.cli._context import Commands
    from skillward.core.config import Limits
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
        description="Check each server named (every configured one if none is), and each "
        "skills directory named by path (served in process, as skillward serve serves "
        "it; a file names the skill it is in), and report every SEP-2640 rule broken "
        "(docs/check.md), without approving or caching anything. Exit 0 when no finding "
        "is an error, 1 when one is, 6 when a server cannot be reached or stops "
        "answering within the deadline.",
    )
    check_.add_argument(
        "labels",
        metavar="LABEL|DIR|FILE",
        nargs="*",
        help="servers to check, by label; skills directories in the repository, by path "
        "(./skills); or files, for the skills they are in (as pre-commit passes them)",
    )
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
        help="write every finding of this run to FILE, as a baseline (accepting them: exit 0)",
    )
    check_.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="PREFIX=DIR",
        help="a server's URIs under PREFIX are the files under DIR in this repository "
        "(skill://acme=skills/acme), so findings land on them (repeatable)",
    )


@dataclass
class _Chosen:
    """What one run checks: servers by label, skills directories by path."""

    specs: list[ServerSpec]
    paths: list[Path]
    #: Files were named, none of them in a skill: nothing to check.
    nothing: bool = False


def _is_path(given: str, labels: set[str]) -> bool:
    """Whether an argument names a path rather than a server: it is written as one
    (``./skills``, ``skills/``), or it exists and no server has that label."""
    if os.sep in given or "/" in given or given.startswith((".", "~")):
        return True
    return given not in labels and os.path.lexists(given)


def _chosen(args: argparse.Namespace, terminal: Terminal) -> _Chosen:
    from skillward.cli._checkdir import skills_of_files
    from skillward.cli._host import adding_servers, server_specs
    from skillward.core.labels import normalise_label

    specs = server_specs(args, terminal)
    if not args.labels:
        if not specs:
            raise UsageError("no servers to check", hint=adding_servers(args))
        return _Chosen(specs, [])
    by_label = {spec.label: spec for spec in specs}
    chosen = _Chosen([], [])
    files: list[Path] = []
    for given in args.labels:
        if _is_path(given, set(by_label)):
            path = Path(given).expanduser()
            if path.is_dir():
                chosen.paths.append(path)
            elif path.is_file():
                files.append(path)
            else:
                raise UsageError(f"{given} is not a directory or a file")
            continue
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
        if by_label[label] not in chosen.specs:
            chosen.specs.append(by_label[label])
    if files:
        skills = skills_of_files(files)
        chosen.paths += [skill for skill in skills if skill not in chosen.paths]
        chosen.nothing = not skills and not chosen.paths and not chosen.specs
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
        parse_baseline,
        render_json,
        render_sarif,
        render_text,
    )
    from skillward.check.runner import Locations, check_server
    from skillward.cli._checkdir import parse_map
    from skillward.cli._host import limits

    if args.json and args.format not in (None, "json"):
        raise UsageError("--json and --format sarif are exclusive; choose one")
    output = "json" if args.json else (args.format or "text")
    baseline = _baseline(args.baseline)
    mapped = Locations.of(parse_map(given) for given in args.map)
    chosen = _chosen(args, terminal)
    if chosen.nothing:
        # Still a report in the form asked for (code scanning reads an empty log).
        empty = outcome([])
        rendered = {"json": render_json, "sarif": render_sarif}.get(output)
        terminal.plain(
            rendered(empty) if rendered else "no skill among the files given: nothing to check"
        )
        return EXIT_OK
    policy = policy_in_force(terminal, args)
    for spec in chosen.specs:
        # A server the administrator's policy refuses is never contacted.
        policy.check_server(spec)
    bounds = policy.limits(limits(args))

    async def check_all() -> list[ServerReport]:
        reports = [
            await check_server(spec, limits=bounds, locations=mapped) for spec in chosen.specs
        ]
        taken = {report.label for report in reports}
        for path in chosen.paths:
            reports.append(await _check_directory(path, taken, bounds))
        return reports

    reports = anyio.run(check_all)
    if args.write_baseline is not None:
        written = baseline_json(reports)
        try:
            args.write_baseline.write_text(written + "\n", encoding="utf-8")
        except OSError as error:
            raise UsageError(
                f"cannot write the baseline {args.write_baseline}: {error.strerror or error}"
            ) from None
        # The baseline just written accepts every finding: the run passes (unless a
        # server could not be checked to the end).
        baseline = parse_baseline(written)
    result = outcome(reports, baseline=baseline, strict=args.strict)
    if output == "json":
        terminal.plain(render_json(result))
    elif output == "sarif":
        terminal.plain(render_sarif(result))
    else:
        terminal.plain(render_text(result))
    return result.exit_code


async def _check_directory(path: Path, taken: set[str], bounds: Limits) -> ServerReport:
    """The skills directory ``path``, served in process and checked (``_checkdir.py``)."""
    import dataclasses

    from skillward.check.runner import check_server
    from skillward.cli._checkdir import directory_label, served_directory

    served = served_directory(path, directory_label(path, taken), bounds)
    report = await check_server(
        served.spec, limits=bounds, locations=served.locations, found=served.found
    )
    return dataclasses.replace(report, target=served.target)
