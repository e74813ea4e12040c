"""Diagnosing: ``doctor``, what works on this machine and why not.

It says which key store keeps the approval store's key and whether it works, which
approval scopes work here, the policy in force, whether the audit trail is tamper-evident
and where its events are exported (asking the collector with an empty request), every
path skillward uses, and the exact fix for each problem found. It connects no server,
imports neither ``mcp`` nor the host, and changes nothing but what using the key store
does (the keyring's check writes and removes an item of its own; the file key store's
directory is made; the audit file is created if it is not there).
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from skillward.cli._context import EXIT_OK, add_command
from skillward.core.errors import RememberUnavailable, printable

if TYPE_CHECKING:
    from skillward.cli._context import Commands
    from skillward.terminal.prompts import Terminal
    from skillward.trust._keyfile import FileKeyring
    from skillward.trust._keys import OsKeyring
    from skillward.trust._userconfig import UserConfig
    from skillward.trust.approvals import ApprovalRules
    from skillward.trust.policy import EffectivePolicy, Setting

__all__ = ["add_commands", "doctor"]

#: The policy keys that decide what approvals may be.
_APPROVAL_KEYS = ("approvals.persist", "approvals.max_age_days", "keyring.require_recommended")


def add_commands(commands: Commands) -> None:
    add_command(
        commands,
        "doctor",
        doctor,
        help="which key store is in use, which approval scopes work here and why not, the "
        "policy in force, the paths, and the fix for each problem",
        description="Exit 0 when approvals can be remembered here, 3 when they cannot.",
    )


@dataclass
class _Report:
    """What ``doctor`` found; ``problems`` are (what is wrong, the fix) pairs."""

    key_store: dict[str, object]
    scopes: dict[str, dict[str, object]]
    policy: dict[str, object]
    paths: dict[str, str]
    problems: list[tuple[str, str]] = field(default_factory=list)
    audit: dict[str, object] = field(default_factory=dict)

    @property
    def remember_works(self) -> bool:
        return self.scopes["remember"]["works"] is True

    def json(self) -> dict[str, object]:
        return {
            "remember_works": self.remember_works,
            "key_store": self.key_store,
            "scopes": self.scopes,
            "policy": self.policy,
            "audit": self.audit,
            "paths": self.paths,
            "problems": [{"problem": p, "fix": f} for p, f in self.problems],
        }


def doctor(args: argparse.Namespace, terminal: Terminal) -> int:
    from skillward.edge._dirs import approvals_file
    from skillward.trust._keyfile import read_user_config, user_keys
    from skillward.trust._policyload import load_policy
    from skillward.trust._store import FileApprovalStore

    config = read_user_config()
    path = approvals_file()
    keys = user_keys(path, config)
    store = FileApprovalStore(path, keys=keys, report=terminal.error)
    policy = load_policy(report=lambda _: None)  # its problems are part of the report
    rules = policy.approval_rules(store)
    report = _Report({}, {}, _policy(policy), _paths(config, store.path))
    report.problems += [(problem, f"edit {config.source}") for problem in config.problems]
    report.key_store = _key_store(keys, config, store.unavailable(), report)
    report.scopes = _scopes(rules, report.key_store)
    _policy_problems(policy, rules, config, report)
    report.audit = _audit(policy, config, report)
    if args.json:
        terminal.json(report.json())
    else:
        _show(report, terminal)
    return EXIT_OK if report.remember_works else RememberUnavailable.exit_code


# --- what was found ----------------------------------------------------------------------


def _mode(path: Path) -> str | None:
    """``path``'s permission bits (``"0600"``), not following a link; None if missing."""
    try:
        return f"{stat.S_IMODE(os.lstat(path).st_mode):04o}"
    except OSError:
        return None


def _key_store(
    keys: OsKeyring | FileKeyring, config: UserConfig, why: str | None, report: _Report
) -> dict[str, object]:
    from skillward.trust._keyfile import FileKeyring

    found: dict[str, object] = {
        "kind": "file" if isinstance(keys, FileKeyring) else "keyring",
        "chosen_in": config.chosen if config.line is not None else None,
        "works": why is None,
        "problem": why,
    }
    keys_why = keys.unavailable()
    if why is not None and keys_why is None:  # the store itself: its lock, its directory
        report.problems.append(
            (
                why,
                f"make sure {report.paths['data']} is yours and writable, and that no "
                "skillward process is stuck holding its lock",
            )
        )
    if isinstance(keys, FileKeyring):
        found |= {
            "directory": str(keys.directory),
            "directory_mode": _mode(keys.directory),
            "key_file": str(keys.key_path),
            "key_file_mode": _mode(keys.key_path),
            "counter_file": str(keys.counter_path),
            "counter_file_mode": _mode(keys.counter_path),
        }
        if keys.refusal is not None:
            report.problems.append(keys.refusal)
        return found
    priority = keys.priority
    found |= {
        "backend": keys.name,
        "priority": priority,
        "recommended": priority >= 1,
        "python_keyring_backend": os.environ.get("PYTHON_KEYRING_BACKEND"),
    }
    if keys_why is not None:
        report.problems.append((keys_why, _keyring_fix(report.paths["config"])))
    return found


