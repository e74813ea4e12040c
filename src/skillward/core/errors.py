"""The skillward error hierarchy.

Every error skillward raises is a :class:`SkillwardError`. Its direct subclasses
split errors by who is at fault, so a host can decide what to do from the type
alone:

* :class:`OriginError`: a server (or a local skill directory) served something
  invalid or inconsistent. :class:`IntegrityError` is the part of it where fetched
  bytes differ from what the listing promised.
* :class:`TransportError`: the exchange with a server failed, timed out, or the
  server answered with a protocol error.
* :class:`PolicyDenied`: a policy or a gate refused the action.
* :class:`ApprovalError`: the action needs a person's approval and does not have it:
  they declined (:class:`ApprovalDenied`), nobody answered in time
  (:class:`ApprovalTimedOut`), or nobody could be asked.
* :class:`StoreTampered`: skillward's own persistent state failed its checks.
* :class:`UsageError`: the caller asked for something that cannot be done.

Every error names the server label and the skill URI where they are known, and
carries a hint a person can act on (:meth:`SkillwardError.diagnostics`): ``hint`` for a
host's code, and ``command_hint`` as the ``skillward`` command gives it, worded for
its options where ``hint`` names the library's API.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Self

from skillward.core._ignorable import DEFAULT_IGNORABLE

__all__ = [
    "AmbiguousName",
    "AnswerRefused",
    "ApprovalDenied",
    "ApprovalError",
    "ApprovalTimedOut",
    "CapabilityMissing",
    "ConfigError",
    "CrossOriginDenied",
    "DeadlineExceeded",
    "DigestMismatch",
    "ExecutionDenied",
    "FrontmatterError",
    "FrontmatterMismatch",
    "IntegrityError",
    "InvalidApprovalToken",
    "InvalidEntry",
    "InvalidResponse",
    "InvalidUri",
    "ListingRunaway",
    "NoTerminal",
    "OriginError",
    "PolicyDenied",
    "ReactivationRequired",
    "RememberUnavailable",
    "ResponseTooLarge",
    "ServerDisconnected",
    "ServerRejected",
    "SizeMismatch",
    "SkillChanged",
    "SkillNotActive",
    "SkillNotFound",
    "SkillTooLarge",
    "SkillwardError",
    "StaleAnswer",
    "StoreTampered",
    "TransportError",
    "UnknownServer",
    "UnlistedResource",
    "UnverifiableSkill",
    "UsageError",
    "deprecated_name",
    "printable",
]


#: Characters Python calls printable that are drawn as nothing (variation selectors,
#: Hangul fillers, the combining grapheme joiner, tags): escaped like the rest.
_DRAWN_AS_NOTHING = re.compile(
    "[" + "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in DEFAULT_IGNORABLE) + "]"
)


def _shown(ch: str) -> str:
    return ch if ch.isprintable() and not _DRAWN_AS_NOTHING.match(ch) else ascii(ch)[1:-1]


def printable(text: str, *, limit: int = 300) -> str:
    """``text`` bounded in length, with every non-printable or invisible character
    escaped.

    Untrusted strings (URIs, names, server output) pass through this before they
    reach a terminal or a log line, so they cannot carry escape sequences, bidi
    overrides or invisible characters.
    """
    if len(text) > limit:
        text = text[:limit] + "..."
    if text.isprintable() and not _DRAWN_AS_NOTHING.search(text):
        return text
    return "".join(map(_shown, text))


class SkillwardError(Exception):
    """Base class of every error skillward raises.

    ``server`` is the host-assigned label of the origin involved and ``uri`` the
    skill or resource URI, when known. ``str(error)`` is one line naming both.
    ``rule``, when set, is the ID of the SEP-2640 rule the origin broke
    (``SW-ENTRY-003``; ``docs/check.md`` lists them all). ``hint`` says what a person
    can do, in the library's terms; ``command_hint`` says it in the ``skillward``
    command's, and is ``hint`` unless that names the library's API.
    """

    #: Process exit code the command line uses for this kind of error.
    exit_code: ClassVar[int] = 1
    #: What a person can do about it; subclasses refine this.
    default_hint: ClassVar[str] = ""
    #: ``default_hint`` as the ``skillward`` command words it, where they differ.
    default_command_hint: ClassVar[str | None] = None

    def __init__(
        self,
        message: str,
        *,
        server: str | None = None,
        uri: str | None = None,
        hint: str | None = None,
        local: bool = False,
        rule: str | None = None,
        command_hint: str | None = None,
    ) -> None:
        self.message = message
        self.server = server
        self.uri = uri
        self.hint = hint if hint is not None else self.default_hint
        if command_hint is None and hint is None:
            command_hint = self.default_command_hint
        #: The hint as the ``skillward`` command gives it (``hint`` unless given apart).
        self.command_hint = command_hint if command_hint is not None else self.hint
        #: ``server`` is the label of a local skill directory, not of a server.
        self.local = local
        #: The ID of the rule the origin broke, when one applies (``docs/check.md``).
        self.rule = rule
        super().__init__(self._render())

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        # A subclass's own hint is for both audiences unless it words one for the command.
        if "default_hint" in vars(cls) and "default_command_hint" not in vars(cls):
            cls.default_command_hint = None

    def _render(self) -> str:
        parts: list[str] = []
        if self.server is not None:
            parts.append(f"{'local skills' if self.local else 'server'} {self.server!r}")
        if self.uri is not None:
            parts.append(printable(self.uri, limit=300))
        parts.append(self.message)
        # Messages quote untrusted input; never let it drive a terminal.
        return printable(": ".join(parts), limit=2000)

    def with_context(
        self, *, server: str | None = None, uri: str | None = None, local: bool | None = None
    ) -> SkillwardError:
        """Fill in the server label and URI where they are still unknown; returns ``self``.

        ``local=True`` says the label is a local skill directory's, not a server's.
        """
        if self.server is None and server is not None:
            self.server = server
        if self.uri is None and uri is not None:
            self.uri = uri
        if local is not None:
            self.local = local
        self.args = (self._render(),)
        return self

    def with_rule(self, rule: str | None) -> Self:
        """Name the rule broken, unless one is named already; returns ``self``."""
        if self.rule is None:
            self.rule = rule
        return self

    def diagnostics(self) -> str:
        """A short, human-readable explanation with the hint, for terminals and logs."""
        text = str(self)
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


# --- the origin served something wrong ---------------------------------------------


class OriginError(SkillwardError):
    """The origin served something invalid or inconsistent. Do not use it."""

    exit_code = 4
    default_hint = (
        "The server's listing or content is not what SEP-2640 requires; "
        "report it to the server's maintainers. Nothing from it was used."
    )


class InvalidEntry(OriginError):
    """A skill entry breaks an invariant of SEP-2640 or of the Agent Skills format."""


class SkillTooLarge(OriginError):
    """A skill's entry exceeds the configured per-skill limits. Nothing was fetched."""

    default_hint = (
        "The skill is larger than this host accepts (Limits.max_skill_bytes and "
        "max_skill_files, narrowed by the policy's limits). Nothing was fetched."
    )
    default_command_hint = (
        "The skill is larger than skillward accepts here (its limits, narrowed by the "
        "policy's limits.max_skill_bytes: `skillward policy show`). Nothing was fetched."
    )


