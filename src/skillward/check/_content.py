"""What a reviewer looks for in a skill's text: credentials, URLs to raw IP addresses or
paste sites, text posing as the host's instructions, relative links to files the skill
does not list, and ``allowed-tools`` that grant a shell or the network unnarrowed.

Pure: text in, :class:`Hit`s out, each with the line it is on. A hit never carries the
text it matched (T55: findings quote no content), only what kind of thing it is.
"""

from __future__ import annotations

import bisect
import ipaddress
import itertools
import math
import re
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass

from skillward.core.errors import InvalidUri
from skillward.core.uris import SkillRoot, resolve_reference
from skillward.core.urls import split_url

__all__ = [
    "MAX_HITS_PER_RULE",
    "PASTE_SITES",
    "Hit",
    "broad_tools",
    "scan_text",
    "unlisted_links",
]

CREDENTIAL = "SW-HYG-006"
URL = "SW-HYG-007"
IMITATION = "SW-HYG-009"
LINK = "SW-HYG-005"
#: Hits of one rule reported per file: the first ones, which are enough to act on.
MAX_HITS_PER_RULE = 10


@dataclass(frozen=True, slots=True)
class Hit:
    rule: str
    #: 1-based, in the text scanned.
    line: int
    message: str


# --- credentials -------------------------------------------------------------------------

#: High-signal credential formats, each as its issuer documents it.
_SECRETS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an AWS access key ID", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    (
        "a GitHub token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82})\b"),
    ),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("a Stripe live key", re.compile(r"\b[rs]k_live_[A-Za-z0-9]{24,}")),
    ("a Google API key", re.compile(r"\bAIza[A-Za-z0-9_\-]{35}(?![A-Za-z0-9_\-])")),
    ("a private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
)
#: ``api_key = "..."`` and the like: a credential's name given a quoted value.
_ASSIGNED = re.compile(
    r"(?i)\b(?:api[_-]?key|secret(?:[_-]?key)?|access[_-]?token|auth[_-]?token|"
    r"client[_-]?secret|password|passwd)[\"']?\s*[:=]\s*[\"']([^\"'\s]{16,200})[\"']"
)
#: Values that say they are not real.
_PLACEHOLDER = re.compile(r"(?i)example|xxxx|your|changeme|placeholder|dummy|\$\{|<|\*\*\*")
#: Bits per character a random value has at least (hex is 4, English words near 3).
_MIN_ENTROPY = 3.5


def _random_looking(value: str) -> bool:
    if _PLACEHOLDER.search(value) or not re.search(r"[0-9]", value):
        return False
    counts = Counter(value)
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    return entropy >= _MIN_ENTROPY


def _secrets(text: str) -> Iterator[tuple[int, str]]:
    for kind, pattern in _SECRETS:
        yield from _first(
            (match.start(), kind)
            for match in pattern.finditer(text)
            if "EXAMPLE" not in match.group(0)  # the issuers' documented examples
        )
    yield from _first(
        (match.start(), "a credential assigned in the text")
        for match in _ASSIGNED.finditer(text)
        if _random_looking(match.group(1))
    )


# --- URLs --------------------------------------------------------------------------------

#: Where pasted text is published anonymously; a skill fetching from one is fetching
#: what anyone could have changed.
PASTE_SITES = frozenset(
    {
        "0x0.st",
        "bpa.st",
        "controlc.com",
        "dpaste.com",
        "dpaste.org",
        "ghostbin.com",
        "hastebin.com",
        "ix.io",
        "justpaste.it",
        "paste.ee",
        "paste.rs",
        "pastebin.com",
        "pastebin.pl",
        "privatebin.net",
        "rentry.co",
        "rentry.org",
        "sprunge.us",
        "termbin.com",
        "transfer.sh",
    }
)
_URL = re.compile(r"(?i)\b(?:https?|ftp|wss?)://[^\s<>\"'`)]+")