def _keyring_fix(config: str) -> str:
    """How to make remembering work when the OS keyring does not."""
    steps = []
    chosen = os.environ.get("PYTHON_KEYRING_BACKEND")
    if chosen:
        steps.append(f"unset PYTHON_KEYRING_BACKEND (it is {printable(chosen)!r}, which chose it)")
    if sys.platform == "darwin":
        steps.append("unlock your login keychain (Keychain Access)")
    elif sys.platform == "win32":
        steps.append("make sure Windows Credential Manager is available to your user")
    else:
        steps.append(
            "install a Secret Service (gnome-keyring) and run skillward inside a D-Bus "
            "session with it unlocked (`dbus-run-session -- sh`, then `echo PASSWORD | "
            "gnome-keyring-daemon --unlock`)"
        )
    return (
        "; ".join(steps)
        + "; or, on a machine with no keyring (a container, SSH, WSL, CI), use the file key "
        f'store: put key_store = "file" under [approvals] in {config} (it keeps the key '
        "from what can write only your workspace, not from your own processes: SECURITY.md, "
        "T58)"
    )


def _scopes(rules: ApprovalRules, key_store: dict[str, object]) -> dict[str, dict[str, object]]:
    from skillward.trust.approvals import Scope

    def scope(works: bool, why: str | None) -> dict[str, object]:
        return {"works": works, "why_not": None if works else why}

    remember_why = (
        rules.scope_reason
        if not rules.allows(Scope.REMEMBER)
        else rules.remember_refused or key_store["problem"]
    )
    return {
        "once": scope(True, None),
        "session": scope(rules.allows(Scope.SESSION), rules.scope_reason),
        "remember": scope(remember_why is None, str(remember_why)),
    }


def _audit(policy: EffectivePolicy, config: UserConfig, report: _Report) -> dict[str, object]:
    """Whether the audit trail is tamper-evident here and where its events are exported,
    each against what the policy requires."""
    from skillward.edge._dirs import audit_file
    from skillward.trust._keyfile import user_keys
    from skillward.trust.audit import AuditTrail, audit_export

    path = audit_file()
    rules = policy.audit_rules()
    why = AuditTrail(path, keys=user_keys(path, config, prefix="audit")).tamper_evidence()
    found: dict[str, object] = {
        "trail": str(path),
        "tamper_evident": why is None,
        "why_not": why,
        "required_by": rules.tamper_evident,
        "export": None,
    }
    if why is not None and rules.tamper_evident is not None:
        report.problems.append(
            (
                f"the policy requires a tamper-evident audit trail ({rules.tamper_evident}), "
                f"and this one is not, so no skill loads: {why}",
                "make the key store work (its problem and fix are above): the trail keeps "
                "its key there, beside the approval store's",
            )
        )
    export = audit_export(rules)
    if export is None:
        return found
    url = export.logs_url()
    problem = export.unavailable(url)
    if problem is None and url is not None:
        from skillward.trust._otlp import Sender

        send = Sender(url, 3.0)
        try:
            problem = send([])  # an empty request: does the collector answer?
        finally:
            send.close()
    found["export"] = {
        "endpoint": url,
        "required_by": export.required_by,
        "works": problem is None,
        "problem": problem,
    }
    if problem is not None:
        whose = f" ({export.required_by})" if export.required_by else ""
        report.problems.append(
            (
                f"audit events cannot be exported{whose}: {problem}; they are kept in the "
                "local trail only",
                "install skillward[otel], and name a collector that answers "
                "(audit.export_endpoint in the policy, or OTEL_EXPORTER_OTLP_ENDPOINT)",
            )
        )
    return found


def _policy(policy: EffectivePolicy) -> dict[str, object]:
    from skillward.trust._policyload import admin_policy_dir

    lockdown = policy.lockdown
    settings = (policy.setting(key) for key in _APPROVAL_KEYS)
    return {
        "administrator_directory": str(admin_policy_dir()),
        "files": [layer.parsed.source for layer in policy.layers],
        "lockdown": None
        if lockdown is None
        else {"path": lockdown.path, "reason": lockdown.reason, "hint": lockdown.hint},
        "values": [
            {"key": s.key, "value": s.value, "source": str(s.source)}
            for s in settings
            if s is not None
        ],
        "problems": [str(problem) for problem in policy.problems],
    }


