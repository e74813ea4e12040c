"""The rules of the skills' content: what hosts neutralise or never grant, what a reviewer
looks for, what is only information, and what a skills directory checked in place holds
that no server would serve."""

from __future__ import annotations

from skillward.check._rule import Rule

__all__ = ["HYGIENE", "INFORMATION", "SOURCES"]

_UNTRUSTED = '"Skill content is untrusted input" (a host\'s duty)'

#: Content hygiene.
HYGIENE: tuple[Rule, ...] = (
    Rule(
        "SW-HYG-001",
        "hidden-characters",
        "warning",
        f"{_UNTRUSTED}; hosts mark invisible characters before the model sees them",
        "Skill text (files and frontmatter) holds no invisible, bidirectional or control "
        "characters other than tab and line ends.",
        "Remove zero-width, bidi-override and control characters from the text.",
        section="Security Implications",
    ),
    Rule(
        "SW-HYG-002",
        "block-marker-imitation",
        "warning",
        f"{_UNTRUSTED}; hosts neutralise text that imitates their context-block markers",
        "Skill text does not imitate a host's block markers (<skillward:...>).",
        "Remove text that looks like a host's markup.",
        section="Security Implications",
    ),
    Rule(
        "SW-HYG-003",
        "allowed-tools-requested",
        "note",
        '"A remote server populating allowed-tools is requesting elevated access on the '
        'host", which hosts grant only when the user approves it: the SEP allows the field',
        "The skill's allowed-tools is a request: a host grants none of it unless a "
        "person approves.",
        "Nothing to change: expect each tool to be asked for, and say in the body what "
        "the skill needs.",
        section="Security Implications",
    ),
    Rule(
        "SW-HYG-004",
        "hooks-declared",
        "warning",
        'hosts "MUST ignore or approval-gate" declarative execution (hooks, frontmatter '
        "scripts) of an MCP skill: its hooks do not run as written",
        "The frontmatter declares no hooks: a host never runs them from an MCP skill.",
        "Drop hooks from skills you serve over MCP.",
        section="Security Implications",
    ),
    Rule(
        "SW-HYG-005",
        "unlisted-link",
        "warning",
        '"A client resolves a relative reference against the skill\'s root", and a host '
        'acting on the skill treats "a read of an unlisted file within the skill as a '
        'verification failure"',
        "Every relative link in the SKILL.md body resolves, within the skill, to a file "
        "its resources list (or a directory holding one).",
        "Ship the linked file with the skill (so resources list it), or fix the link.",
        section="Reading",
    ),
    Rule(
        "SW-HYG-006",
        "secret-in-file",
        "warning",
        f"{_UNTRUSTED}; every host that connects, and the model, reads what a skill "
        "ships, so a credential in it is published",
        "Skill files hold no credential: no AWS access key ID, GitHub, Slack, Stripe or "
        'Google API token, private key, or api_key = "..." with a random-looking value.',
        "Remove the credential from the skill and revoke it; have the skill read "
        "credentials from the environment.",
        section="Security Implications",
    ),
    Rule(
        "SW-HYG-007",
        "raw-ip-or-paste-url",
        "warning",
        f"{_UNTRUSTED}; a URL to a raw IP address or a paste site is where injected "
        "instructions fetch a payload or send data, and reviewers flag it",
        "Skill text links to no raw IP address (loopback aside) and no paste site "
        "(pastebin.com and the like).",
        "Link to a named host you control or document; put pasted content in the skill.",
        section="Security Implications",
    ),
    Rule(
        "SW-HYG-008",
        "broad-allowed-tools",
        "warning",
        'allowed-tools "MUST be ignored for MCP-origin skills unless the user has '
        'explicitly approved that grant": a shell or the network, unnarrowed, is a grant '
        "a person cannot weigh",
        "allowed-tools grants no shell or network tool without a pattern narrowing it "
        "(Bash(git:*), not Bash or Bash(*)).",
        "Narrow each shell or network tool to what the skill needs: Bash(git status:*), "
        "WebFetch(domain:docs.example.com).",
        section="Security Implications",
    ),
    Rule(
        "SW-HYG-009",
        "host-instruction-imitation",
        "warning",
        '"Skills are data, not directives. Hosts MUST NOT treat skill resources as '
        "higher-authority than other context\" (a host's duty): text posing as the "
        "host's instructions is prompt injection",
        "Skill text does not pose as the host's instructions: no chat-template tokens, "
        "system or assistant role tags, or phrases telling the model to ignore its "
        "instructions.",
        "Remove it; write the skill's guidance as plain instructions.",
        section="Security Implications",
    ),
)


#: Information.
INFORMATION: tuple[Rule, ...] = (
    Rule(
        "SW-INFO-001",
        "executable-files",
        "note",
        'hosts "MUST NOT allow MCP-served skill content to cause host-side code execution '
        'without explicit per-skill user approval"',
        "The skill ships files that look executable (under scripts/, or starting with #!).",
        "Nothing to change: expect hosts to ask before running them.",
        section="Security Implications",
    ),
    Rule(
        "SW-INFO-002",
        "nested-skills",
        "note",
        '"Activating a nested skill ... requires fresh, explicit user consent"',
        "A listed skill lies under another listed skill's root.",
        "Nothing to change: a host asks for each nested skill on its own.",
        section="Nested skills",
    ),
)


#: A skills directory checked in place (``skillward check DIR``).
SOURCES: tuple[Rule, ...] = (
    Rule(
        "SW-SRC-001",
        "files-served",
        "warning",
        'each file of a skill is a resource; symlinks and other non-regular files "have '
        'no representation" (§Appendix: Deferred Features), so they are never served',
        "Every file in a skill folder is a regular file that can be read: no symlink, "
        "socket, device or unreadable file, and nothing deeper than 16 levels.",
        "Replace links with the files themselves, or move what is not part of the skill "
        "out of its folder.",
        section="Resource Mapping",
    ),
)