def _url_problem(url: str) -> str | None:
    while url.endswith("]") and url.count("]") > url.count("["):
        url = url[:-1]  # the end of a Markdown link's text, not of an IPv6 literal
    parts = split_url(url)
    if parts is None:
        return None
    host = parts.host.lower().rstrip(".")
    literal = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        address = ipaddress.ip_address(literal)
    except ValueError:
        address = None
    if address is not None:
        return None if address.is_loopback else "a URL to a raw IP address"
    for site in PASTE_SITES:
        if host == site or host.endswith("." + site):
            return f"a URL to the paste site {site}"
    return None


def _urls(text: str) -> Iterator[tuple[int, str]]:
    found = ((match.start(), _url_problem(match.group(0))) for match in _URL.finditer(text))
    yield from _first((offset, problem) for offset, problem in found if problem is not None)


# --- the host's instructions -------------------------------------------------------------

_IMITATIONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "a chat-template token",
        re.compile(
            r"<\|(?:im_start|im_end|im_sep|system|user|assistant|endoftext|eot_id|"
            r"start_header_id|end_header_id|begin_of_text)\|>"
        ),
    ),
    ("an instruction-template marker", re.compile(r"\[/?INST\]|<</?SYS>>")),
    (
        "a system or assistant role tag",
        re.compile(r"(?i)</?(?:system|system-reminder|assistant)>"),
    ),
    ("a conversation turn marker", re.compile(r"(?m)^(?:Human|Assistant):[ \t]")),
    (
        "a phrase telling the model to ignore its instructions",
        re.compile(
            r"(?i)\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?"
            r"(?:of\s+)?(?:the\s+|your\s+)?(?:previous|prior|above|earlier|preceding|"
            r"system|original)\s+(?:instructions|prompts?|rules|directions)\b"
        ),
    ),
)


def _imitations(text: str) -> Iterator[tuple[int, str]]:
    for kind, pattern in _IMITATIONS:
        yield from _first((match.start(), kind) for match in pattern.finditer(text))


# --- all of it ---------------------------------------------------------------------------


def _first(found: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """The first hits of one pattern (in the order of the text): the most a file's
    report can use, so a text of a million matches costs no more to report."""
    return itertools.islice(found, MAX_HITS_PER_RULE)


class _Lines:
    """Line numbers of offsets in one text, the line ends found only when first asked."""

    def __init__(self, text: str, first: int = 1) -> None:
        self.text = text
        self.first = first
        self.ends: list[int] | None = None

    def of(self, offset: int) -> int:
        if self.ends is None:
            self.ends = [m.start() for m in re.finditer("\n", self.text)]
        return self.first + bisect.bisect_left(self.ends, offset)


def _hits(rule: str, found: Iterator[tuple[int, str]], lines: _Lines, what: str) -> Iterator[Hit]:
    for offset, kind in sorted(found)[:MAX_HITS_PER_RULE]:
        yield Hit(rule, lines.of(offset), what.format(kind=kind))


def scan_text(text: str) -> Iterator[Hit]:
    """Credentials, raw-IP and paste-site URLs, and the host's instructions imitated."""
    lines = _Lines(text)
    yield from _hits(CREDENTIAL, _secrets(text), lines, "the file holds what looks like {kind}")
    yield from _hits(URL, _urls(text), lines, "the file holds {kind}")
    yield from _hits(IMITATION, _imitations(text), lines, "the file holds {kind}")


# --- links -------------------------------------------------------------------------------

# Link text holds no bracket: each "[" is tried once, so a line of them costs linear time.
_INLINE_LINK = re.compile(r"!?\[[^\[\]\n]*\]\(\s*(<[^>\n]*>|[^\s)]+)")
_DEFINITION = re.compile(r"(?m)^ {0,3}\[[^\]\n]+\]:[ \t]*(<[^>\n]*>|\S+)")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_FENCE = re.compile(r"(?m)^ {0,3}(```|~~~)")
#: What a link may hold as it is written that a URI writes percent-encoded.
_URI_CHARACTERS = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/%]")


