"""The rules of the skills' content: what hosts neutralise or never grant, and what is
only information."""

from __future__ import annotations

from skillward.check._rule import SEP, Rule

__all__ = ["HYGIENE", "INFORMATION"]


#: Content hygiene.
HYGIENE: tuple[Rule, ...] = (
    Rule(
        "SW-HYG-001",
        "hidden-characters",
        "warning",
        f"{SEP} §Security Implications (skill content is untrusted input): hosts mark "
        "invisible characters before the model sees them",
        "Skill text (files and frontmatter) holds no invisible, bidirectional or control "
        "characters other than tab and line ends.",
        "Remove zero-width, bidi-override and control characters from the text.",
    ),
    Rule(
        "SW-HYG-002",
        "block-marker-imitation",
        "warning",
        "hosts neutralise text that imitates their context-block markers",
        "Skill text does not imitate a host's block markers (<skillward:...>).",
        "Remove text that looks like a host's markup.",
    ),
    Rule(
        "SW-HYG-003",
        "allowed-tools-requested",
        "warning",
        f"{SEP} §Security Implications: allowed-tools MUST be ignored for MCP skills "
        "unless the user approves that grant",
        "The skill does not rely on allowed-tools: a host grants none of it unless a "
        "person approves.",
        "Expect each tool to be asked for; say in the body what the skill needs.",
    ),
    Rule(
        "SW-HYG-004",
        "hooks-declared",
        "warning",
        f"{SEP} §Security Implications: hosts MUST ignore or approval-gate declarative "
        "execution (hooks, frontmatter scripts)",
        "The frontmatter declares no hooks: a host never runs them from an MCP skill.",
        "Drop hooks from skills you serve over MCP.",
    ),
)


#: Information.
INFORMATION: tuple[Rule, ...] = (
    Rule(
        "SW-INFO-001",
        "executable-files",
        "note",
        f"{SEP} §Security Implications: no implicit local execution; running a bundled "
        "script takes the person's approval",
        "The skill ships files that look executable (under scripts/, or starting with #!).",
        "Nothing to change: expect hosts to ask before running them.",
    ),
    Rule(
        "SW-INFO-002",
        "nested-skills",
        "note",
        f"{SEP} §Nested skills: activating a nested skill takes fresh consent",
        "A listed skill lies under another listed skill's root.",
        "Nothing to change: a host asks for each nested skill on its own.",
    ),
)