def _paths(config: UserConfig, store: Path) -> dict[str, str]:
    from skillward.edge import _dirs

    return {
        "config": config.source,
        "servers": str(_dirs.default_servers_file()),
        "user_policy": str(_dirs.user_policy_file()),
        "data": str(_dirs.user_data_dir()),
        "approval_store": str(store),
        "state": str(_dirs.user_state_dir()),
        "audit_trail": str(_dirs.audit_file()),
        "server_logs": str(_dirs.server_log_dir()),
        "gateway_token": str(_dirs.gateway_token_file()),
        "cache": str(_dirs.user_cache_dir()),
    }


def _policy_problems(
    policy: EffectivePolicy, rules: ApprovalRules, config: UserConfig, report: _Report
) -> None:
    from skillward.trust.approvals import Scope

    lockdown = policy.lockdown
    if lockdown is not None:
        report.problems.append((lockdown.message, lockdown.hint or f"fix {lockdown.path}"))
        return
    for problem in policy.problems:
        report.problems.append(
            (str(problem), f"fix it, then run `skillward policy check {problem.source}`")
        )
    persist = policy.setting("approvals.persist")
    if persist is not None and not rules.allows(Scope.REMEMBER):
        report.problems.append((rules.scope_reason, _rule_fix(policy, persist)))
    required = policy.setting("keyring.require_recommended")
    if rules.remember_refused is not None and required is not None:
        report.problems.append(
            (
                rules.remember_refused,
                _rule_fix(policy, required)
                + f"; or, where there is a keyring, remove approvals.key_store from "
                f"{config.source} to use it",
            )
        )


def _rule_fix(policy: EffectivePolicy, setting: Setting) -> str:
    """Who can change ``setting``, and where."""
    if setting.layer == "user":
        return f"change or remove {setting.key} in your policy file {setting.source}"
    contact = setting.contact or policy.contact or "none named in the policy"
    return f"only the administrator can change {setting.key} ({setting.source}; contact: {contact})"


# --- the text report ---------------------------------------------------------------------


def _show(report: _Report, terminal: Terminal) -> None:
    def line(text: str) -> None:
        terminal.text(printable(text, limit=2000))

    store = report.key_store
    works = "works" if store["works"] else f"does not work: {store['problem']}"
    if store["kind"] == "file":
        line(f"key store: the file key store ({store['chosen_in']}); it {works}")
        for name in ("directory", "key_file", "counter_file"):
            mode = store[f"{name}_mode"]
            shown = f"mode {mode}" if mode is not None else "not made yet"
            line(f"  {name.replace('_', ' ')}: {store[name]} ({shown})")
    else:
        unset = f"the default: approvals.key_store is not set in {report.paths['config']}"
        chosen = store["chosen_in"] or unset
        recommended = "recommended" if store["recommended"] else "not recommended"
        line(f"key store: the OS keyring ({chosen}); it {works}")
        line(f"  backend: {store['backend']!r} (priority {store['priority']:g}, {recommended})")
    line("")
    line("approval scopes here:")
    notes = {
        "once": "nothing is kept",
        "session": "kept while the process runs: a command's ends with it, the gateway's "
        "and a host's last",
        "remember": "kept in the approval store, bound to the skill's content",
    }
    for name, scope in report.scopes.items():
        said = f"works ({notes[name]})" if scope["works"] else f"does not: {scope['why_not']}"
        line(f"  {name:<9} {said}")
    line("")
    policy = report.policy
    files = policy["files"]
    assert isinstance(files, list)
    line(
        "policy in force: "
        + (", ".join(files) or f"no files (administrator's in {policy['administrator_directory']})")
    )
    lockdown = policy["lockdown"]
    line(f"  lockdown: {'yes: ' + str(lockdown['reason']) if isinstance(lockdown, dict) else 'no'}")
    values = policy["values"]
    assert isinstance(values, list)
    for value in values:
        line(f"  {value['key']} = {value['value']!r}    ({value['source']})")
    line("")
    audit = report.audit
    tamper = "yes" if audit["tamper_evident"] else f"no: {audit['why_not']}"
    required = audit["required_by"]
    line(f"audit trail: {audit['trail']}")
    line(f"  tamper-evident: {tamper}" + (f" (required: {required})" if required else ""))
    export = audit["export"]
    if isinstance(export, dict):
        works = "works" if export["works"] else f"does not work: {export['problem']}"
        line(f"  exported to: {export['endpoint']}; it {works}")
    else:
        line("  exported: no (no policy asks for it, and OTEL_EXPORTER_OTLP_ENDPOINT is not set)")
    line("")
    line("paths:")
    for name, path in report.paths.items():
        line(f"  {name.replace('_', ' '):<15} {path}")
    line("")
    if not report.problems:
        line("no problems found")
    for number, (problem, fix) in enumerate(report.problems, 1):
        line(f"problem {number}: {problem}")
        line(f"  fix: {fix}")