def _fenced(text: str) -> list[tuple[int, int]]:
    """The spans of fenced code blocks (links in them are code, not links)."""
    spans: list[tuple[int, int]] = []
    opened: tuple[int, str] | None = None
    for match in _FENCE.finditer(text):
        if opened is None:
            opened = (match.start(), match.group(1))
        elif match.group(1) == opened[1]:
            spans.append((opened[0], match.end()))
            opened = None
    if opened is not None:
        spans.append((opened[0], len(text)))
    return spans


def _encoded(target: str) -> str:
    return "".join(
        ch if _URI_CHARACTERS.match(ch) else "".join(f"%{b:02X}" for b in ch.encode())
        for ch in target
    )


def unlisted_links(
    body: str, first_line: int, root: SkillRoot, listed: Collection[str]
) -> Iterator[Hit]:
    """Relative links in a SKILL.md ``body`` (its first line is ``first_line`` of the
    file) that resolve against ``root`` to no file ``listed`` and no directory holding
    one, or that climb out of the skill."""
    lines = _Lines(body, first_line)
    fenced = _fenced(body)
    starts = [start for start, _ in fenced]
    # Every directory a listed file is in, so that each link is one lookup.
    present = set(listed)
    for uri in listed:
        parts = uri.split("/")
        present.update("/".join(parts[:end]) for end in range(3, len(parts)))
    found: list[tuple[int, str]] = []
    for pattern in (_INLINE_LINK, _DEFINITION):
        problems = 0
        for match in pattern.finditer(body):
            offset = match.start(1)
            block = bisect.bisect_right(starts, offset) - 1
            if block >= 0 and offset < fenced[block][1]:
                continue  # code, not a link
            target = match.group(1).strip("<>").partition("#")[0]
            if not target or _SCHEME.match(target) or target.startswith("//"):
                continue  # an absolute URL, a fragment of this file, or nothing
            problem = _link_problem(_encoded(target.partition("?")[0]), root, present)
            if problem is not None:
                found.append((offset, problem))
                problems += 1
                if problems >= MAX_HITS_PER_RULE:
                    break
    yield from _hits(LINK, iter(found), lines, "{kind}")


def _link_problem(target: str, root: SkillRoot, present: set[str]) -> str | None:
    directory = target.endswith("/")
    try:
        uri = str(resolve_reference(root, target.rstrip("/") or "."))
    except InvalidUri as error:
        if "escapes" in error.message:
            return "a link climbs out of the skill's root"
        return None  # not a reference a host could resolve: nothing to read
    if uri in present:
        return None  # a file of the skill, or a directory holding one
    what = "directory" if directory else "file"
    return f"a link names a {what} the skill's resources do not list: {uri[:300]}"


# --- allowed-tools -----------------------------------------------------------------------

_SHELLS = frozenset(
    {
        "bash",
        "sh",
        "zsh",
        "shell",
        "powershell",
        "pwsh",
        "cmd",
        "terminal",
        "exec",
        "run_shell_command",
        "local_shell",
        "execute_command",
    }
)
_NETWORK = frozenset(
    {
        "webfetch",
        "web_fetch",
        "fetch",
        "websearch",
        "web_search",
        "google_web_search",
        "curl",
        "wget",
    }
)
_NO_PATTERN = frozenset({"", "*", ":*", "*:*", "**"})


def broad_tools(tools: Sequence[str]) -> list[str]:
    """The shell and network tools among ``tools`` (as ``allowed_tools`` reads them)
    granted without a pattern narrowing them, each named as this module knows it
    (``bash``, never the server's own spelling)."""
    broad: list[str] = []
    for tool in tools:
        name, paren, rest = tool.partition("(")
        known = name.strip().lower()
        if known not in _SHELLS and known not in _NETWORK:
            continue
        argument = rest[:-1] if rest.endswith(")") else rest
        if not paren or argument.strip() in _NO_PATTERN:
            kind = "shell" if known in _SHELLS else "network"
            broad.append(f"{known} ({kind})")
    return list(dict.fromkeys(broad))