class FrontmatterError(OriginError, ValueError):
    """A SKILL.md frontmatter block could not be parsed safely."""


class InvalidResponse(OriginError):
    """A server result is malformed or breaks the protocol."""

    exit_code = 6


class CapabilityMissing(InvalidResponse):
    """The server did not declare what the call needs."""

    default_hint = (
        "The server must declare the io.modelcontextprotocol/skills extension and the "
        "resources capability (and directoryRead for directory reads)."
    )


class ListingRunaway(InvalidResponse):
    """A paginated listing did not end within the configured bounds."""

    default_hint = (
        "The server's listing repeats a cursor or is larger than the configured bounds; "
        "raise the limits only if you trust the server."
    )
    default_command_hint = (
        "The server's listing repeats a cursor or is larger than skillward accepts; "
        "report it to the server's maintainers."
    )


class ResponseTooLarge(InvalidResponse):
    """A response exceeded a byte cap."""


class IntegrityError(OriginError):
    """Fetched content is not what the listing promised. It was not used."""

    default_hint = (
        "The content differs from the server's listing: it was tampered with, corrupted, "
        "or the skill changed. Refresh the skill and review it again."
    )


class SizeMismatch(IntegrityError):
    """The byte length of a read differs from the entry's ``size``."""


class DigestMismatch(IntegrityError):
    """The SHA-256 digest of a read differs from the entry's ``digest``."""


class FrontmatterMismatch(IntegrityError):
    """A fetched SKILL.md's frontmatter differs from the entry's ``frontmatter``."""

    def __init__(
        self,
        message: str,
        *,
        fields: Sequence[str] = (),
        server: str | None = None,
        uri: str | None = None,
        rule: str | None = None,
    ) -> None:
        self.fields = tuple(fields)
        super().__init__(message, server=server, uri=uri, rule=rule)


