"""The policy seam, and the effective policy that administrator and user files make.

A policy is consulted before the approver: it can refuse a server or a skill
outright (raising :class:`~skillward.core.errors.PolicyDenied`), and a person's
approval never overrides it. Policy checks raise; they never return a bool.

The default, :class:`NoPolicy`, is the absence of any policy: it restricts
nothing, and the approver and gates still apply. :class:`EffectivePolicy` is what
:func:`~skillward.load_policy` builds from the policy files (administrator first,
then the user's, then what the host passes in code). Each later layer only narrows:

* ``allow`` lists apply together (a name must pass every one); a later list that
  names something an earlier one does not still applies (its other entries narrow),
  and the wider entry is named in a warning;
* ``deny`` lists and ``deny_digests`` merge from every layer, and deny beats allow;
* a later scalar looser than an earlier one is ignored, with a warning;
* pins come from the administrator and host code only.

Server patterns are parsed once, as the files are read, into one kind each (a URL, a
command line or a label) and match only servers of that transport (``trust/_patterns.py``).
What a pattern leaves out, a deny rule reads widely and an allow rule narrowly: a URL with
no port denies every port but allows the default one, and a bare word that denies a label
denies the program of that name too.

An effective policy in *lockdown* (an administrator file that cannot be trusted or
read) lets no server connect, remembers nothing and caches nothing.

It also says, per kind of grant, whether a person may be asked for it at all
(:meth:`Policy.grant_mode`): ``"prompt"`` lets the gates ask; ``"never"`` refuses
without asking. The host treats any other answer as ``"never"``.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from skillward.core.config import Limits
from skillward.core.errors import PolicyDenied
from skillward.edge.servers import ServerSpec
from skillward.trust._keyfile import FileKeyring
from skillward.trust._keys import OsKeyring
from skillward.trust._patterns import ServerPattern, glob, server_name, wild
from skillward.trust._policyfile import TABLES, ParsedPolicy, PinEntry, PolicyProblem
from skillward.trust._store import FileApprovalStore
from skillward.trust.approvals import (
    ActivationRequest,
    ApprovalRules,
    ApprovalStorage,
    Scope,
    content_hash,
)
from skillward.trust.audit import AuditRules

__all__ = [
    "GRANT_KINDS",
    "EffectivePolicy",
    "GrantKind",
    "GrantMode",
    "Lockdown",
    "NoPolicy",
    "Pin",
    "Policy",
    "PolicyLayer",
    "Refusal",
    "Setting",
    "Source",
    "refusal",
]

#: The grants a person may be asked for while the model acts on an MCP skill.
GrantKind = Literal["allowed_tools", "execution", "cross_origin"]
GRANT_KINDS: tuple[GrantKind, ...] = ("allowed_tools", "execution", "cross_origin")
#: ``"prompt"``: a person may be asked; ``"never"``: refused without asking.
GrantMode = Literal["prompt", "never"]
LayerKind = Literal["admin", "user", "host"]

_MIB = 1024 * 1024
_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class Source:
    """Where a policy value was set: a file and line, or ``"host code"``."""

    path: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


@dataclass(frozen=True, slots=True)
class Setting:
    """One effective policy value, with the file (and line) it came from."""

    key: str
    #: A string, number or bool; a list for an allow list; a ``PinEntry`` for a pin.
    value: Any
    source: Source
    #: The contact of the file it came from, if that file names one.
    contact: str | None = None
    #: Whose layer set it, and so who can change it.
    layer: LayerKind = "admin"


@dataclass(frozen=True, slots=True)
class Pin:
    """An administrator's (or host's) pre-approval of exactly one skill's content."""

    server: str
    skill: str
    content: str
    grant_tools: bool
    source: Source


