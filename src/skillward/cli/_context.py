"""What every command shares: exit codes, how a command is added and run, and this
user's approval store, audit trail and policy.

Every command group imports this module when the grammar is built (``--version`` and
``--help`` too), so it imports nothing heavy itself: each function imports its part
when it is called. What only the commands that connect servers share is in ``_host``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillward.cli._host import Connected
    from skillward.terminal.prompts import Terminal
    from skillward.trust._store import FileApprovalStore
    from skillward.trust.audit import AuditTrail
    from skillward.trust.policy import EffectivePolicy

    #: A command: the parsed arguments and the terminal in, its exit code out.
    Run = Callable[[argparse.Namespace, Terminal], int]
    #: A command that connects servers: run with them connected (:func:`over_host`).
    HostRun = Callable[[argparse.Namespace, Connected], Awaitable[int]]
    #: Where a group adds its commands: the subcommands of the parser or of a command.
    Commands = argparse._SubParsersAction[argparse.ArgumentParser]

__all__ = [
    "EXIT_BROKEN",
    "EXIT_CODES",
    "EXIT_OK",
    "EXIT_PROBLEMS",
    "add_command",
    "add_serving_command",
    "audit_trail",
    "close_trails",
    "over_host",
    "policy_in_force",
    "store",
]

EXIT_OK = 0
#: Ctrl-C: the shell's own code for SIGINT (128 + 2).
EXIT_INTERRUPTED = 130
#: ``policy check`` (or ``check``) found problems.
EXIT_PROBLEMS = 1
#: Documented in the README and docs/cli.md; the other codes are each error's own.
EXIT_CODES = {
    0: "success",
    1: "policy check or check found problems",
    2: "usage error, or a reference that does not resolve",
    3: "approval required or denied",
    4: "verification failed",
    5: "policy denied",
    6: "server or transport error",
    7: "the audit trail is not intact (audit verify)",
}
#: ``audit verify`` found the trail broken, or could not vouch for it.
EXIT_BROKEN = 7


# --- adding commands ---------------------------------------------------------------------


def add_command(commands: Commands, name: str, run: Run, **parser: Any) -> argparse.ArgumentParser:
    """Add the command ``name`` to ``commands``: ``run`` runs it with a terminal."""
    command = commands.add_parser(name, **parser)
    command.set_defaults(run=run)
    return command


def add_serving_command(
    commands: Commands, name: str, serve: Callable[[argparse.Namespace], int], **parser: Any
) -> argparse.ArgumentParser:
    """Add the command ``name``, a server: its stdout carries a protocol, so it writes to
    no terminal but for an error, and starts without the modules a terminal brings."""
    command = commands.add_parser(name, **parser)
    command.set_defaults(serve=serve)
    return command


def over_host(body: HostRun) -> Run:
    """The command that runs ``body`` once the servers given are connected.

    Only then is the host imported (and with it, once a server connects, ``mcp``).
    """

    def run(args: argparse.Namespace, terminal: Terminal) -> int:
        from skillward.cli import _host

        return _host.run(args, terminal, body)

    return run


# --- this user's state -------------------------------------------------------------------


def store(terminal: Terminal) -> FileApprovalStore:
    """The remembered approvals, their key in the key store the user's ``config.toml``
    chooses; a store it cannot trust is reported on ``terminal``, and so is each problem
    in the config."""
    from skillward.edge._dirs import approvals_file
    from skillward.trust._keyfile import read_user_config, user_keys
    from skillward.trust._store import FileApprovalStore

    config = read_user_config()
    for problem in config.problems:
        terminal.note(f"config: {problem}")
    path = approvals_file()
    return FileApprovalStore(path, keys=user_keys(path, config), report=terminal.error)


def audit_trail(policy: EffectivePolicy | None = None) -> AuditTrail:
    """The command line keeps the audit trail in the user state directory, its checkpoints
    authenticated with a key in the key store the user's ``config.toml`` chooses, and
    exports its events where ``policy`` (by default the policy in force, read quietly) or
    the ``OTEL_EXPORTER_OTLP_*`` variables say. The trail is closed (its last checkpoint
    written) when the command ends (:func:`close_trails`)."""
    from skillward.edge._dirs import audit_file
    from skillward.trust._keyfile import read_user_config, user_keys
    from skillward.trust.audit import AuditTrail, audit_export

    if policy is None:
        from skillward.trust._policyload import load_policy

        policy = load_policy(report=lambda _: None)
    path = audit_file()
    keys = user_keys(path, read_user_config(), prefix="audit")
    trail = AuditTrail(path, keys=keys, export=audit_export(policy.audit_rules()))
    _TRAILS.append(trail)
    return trail


_TRAILS: list[AuditTrail] = []


def close_trails() -> None:
    """Close the trails the command opened: a checkpoint over what each recorded, and a
    moment for the export to deliver it."""
    while _TRAILS:
        _TRAILS.pop().close()


def policy_in_force(
    terminal: Terminal, args: argparse.Namespace | None = None, *, headless: bool | None = None
) -> EffectivePolicy:
    """The policy in force for this command. With no one to ask, "prompt" is deny: no
    terminal, unless the command itself is the person's answer (``approve --yes``), or
    unless the command says who asks (``headless``: the gateway asks through the host)."""
    from skillward.terminal._render import interactive
    from skillward.trust._policyload import load_policy

    if headless is None:
        answered = args is not None and bool(getattr(args, "yes", False))
        headless = not interactive(sys.stdin) and not answered
    return load_policy(
        headless=headless,
        report=lambda text: terminal.note(f"policy: {text}"),
    )