class SkillChanged(IntegrityError):
    """The skill changed since it was activated; it needs to be reviewed again."""

    default_hint = (
        "The server now serves different content for this skill. Load it again to review "
        "and approve the new version."
    )


# --- the exchange failed -----------------------------------------------------------


class TransportError(SkillwardError):
    """The exchange with a server failed: unreachable, timed out, or an error answer."""

    exit_code = 6
    default_hint = "Check that the server is running and reachable, then retry."


class DeadlineExceeded(TransportError):
    """An operation did not finish within its overall deadline."""

    default_hint = (
        "The server is stalling or too slow; retry, or raise the deadline "
        "(Limits.operation_timeout)."
    )
    default_command_hint = (
        "The server is stalling or too slow; retry, or raise the deadline with --timeout SECONDS."
    )


class ServerDisconnected(TransportError):
    """The connection to the server ended; nothing more is read from it until it reconnects."""

    default_hint = (
        "Check that the server is running and reachable, then reconnect it "
        "(SkillHost.reconnect). Other servers are not affected."
    )
    default_command_hint = (
        "Check that the server is running and reachable, then run the command again "
        "(a gateway connects it again by itself). Other servers are not affected."
    )


class ServerRejected(TransportError):
    """The server answered with a JSON-RPC error."""

    def __init__(
        self,
        message: str,
        *,
        code: int,
        server: str | None = None,
        uri: str | None = None,
    ) -> None:
        self.code = code
        super().__init__(f"{message} (JSON-RPC error {code})", server=server, uri=uri)


# --- policy ------------------------------------------------------------------------


class PolicyDenied(SkillwardError):
    """A policy or a gate refused the action."""

    exit_code = 5
    default_hint = "The host's policy does not allow this; ask the administrator."

    #: Whose rule refused it, when a policy's (``"your own policy file"``, ``"the
    #: administrator's policy"``, ``"the host's own policy"``); None for a gate.
    whose: str | None = None

    def by_rule_of(self, whose: str) -> Self:
        """Say whose rule refused it (:attr:`whose`); returns ``self``."""
        self.whose = whose
        return self


class UnverifiableSkill(PolicyDenied):
    """A skill with ``"resources": "dynamic"`` was refused by configuration."""

    default_hint = (
        "The server marks this skill as dynamic, so its content cannot be verified. "
        "Allow dynamic skills (HostConfig.unsafe_allow_dynamic) only if you trust the server."
    )
    default_command_hint = (
        "The server marks this skill as dynamic, so its content cannot be verified; "
        "the skillward command does not load dynamic skills."
    )


class CrossOriginDenied(PolicyDenied):
    """A read against another server was refused."""


class ExecutionDenied(PolicyDenied):
    """A code-execution tool call while acting on an MCP skill was refused."""


# --- approvals ---------------------------------------------------------------------


class ApprovalError(SkillwardError):
    """The action needs a person's approval, and does not have it (nothing happened).

    Not pydantic-ai's ``ApprovalRequired``, which a tool raises to ask for approval:
    this says the approval was not given. ``ApprovalRequired``, its name until now, is a
    deprecated alias for one release.
    """

    exit_code = 3
    default_hint = "Review the skill and approve it through the host's approver."
    default_command_hint = (
        "Review the skill and approve it: `skillward approve REF`, or load it once with "
        "`skillward load REF --approve-once`."
    )


class ApprovalDenied(ApprovalError):
    """The approval was declined: by the person asked, or by an approver that denies
    (the default, ``DenyAll``)."""

    default_hint = "The approval was declined. Nothing was loaded."


class ApprovalTimedOut(ApprovalError):
    """Nobody answered the approval question in time: not a refusal (the person may not
    have seen it), and nothing was approved."""

    default_hint = (
        "No answer came in time, so nothing was loaded; ask again when the person can answer."
    )
    default_command_hint = (
        "No answer came in time, so nothing was loaded; approve it first with "
        "`skillward approve REF`, then try again."
    )


class AnswerRefused(ApprovalError):
    """An answer to a question put to a person that approves nothing: no such question
    waits (it was answered already, withdrawn, or it expired), or the answer is not one
    it offered."""

    default_hint = (
        "Nothing was approved. Answer a question that waits (ParkedApprovals.pending), "
        "once, with one of the choices it offers."
    )
    default_command_hint = (
        "Nothing was approved. `skillward approvals pending` lists the questions waiting."
    )