@dataclass(frozen=True, slots=True)
class Lockdown:
    """Why the policy cannot be trusted, so nothing may connect or persist."""

    #: The file or directory at fault.
    path: str
    #: One line: what is wrong with it, for example ``"is group-writable (mode 775)"``.
    reason: str
    hint: str = ""

    @property
    def message(self) -> str:
        return (
            f"the policy cannot be used: {self.path} {self.reason}; no server may connect "
            "and nothing is remembered until it is fixed"
        )


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why the policy refuses something without asking anyone, and whose rule it is."""

    #: Whose rule it is, in a few words: ``"your own policy file"``, ``"the
    #: administrator's policy"`` or ``"the host's own policy"`` (the application's code).
    whose: str
    #: The rule as a refusal names it: its value, where it is set, whose it is.
    rule: str
    #: Who can change it, and how, for the person refused.
    hint: str


#: Whose rule a layer's settings are, in a few words.
_WHOSE: dict[LayerKind, str] = {
    "admin": "the administrator's policy",
    "user": "your own policy file",
    "host": "the host's own policy",
}


@dataclass(frozen=True, slots=True)
class PolicyLayer:
    """One parsed policy file (or the host's mapping), and whose it is."""

    kind: LayerKind
    parsed: ParsedPolicy


class Policy(Protocol):
    def check_server(self, spec: ServerSpec) -> None:
        """Raise PolicyDenied if this server may not be connected."""

    def check_activation(self, request: ActivationRequest) -> None:
        """Raise PolicyDenied if this skill may not be loaded, whatever the approver says."""

    def grant_mode(self, kind: GrantKind) -> GrantMode:
        """Whether a person may be asked for this grant at all ("never": refuse unasked)."""

    def pin_for(self, request: ActivationRequest) -> Pin | None:
        """The pin that pre-approves exactly this content from this server, if any."""

    def limits(self, base: Limits) -> Limits:
        """``base`` with the policy's limits applied."""

    def cache_allowed(self) -> bool:
        """Whether verified content may be kept in a disk cache."""


class NoPolicy:
    """No policy: nothing is restricted beyond the approver and gates."""

    def check_server(self, spec: ServerSpec) -> None:
        return None

    def check_activation(self, request: ActivationRequest) -> None:
        return None

    def grant_mode(self, kind: GrantKind) -> GrantMode:
        return "prompt"

    def pin_for(self, request: ActivationRequest) -> Pin | None:
        return None

    def limits(self, base: Limits) -> Limits:
        return base

    def cache_allowed(self) -> bool:
        return True

    def audit_rules(self) -> AuditRules:
        """What the audit trail must be: nothing."""
        return AuditRules()


# --- skill globs ------------------------------------------------------------------------------


def _segment(pattern: str, segment: str) -> bool:
    """One path segment: ``*`` within it, ``?`` one character."""
    return glob(pattern, segment)


@functools.lru_cache(maxsize=512)
def _skill_matches(pattern: str, names: tuple[str, ...], *, fold: bool = False) -> bool:
    """``*`` within one path segment, ``**`` as a segment across segments. ``fold``: without
    regard to case (deny rules, so a case variant does not slip by). Server patterns are
    typed, and match in ``trust/_patterns.py``.

    Kept by its arguments (strings, so nothing it answers for can change under it): each
    load asks the same of the same policy and skill."""
    if fold:
        pattern, names = pattern.casefold(), tuple(name.casefold() for name in names)
    parts = pattern.split("/")
    return any(wild(parts, name.split("/"), "**", _segment) for name in names)


# --- merging ---------------------------------------------------------------------------------

# Rank of each scalar's values: a higher rank is stricter. Numbers: smaller is stricter.
_RANKS: dict[str, dict[object, int]] = {
    "skills.dynamic": {"prompt": 0, "deny": 1},
    "approvals.persist": {"remember": 0, "session": 1, "once": 2},
    "grants.allowed_tools": {"prompt": 0, "never": 1},
    "grants.execution": {"prompt": 0, "never": 1},
    "grants.cross_origin": {"prompt": 0, "never": 1},
    "limits.cache": {"on": 0, "off": 1},
    "keyring.require_recommended": {False: 0, True: 1},
    "audit.require_tamper_evident": {False: 0, True: 1},
    "audit.require_export": {False: 0, True: 1},
}
_LISTS = ("deny", "deny_digests")
# Values no later layer changes: the first layer's stands, and another is ignored, said so.
_FIRST = ("audit.export_endpoint",)


def _rank(key: str, value: object) -> float:
    ranks = _RANKS.get(key)
    if ranks is not None:
        return ranks[value]
    assert isinstance(value, int)
    return -float(value)


@dataclass(frozen=True, slots=True)
class _AllowList:
    key: str
    source: Source
    contact: str | None
    layer: LayerKind
    entries: tuple[Setting, ...]


@dataclass
class _Merged:
    allows: dict[str, list[_AllowList]] = field(default_factory=dict)
    denies: dict[str, list[Setting]] = field(default_factory=dict)
    scalars: dict[str, Setting] = field(default_factory=dict)
    pins: list[Setting] = field(default_factory=list)
    #: Each server pattern's text, and the pattern it was parsed into.
    patterns: dict[str, ServerPattern] = field(default_factory=dict)
    contact: Setting | None = None
    problems: list[PolicyProblem] = field(default_factory=list)


def _uncovered(
    entries: Sequence[Setting], earlier: Sequence[_AllowList], covers: Callable[[str, str], bool]
) -> tuple[str, _AllowList] | None:
    """An entry of a later allow list that an earlier one does not cover, and that list."""
    for entry in entries:
        for held in earlier:
            if not any(covers(a.value, entry.value) for a in held.entries):
                return entry.value, held
    return None


def _scalar(scalars: dict[str, Setting], setting: Setting) -> str | None:
    """Merge ``setting`` into ``scalars``, the strictest kept (the first, for a value no
    layer changes); why it is ignored, if it is."""
    key, value = setting.key, setting.value
    held = scalars.get(key)
    if held is None:
        scalars[key] = setting
        return None
    if key in _FIRST:
        if value == held.value:
            return None
        return f"{key} = {value!r} is ignored: events go to {held.value!r}, set in {held.source}"
    if _rank(key, value) < _rank(key, held.value):
        return (
            f"{key} = {value!r} is ignored: it is looser than {held.value!r} set in {held.source}"
        )
    if _rank(key, value) > _rank(key, held.value):
        scalars[key] = setting
    return None


def _merge(layers: Sequence[PolicyLayer]) -> _Merged:
    merged = _Merged()
    patterns = merged.patterns

    def covers(table: str) -> Callable[[str, str], bool]:
        if table == "servers":
            return lambda held, entry: patterns[held].covers(patterns[entry])
        return lambda held, entry: _skill_matches(held, (entry,))

    def text(value: object) -> object:
        """A list entry as written; a server pattern's parse is kept by its text."""
        if isinstance(value, ServerPattern):
            patterns[value.text] = value
            return value.text
        return value

    for layer in layers:
        parsed = layer.parsed
        document = parsed.document
        if document is None:
            continue
        contact = document.contact
        kind = layer.kind

        def where(*path: str | int, parsed: ParsedPolicy = parsed) -> Source:
            return Source(parsed.source, parsed.line(*path))

        def warn(path: tuple[str | int, ...], message: str, parsed: ParsedPolicy = parsed) -> None:
            merged.problems.append(PolicyProblem(parsed.source, parsed.line(*path), message))

        if contact is not None and merged.contact is None:
            merged.contact = Setting("contact", contact, where("contact"), contact, kind)
        for table_name in TABLES:
            table = getattr(document, table_name)
            for name in type(table).model_fields:
                if name not in table.model_fields_set:
                    continue
                key = f"{table_name}.{name}"
                value = getattr(table, name)
                if name == "allow":
                    entries = tuple(
                        Setting(key, text(v), where(table_name, name, i), contact, kind)
                        for i, v in enumerate(value)
                    )
                    earlier = merged.allows.setdefault(key, [])
                    wider = _uncovered(entries, earlier, covers(table_name))
                    if wider is not None:
                        # Kept all the same: lists apply together, so the entry widens
                        # nothing, and the list's other entries still narrow.
                        entry, narrower = wider
                        warn(
                            (table_name, name),
                            f"{key} names {entry!r}, which {key} in {narrower.source} does "
                            "not allow: it is not allowed, and the rest of this list applies",
                        )
                    allow_list = _AllowList(key, where(table_name, name), contact, kind, entries)
                    earlier.append(allow_list)
                elif name in _LISTS:
                    merged.denies.setdefault(key, []).extend(
                        Setting(key, text(v), where(table_name, name, i), contact, kind)
                        for i, v in enumerate(value)
                    )
                else:
                    setting = Setting(key, value, where(table_name, name), contact, kind)
                    ignored = _scalar(merged.scalars, setting)
                    if ignored is not None:
                        warn((table_name, name), ignored)
        if document.pins and layer.kind == "user":
            warn(
                ("pins", 0),
                "pins in a user policy file are ignored: only the administrator's files and "
                "the host's code may pre-approve skills",
            )
        elif document.pins:
            merged.pins.extend(
                Setting("pins", pin, where("pins", i), contact, kind)
                for i, pin in enumerate(document.pins)
            )
            patterns.update((pin.server.text, pin.server) for pin in document.pins)
    return merged


# --- the effective policy ---------------------------------------------------------------------


class EffectivePolicy:
    """The policy in force: every layer merged, narrowing only (see the module docstring).

    Build one with :func:`~skillward.load_policy`. ``headless`` says no person can be
    asked here (no terminal, no approver able to ask): every ``"prompt"`` then means
    deny. ``lockdown`` makes it the strictest policy there is.
    """

    def __init__(
        self,
        layers: Sequence[PolicyLayer] = (),
        *,
        headless: bool = False,
        lockdown: Lockdown | None = None,
    ) -> None:
        self.layers = tuple(layers)
        self.headless = headless
        self.lockdown = lockdown
        merged = _merge(self.layers)
        self._allows = {k: tuple(v) for k, v in merged.allows.items()}
        self._denies = {k: tuple(v) for k, v in merged.denies.items()}
        self._scalars = dict(merged.scalars)
        self._pins = tuple(merged.pins)
        self._patterns: Mapping[str, ServerPattern] = merged.patterns
        self._contact = merged.contact
        parsed = [p for layer in self.layers for p in layer.parsed.problems]
        #: Every warning about the policy files: what each file holds, and what merging ignored.
        self.problems: tuple[PolicyProblem, ...] = (*parsed, *merged.problems)

    # --- what is in force -----------------------------------------------------------------

    @property
    def contact(self) -> str | None:
        """Who to ask about the policy (the first layer that names someone)."""
        return self._contact.value if self._contact is not None else None

    def setting(self, key: str) -> Setting | None:
        """The effective value of a scalar key (``"approvals.persist"``), or None if unset."""
        return self._scalars.get(key)

    def settings(self) -> Iterator[Setting]:
        """Every effective value with its source, table by table, then the pins
        (``skillward policy show``)."""
        if self._contact is not None:
            yield self._contact
        for table in TABLES:
            for key in sorted({*self._allows, *self._denies, *self._scalars}):
                if not key.startswith(table + "."):
                    continue
                for allow in self._allows.get(key, ()):
                    shown = [e.value for e in allow.entries]
                    yield Setting(key, shown, allow.source, allow.contact, allow.layer)
                yield from self._denies.get(key, ())
                if key in self._scalars:
                    yield self._scalars[key]
        yield from self._pins

    @property
    def version(self) -> str:
        """A digest of the policy in force (its values, not where they came from),
        recorded with every approval."""
        values = [
            [s.key, s.value.model_dump() if isinstance(s.value, PinEntry) else s.value]
            for s in self.settings()
        ]
        canonical = json.dumps(
            {"lockdown": self.lockdown is not None, "values": values},
            sort_keys=True,
            default=list,
        )
        return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()

    # --- Policy -------------------------------------------------------------------------------

    def check_server(self, spec: ServerSpec) -> None:
        self._check_lockdown(server=spec.label)
        name = server_name(spec.label, spec.identity)

        def matches(pattern: str, deny: bool) -> bool:
            return self._patterns[pattern].matches(name, deny=deny)

        self._check_lists("servers", matches, "this server", server=spec.label, uri=None)

    def check_activation(self, request: ActivationRequest) -> None:
        record = request.record
        label = record.origin.label
        entry = record.entry
        if entry is None or not record.origin.is_mcp:
            return  # local skills are the user's own files
        self._check_lockdown(server=label, uri=entry.uri)
        if entry.is_dynamic:
            self._check_dynamic(label, entry.uri)
            digests = self._denies.get("skills.deny_digests", ())
            if digests:
                what = "its content is dynamic, so its files cannot be checked against a digest"
                raise self._denied(what, digests[0], server=label, uri=entry.uri)
        names = (entry.uri, str(entry.root))

        def matches(pattern: str, deny: bool) -> bool:
            return _skill_matches(pattern, names, fold=deny)

        self._check_lists("skills", matches, "this skill", server=label, uri=entry.uri)
        blocked = {s.value: s for s in self._denies.get("skills.deny_digests", ())}
        if blocked and not entry.is_dynamic:
            for item in sorted(entry.manifest.values(), key=lambda i: i.uri):
                rule = blocked.get(item.digest)
                if rule is not None:
                    raise self._denied(
                        f"its file {item.uri} has a digest the policy blocks",
                        rule,
                        server=label,
                        uri=entry.uri,
                    )

    def why_refused(self, kind: GrantKind) -> Refusal | None:
        """Why :meth:`grant_mode` refuses ``kind`` unasked, and whose rule that is (the
        user's own policy file, the administrator's, the host's code); None when a
        person may be asked."""
        if self.grant_mode(kind) == "prompt":
            return None
        if self.lockdown is not None:
            hint = self.lockdown.hint or "Fix the file or directory named."
            return Refusal(_WHOSE["admin"], self.lockdown.message, hint)
        setting = self._scalars.get(f"grants.{kind}")
        if setting is None:  # a kind this policy does not know
            return Refusal("the policy", f"{kind!r} is no grant the policy knows", "")
        rule = self._rule(setting)
        if setting.value == "prompt":  # headless
            rule += ", and no one can be asked here"
        return Refusal(_WHOSE[setting.layer], rule, self._who_changes(setting))

    def grant_mode(self, kind: GrantKind) -> GrantMode:
        if self.lockdown is not None:
            return "never"
        if kind not in GRANT_KINDS:
            return "never"  # a kind this policy does not know is never granted
        setting = self._scalars.get(f"grants.{kind}")
        if setting is None:
            # Unset is unrestricted: the gates ask as they would with no policy (and,
            # with no one to ask, refuse by themselves).
            return "prompt"
        if setting.value == "prompt" and not self.headless:
            return "prompt"
        return "never"

    def pin_for(self, request: ActivationRequest) -> Pin | None:
        entry = request.record.entry
        if not self._pins or self.lockdown is not None or entry is None or entry.is_dynamic:
            return None  # before content_hash: it is not free, and most policies pin nothing
        if request.identity is None or not request.record.origin.is_mcp:
            return None
        name = server_name(request.record.origin.label, request.identity)
        digest = content_hash(entry)
        for setting in self._pins:
            pin = setting.value
            if pin.skill == entry.uri and pin.content == digest and pin.server.matches(name):
                server = pin.server.text
                return Pin(server, pin.skill, pin.content, pin.grant_tools, setting.source)
        return None

    def limits(self, base: Limits) -> Limits:
        changes: dict[str, int] = {}
        most = self._scalars.get("limits.max_skill_bytes")
        if most is not None:
            assert isinstance(most.value, int)
            changes["max_skill_bytes"] = most.value
            changes["max_resource_bytes"] = min(base.max_resource_bytes, most.value)
        budget = self._scalars.get("limits.cache_budget_mib")
        if budget is not None and isinstance(budget.value, int) and budget.value > 0:
            # A budget only narrows; the skill bound above replaces (admin-guide.md).
            changes["max_cache_bytes"] = min(base.max_cache_bytes, budget.value * _MIB)
        return dataclasses.replace(base, **changes) if changes else base

    def cache_allowed(self) -> bool:
        if self.lockdown is not None:
            return False
        switch = self._scalars.get("limits.cache")
        budget = self._scalars.get("limits.cache_budget_mib")
        return not (
            (switch is not None and switch.value == "off")
            or (budget is not None and budget.value == 0)
        )

    def audit_rules(self) -> AuditRules:
        """What the policy requires of the audit trail (``[audit]``): a tamper-evident
        trail, export, and the collector, each requirement as its rule for messages."""
        tamper = self._scalars.get("audit.require_tamper_evident")
        export = self._scalars.get("audit.require_export")
        endpoint = self._scalars.get("audit.export_endpoint")
        required = endpoint or (export if export is not None and export.value else None)
        return AuditRules(
            tamper_evident=self._rule(tamper) if tamper is not None and tamper.value else None,
            export=self._rule(required) if required is not None else None,
            endpoint=endpoint.value if endpoint is not None else None,
        )

    # --- approvals -----------------------------------------------------------------------------

    def approval_rules(self, store: ApprovalStorage | None = None) -> ApprovalRules:
        """What approvals may be under this policy, for :class:`~skillward.ApprovalBook`
        (``rules=``): the longest scope, the oldest record honoured, and whether ``store``
        may remember anything at all (``keyring.require_recommended``)."""
        version = self.version
        if self.lockdown is not None:
            return ApprovalRules(
                max_scope=Scope.ONCE, scope_reason=self.lockdown.message, version=version
            )
        max_scope, scope_reason = Scope.REMEMBER, ""
        persist = self._scalars.get("approvals.persist")
        if persist is not None and persist.value != Scope.REMEMBER.value:
            max_scope = Scope(persist.value)
            scope_reason = self._rule(persist)
        max_age = None
        days = self._scalars.get("approvals.max_age_days")
        if days is not None:
            assert isinstance(days.value, int)
            max_age = days.value * _DAY
        refused = None
        required = self._scalars.get("keyring.require_recommended")
        if required is not None and required.value is True and store is not None:
            keys = store.keys if isinstance(store, FileApprovalStore) else None
            if isinstance(keys, FileKeyring):
                chosen = f" ({keys.chosen})" if keys.chosen else ""
                other = f"the file key store{chosen}"
            else:
                other = "a key provider the host supplies"
            if not isinstance(keys, OsKeyring):
                refused = (
                    f"the policy remembers approvals only with the OS keyring, not {other}: "
                    + self._rule(required)
                )
        return ApprovalRules(
            max_scope=max_scope,
            scope_reason=scope_reason,
            max_age=max_age,
            remember_refused=refused,
            version=version,
        )

    # --- denials -------------------------------------------------------------------------------

    def _contact_for(self, setting: Setting) -> str | None:
        """Who to ask about ``setting``: its file's contact, or for an administrator's
        rule the first contact the administrator's files name."""
        if setting.contact is not None or setting.layer != "admin":
            return setting.contact
        named = self._contact
        return named.value if named is not None and named.layer == "admin" else None

    def _rule(self, setting: Setting) -> str:
        """The rule as a refusal names it: its value, where it is set, and whose it is."""
        contact = self._contact_for(setting)
        if setting.layer == "user":
            whose = "your own policy file"
        elif setting.layer == "host":
            whose = "the host's own policy"
        else:
            whose = "the administrator's"
            contact = contact or "none named in the policy"
        if contact is not None:
            whose += f"; contact: {contact}"
        return f"{setting.key} = {setting.value!r} in {setting.source} ({whose})"

    def _who_changes(self, setting: Setting) -> str:
        """Who can change ``setting``, as a refusal's hint says it."""
        if setting.layer == "user":
            return (
                f"The rule is in your own policy file, {setting.source.path}: edit it there to "
                "change this. `skillward policy show` shows every rule in force and its file."
            )
        if setting.layer == "host":
            return (
                "The application running skillward sets this rule in its code: only it can "
                "change it."
            )
        contact = self._contact_for(setting)
        ask = f" (contact: {contact})" if contact is not None else ""
        return (
            f"Only the administrator can change this{ask}; `skillward policy show` shows the "
            "policy in force and where each rule comes from."
        )

    def _denied(self, what: str, rule: Setting, *, server: str, uri: str | None) -> PolicyDenied:
        return PolicyDenied(
            f"refused by policy: {what}; rule {self._rule(rule)}",
            server=server,
            uri=uri,
            hint=self._who_changes(rule),
        ).by_rule_of(_WHOSE[rule.layer])

    def _check_lockdown(self, *, server: str, uri: str | None = None) -> None:
        if self.lockdown is not None:
            raise PolicyDenied(
                self.lockdown.message,
                server=server,
                uri=uri,
                hint=self.lockdown.hint
                or "Fix the file or directory named, then run `skillward policy show`.",
            ).by_rule_of(_WHOSE["admin"])

    def _check_dynamic(self, label: str, uri: str) -> None:
        mode = self._scalars.get("skills.dynamic")
        if mode is None:
            return
        if mode.value == "deny":
            raise self._denied("its content is dynamic", mode, server=label, uri=uri)
        if self.headless:
            raise self._denied(
                "its content is dynamic and no one can be asked here", mode, server=label, uri=uri
            )

    def _check_lists(
        self,
        table: str,
        matches: Callable[[str, bool], bool],
        what: str,
        *,
        server: str,
        uri: str | None,
    ) -> None:
        """Deny rules, then allow lists; ``matches(pattern, deny)`` reads a deny rule
        widely (without regard to case, so a case variant does not slip by)."""
        for rule in self._denies.get(f"{table}.deny", ()):
            if matches(rule.value, True):
                raise self._denied(f"{what} matches a deny rule", rule, server=server, uri=uri)
        for allow in self._allows.get(f"{table}.allow", ()):
            if not any(matches(e.value, False) for e in allow.entries):
                shown = [e.value for e in allow.entries]
                rule = Setting(allow.key, shown, allow.source, allow.contact, allow.layer)
                raise self._denied(f"{what} is not in {allow.key}", rule, server=server, uri=uri)


def refusal(policy: Policy, kind: GrantKind) -> Refusal:
    """Why ``policy`` refuses ``kind`` unasked (its :meth:`~Policy.grant_mode` is not
    ``"prompt"``): an :class:`EffectivePolicy` says whose rule it is; a policy of the
    host's own is the host's."""
    if isinstance(policy, EffectivePolicy):
        refused = policy.why_refused(kind)
        if refused is not None:
            return refused
    return Refusal(
        "the host's own policy",
        f"{type(policy).__name__}.grant_mode({kind!r}) is not 'prompt' (the host's own policy)",
        "The application running skillward sets this policy in its code: only it can change it.",
    )