class StaleAnswer(AnswerRefused):
    """An answer given for other content than the content waiting: the skill changed
    after the person was shown it, so the answer approves nothing."""

    default_hint = (
        "The skill changed after it was shown: show the person the question as it is now "
        "and take their answer to that."
    )
    default_command_hint = (
        "The skill changed after it was shown: run the command again to review it as it is now."
    )


class InvalidApprovalToken(AnswerRefused):
    """A signed approval token that is malformed, not signed with the key, expired, used
    before, or issued for another session or skill: it approves nothing."""

    default_hint = "Ask the person again; an approval token is accepted once, before it expires."


class ReactivationRequired(ApprovalError):
    """An active skill's content failed verification; nothing more is read under it.

    The skill stays in the acting window (its gates still apply) until the host
    deactivates it; loading it again asks for approval again.
    """

    default_hint = (
        "The server served content that did not match the skill it was approved as. "
        "Load the skill again to review and approve what it serves now."
    )


class NoTerminal(ApprovalError):
    """An approval was needed and there is no terminal to ask a person at."""

    default_hint = (
        "Give the host an approver that reaches the person where they are (a Prompter of "
        "your own in an ApprovalBook), or ApproveOnce with the skills they chose."
    )
    default_command_hint = (
        "Run the command in a terminal, approve the skill first with `skillward approve REF`, "
        "or load it once with `skillward load REF --approve-once`."
    )


class RememberUnavailable(ApprovalError):
    """An approval cannot be remembered here (no usable key store, or the store is busy)."""

    default_hint = (
        "Remembered approvals need an unlocked OS keyring (Secret Service, macOS Keychain or "
        "Windows Credential Manager) or, on a machine without one, the file key store: "
        'approvals.key_store = "file" in the user\'s config.toml (FileApprovalStore reads '
        "it). Approve for this session meanwhile."
    )
    default_command_hint = (
        "Remembered approvals need an unlocked OS keyring (Secret Service, macOS Keychain or "
        "Windows Credential Manager) or, on a machine without one, the file key store: "
        'approvals.key_store = "file" in your config.toml. `skillward doctor` says which key '
        "store is in use, what works here, and the fix. Approve for this session meanwhile."
    )


# --- local state -------------------------------------------------------------------


class StoreTampered(SkillwardError):
    """skillward's persistent state failed its integrity checks."""

    exit_code = 4
    default_hint = (
        "Local skillward state was modified outside skillward. Stored approvals are not "
        "trusted until it is reset."
    )


# --- the caller ---------------------------------------------------------------------


class UsageError(SkillwardError):
    """The caller asked for something that cannot be done."""

    exit_code = 2


class InvalidUri(UsageError, ValueError):
    """A string is not an acceptable resource URI or reference."""


class ConfigError(UsageError, ValueError):
    """The configuration is invalid."""


class UnknownServer(UsageError):
    """No server has this label."""


class SkillNotFound(UsageError):
    """No origin serves a skill by this reference."""


class UnlistedResource(UsageError):
    """A file that the skill's entry does not list. Nothing was read.

    While the host acts on a skill, reads resolve only to the URIs its held entry
    lists; anything else is refused before any request is sent.
    """

    default_hint = "Use one of the files the skill's entry lists."
    default_command_hint = "Use one of the files the skill lists (skillward show REF lists them)."


class SkillNotActive(UsageError):
    """A file of a skill that is not loaded; its files are read only while it is active."""

    default_hint = "Load the skill first (the read_skill tool, or SkillHost.activate)."
    default_command_hint = "Read a skill's files with `skillward read REF PATH`."


class AmbiguousName(UsageError):
    """A bare skill name matches skills from several places."""

    def __init__(self, message: str, *, candidates: Sequence[str]) -> None:
        self.candidates = tuple(candidates)
        super().__init__(
            message,
            hint="Use one of the qualified names: " + ", ".join(self.candidates),
        )


#: Old names, kept for one release: each warns when used.
_DEPRECATED = {"ApprovalRequired": "ApprovalError"}


def deprecated_name(module: str, name: str) -> object:
    """The class an old public ``name`` stands for, with a DeprecationWarning; raise
    AttributeError for any other name (a module's ``__getattr__``)."""
    new = _DEPRECATED.get(name)
    if new is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(
        f"{module}.{name} is deprecated and will be removed in the next release: use {new} "
        "(the same class)",
        DeprecationWarning,
        stacklevel=3,
    )
    return globals()[new]


if not TYPE_CHECKING:
    # Hidden from type checkers: an old name is an error for them, and a misspelt one too.
    def __getattr__(name: str) -> object:
        return deprecated_name(__name__, name)
