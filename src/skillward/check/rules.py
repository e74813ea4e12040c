"""The rules ``skillward check`` reports: IDs, severities, sources and fixes.

A rule's ID (``SW-ENTRY-003``) is stable once published: a retired rule keeps its number
and new rules take the next one in their area. ``docs/check.md`` lists this catalog (a
test keeps the two equal), and every rule has a test showing a server that breaks it
being reported (``tests/meta/test_check_rules.py``).

Severity: ``error`` where SEP-2640 (or the Agent Skills format) says MUST, or a host
refuses what breaks it; ``warning`` for SHOULD and hygiene; ``note`` for MAY and
information.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["RULES", "Rule", "Severity", "rule"]

Severity = Literal["error", "warning", "note"]

_SEP = "SEP-2640"
_AS = "Agent Skills"


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: what a server must do, where that comes from, and how to fix it."""

    id: str
    slug: str
    severity: Severity
    #: Where the rule comes from: the SEP section (with its MUST or SHOULD), the Agent
    #: Skills specification, or the hosts that refuse what breaks it.
    source: str
    #: What a conforming server does.
    summary: str
    #: What to change when it is broken.
    fix: str
    #: The official conformance suite's check IDs for the same rule (``sep-2640-...``).
    conformance: tuple[str, ...] = ()
    #: The MCP Inspector's ``skills/list --verify`` issue codes for the same rule.
    inspector: tuple[str, ...] = ()


RULES: tuple[Rule, ...] = (
    # --- capability --------------------------------------------------------------------
    Rule(
        "SW-CAP-001",
        "extension-declared",
        "error",
        f"{_SEP} §Capability Declaration",
        "The server declares the io.modelcontextprotocol/skills extension in its "
        "capabilities (nothing else is checked without it).",
        'Declare capabilities.extensions["io.modelcontextprotocol/skills"] = {}.',
        inspector=("skills_unsupported",),
    ),
    Rule(
        "SW-CAP-002",
        "settings-inline",
        "error",
        f"{_SEP} §Capability Declaration; SEP-2133 (no settings envelope)",
        "Extension settings sit directly under the identifier: no config, specVersion, "
        "stability or id envelope.",
        'Write {"directoryRead": true}, not {"config": {"directoryRead": true}}.',
        conformance=("sep-2640-capability-declaration-inline",),
    ),
    Rule(
        "SW-CAP-003",
        "directory-read-boolean",
        "error",
        f"{_SEP} §Capability Declaration (directoryRead is a boolean); hosts refuse it",
        "directoryRead, when present, is a JSON boolean.",
        'Write "directoryRead": true or false (not a string or null).',
    ),
    Rule(
        "SW-CAP-004",
        "requires-resources",
        "error",
        f"{_SEP} (stable text): a server declaring the extension MUST declare resources",
        "A server that declares the extension also declares the resources capability.",
        "Declare capabilities.resources (serve resources/read for the skill files).",
        conformance=("sep-2640-capability-requires-resources",),
    ),
    Rule(
        "SW-CAP-005",
        "commits-to-methods",
        "error",
        f"{_SEP} §Capability Declaration: declaring the extension commits to skills/list "
        "and skills/get (MUST)",
        "skills/list and skills/get are implemented: neither answers -32601 (method not found).",
        "Register handlers for skills/list and skills/get.",
        conformance=("sep-2640-capability-commits-to-methods", "sep-2640-skills-get-implemented"),
    ),
    Rule(
        "SW-CAP-006",
        "legacy-era-declared",
        "warning",
        "interoperability: hosts on protocol 2025-11-25 (initialize) learn of the "
        "extension only from the initialize result",
        "On the 2025-11-25 initialize handshake the extension is declared too, and "
        "skills/list answers.",
        "Put capabilities.extensions back into the legacy initialize result (the mcp "
        "Python SDK strips it) and serve the skills methods in both eras.",
        inspector=("skills_unsupported",),
    ),
    # --- wire --------------------------------------------------------------------------
    Rule(
        "SW-WIRE-001",
        "within-host-caps",
        "error",
        "hosts refuse it (skillward's Limits: 24 MiB and 262,144 JSON values a message; "
        "2 MiB a skills/get result)",
        "Every message fits the host's caps.",
        "Keep each result small: page skills/list, and keep files within their listed size.",
    ),
    # --- skills/list -------------------------------------------------------------------
    Rule(
        "SW-LIST-001",
        "list-result-shape",
        "error",
        f"{_SEP} §Enumeration via skills/list (MUST implement; skills is required)",
        "skills/list answers with an object whose skills is an array (it may be empty).",
        'Answer {"skills": [...]}.',
        conformance=("sep-2640-skills-list-implemented",),
    ),
    Rule(
        "SW-LIST-002",
        "pagination-ends",
        "error",
        f"{_SEP} §Enumeration via skills/list (pagination mirrors the base protocol); "
        "hosts refuse a runaway listing",
        "Following nextCursor ends: no cursor repeats, and the walk ends within the "
        "host's page limit (1000 pages).",
        "Return nextCursor only when another page follows, and never the same one twice.",
        conformance=("sep-2640-skills-list-pagination",),
    ),
    Rule(
        "SW-LIST-003",
        "next-cursor-shape",
        "error",
        "base protocol PaginatedResult; hosts refuse other cursors",
        "nextCursor, when present, is a string of at most 4096 characters.",
        "Send an opaque string cursor, or leave nextCursor out on the last page.",
    ),
    Rule(
        "SW-LIST-004",
        "page-count-portable",
        "warning",
        "portability: the conformance suite follows 50 pages, the Inspector 64",
        "The whole listing fits in at most 50 pages.",
        "Send larger pages.",
        conformance=("sep-2640-skills-list-pagination",),
    ),
    Rule(
        "SW-LIST-005",
        "entry-uri-unique",
        "error",
        f"{_SEP} §Enumeration via skills/list (an entry is atomic); the TypeScript "
        "SkillsClient refuses it",
        "No skill URI is listed twice, on one page or across pages.",
        "List each skill once.",
        conformance=("sep-2640-skills-list-entry-atomic",),
    ),
    Rule(
        "SW-LIST-006",
        "list-cache-attributes",
        "error",
        f"{_SEP} §Enumeration via skills/list: on 2026-07-28 the result carries ttlMs "
        "and cacheScope (SEP-2549)",
        "On protocol 2026-07-28, every page carries ttlMs (an integer >= 0) and "
        'cacheScope ("public" or "private").',
        'Add "ttlMs" and "cacheScope" to each skills/list result on 2026-07-28.',
        conformance=("sep-2640-skills-list-cache-attributes",),
    ),
    Rule(
        "SW-LIST-007",
        "names-unique",
        "warning",
        f"{_SEP} §Names: within a listing, names SHOULD be unique",
        "No two listed skills share a name.",
        "Rename one of the skills (its final path segment and frontmatter name).",
        conformance=("sep-2640-names-should-be-unique",),
        inspector=("duplicate-name",),
    ),
    Rule(
        "SW-LIST-008",
        "look-alike-paths",
        "warning",
        f"{_SEP} §Security Implications: name collisions are an impersonation surface",
        "No two skill paths differ only in letter case, Unicode form or percent-encoding.",
        "Rename one of the skills so that the two do not look alike.",
    ),
    Rule(
        "SW-LIST-009",
        "listing-within-bounds",
        "error",
        "hosts refuse it (skillward's Limits: 2 MiB a page, 12 MiB, 20,000 entries and "
        "65,536 files a listing)",
        "Each page, and the whole listing, fits the host's bounds.",
        "Page the listing in smaller pages; leave very large catalogs partial (a skill "
        "absent from the listing is still reachable with skills/get).",
    ),
    Rule(
        "SW-LIST-010",
        "stable-order",
        "warning",
        "base protocol pagination: a host walking the pages again must see the same listing",
        "Two walks of the listing give the same skills in the same order.",
        "Order the listing by something stable (the URI), and make cursors point into it.",
    ),
    Rule(
        "SW-LIST-011",
        "invalid-cursor",
        "warning",
        "base protocol pagination: an invalid cursor SHOULD get -32602",
        "skills/list with a cursor the server never issued answers -32602 (Invalid "
        "params), not a page.",
        "Validate cursors; answer an unknown one with error -32602.",
    ),
    # --- one entry ---------------------------------------------------------------------
    Rule(
        "SW-ENTRY-001",
        "entry-uri",
        "error",
        f"{_SEP} §Enumeration via skills/list (skills[].uri is required)",
        "Each entry is an object with a string uri.",
        "Give every entry the URI of its SKILL.md.",
        conformance=("sep-2640-entry-uri-required",),
    ),
    Rule(
        "SW-ENTRY-002",
        "entry-frontmatter",
        "error",
        f"{_SEP} §Frontmatter (required; name and description always present)",
        "Each entry has a frontmatter object with a string name and a string description.",
        "Copy the SKILL.md frontmatter into the entry as a JSON object.",
        conformance=("sep-2640-entry-frontmatter-required",),
        inspector=("missing-name", "missing-description"),
    ),
    Rule(
        "SW-ENTRY-003",
        "entry-resources",
        "error",
        f"{_SEP} §Resources: an entry with no resources, or any value other than an "
        'array or "dynamic", is invalid (MUST NOT load)',
        'Each entry has resources: an array of objects, or exactly "dynamic".',
        "List the skill's files as {uri, digest, size} objects.",
        conformance=("sep-2640-entry-resources-required",),
    ),
    Rule(
        "SW-ENTRY-004",
        "dynamic-resources",
        "warning",
        f'{_SEP} §Resources: hosts MAY decline "dynamic" skills, and server authors '
        "SHOULD expect that some will",
        'The skill lists its files rather than "resources": "dynamic".',
        "Publish digests and sizes when the content is stable; skillward refuses "
        "dynamic skills unless configured otherwise.",
        inspector=("dynamic-resources",),
    ),
    Rule(
        "SW-ENTRY-005",
        "entry-known-fields",
        "warning",
        "portability: FastMCP's client refuses a whole page for one unknown field",
        "Entries carry only uri, frontmatter, resources and _meta; items only uri, "
        "digest, size and _meta.",
        "Move extra data under _meta, with a reverse-domain prefix.",
    ),
    # --- URIs --------------------------------------------------------------------------
    Rule(
        "SW-URI-001",
        "skill-md-uri",
        "error",
        f"{_SEP} §Resource Mapping (SKILL.md explicit in the URI); §Retrieval via skills/get",
        "The entry uri is <scheme>://<skill-path>/SKILL.md, with a skill path of one "
        "segment or more.",
        "Use the URI of the skill's SKILL.md, ending in /SKILL.md.",
        inspector=("malformed-uri",),
    ),
    Rule(
        "SW-URI-002",
        "final-segment-equals-name",
        "error",
        f"{_SEP} §Resource Mapping: the final skill-path segment MUST equal the name",
        "The final skill-path segment equals frontmatter.name (the name matches its directory).",
        "Rename the skill's directory, or its frontmatter name, so that they agree.",
        conformance=(
            "sep-2640-entry-uri-matches-frontmatter-name",
            "sep-2640-final-segment-equals-name",
        ),
        inspector=("name-path-mismatch",),
    ),
    Rule(
        "SW-URI-003",
        "authority-reg-name",
        "error",
        f"{_SEP} §Resource Mapping (the first segment SHOULD be a reg-name); skillward "
        "refuses other authorities",
        "The first skill-path segment is an RFC 3986 reg-name: no userinfo, port, IP "
        "literal or other character.",
        "Use letters, digits and -._~ in the first segment (percent-encode the rest).",
        conformance=("sep-2640-authority-reg-name",),
    ),
    Rule(
        "SW-URI-004",
        "canonical-uri",
        "error",
        "hosts refuse it: skillward takes the exact string as identity, and accepts only "
        "canonical RFC 3986 URIs",
        "Skill and file URIs are canonical: ASCII, a lowercase scheme, uppercase "
        "percent-encodings of reserved characters only, no empty, . or .. segment, no "
        "trailing slash, query or fragment, at most 2048 characters.",
        "Percent-encode non-ASCII characters as UTF-8 with uppercase hex, and write "
        "each path once, canonically.",
    ),
    Rule(
        "SW-URI-005",
        "no-file-scheme",
        "error",
        "hosts refuse it: server strings never become paths",
        "No skill or file URI uses the file: scheme.",
        "Serve the files under skill:// (or another scheme of your own).",
    ),
    Rule(
        "SW-URI-006",
        "skill-scheme",
        "warning",
        f"{_SEP} §Resource Mapping: servers SHOULD use the skill:// scheme",
        "Skills are served under skill://.",
        "Use skill:// unless your domain has a scheme of its own.",
        conformance=("sep-2640-skill-uri-scheme",),
    ),
    # --- the manifest ------------------------------------------------------------------
    Rule(
        "SW-RES-001",
        "manifest-includes-self",
        "error",
        f"{_SEP} §Resources: the array includes an entry matching the skill's uri (MUST)",
        "The resources array lists the SKILL.md itself, at the entry's exact uri.",
        "Add the SKILL.md, with its digest and size, to resources.",
        conformance=("sep-2640-resources-complete",),
        inspector=("manifest-missing-self",),
    ),
    Rule(
        "SW-RES-002",
        "manifest-no-duplicates",
        "error",
        f"{_SEP} §Resources: every file, each exactly once (MUST)",
        "No file URI appears twice in resources.",
        "List each file once.",
        conformance=("sep-2640-resources-complete",),
        inspector=("duplicate-resource",),
    ),
    Rule(
        "SW-RES-003",
        "manifest-within-skill",
        "error",
        f"{_SEP} §Resources: each uri MUST be the SKILL.md or a file within the skill",
        "Every file URI is the SKILL.md or lies under <skill root>/, in the same scheme.",
        "List only the skill's own files.",
        conformance=("sep-2640-resources-uri-within-skill",),
        inspector=("resource-outside-skill-root",),
    ),
    Rule(
        "SW-RES-004",
        "digest-format",
        "error",
        f"{_SEP} §Integrity and verification: sha256: and 64 lowercase hex characters",
        "Every digest is sha256: followed by 64 lowercase hexadecimal characters.",
        'Write "sha256:" + hashlib.sha256(data).hexdigest() of the raw bytes.',
        conformance=("sep-2640-resources-digest-format",),
        inspector=("missing-digest", "malformed-digest"),
    ),
    Rule(
        "SW-RES-005",
        "size-integer",
        "error",
        f"{_SEP} §Resources: each entry MUST carry size, in bytes",
        "Every size is a JSON integer of 0 or more (5, not 5.0 or true).",
        "Write the byte length of the raw content as an integer.",
        conformance=("sep-2640-resources-size-required",),
        inspector=("missing-size", "malformed-size"),
    ),
    Rule(
        "SW-RES-006",
        "manifest-complete",
        "error",
        f"{_SEP} §Resources: when present, resources MUST be complete",
        "Every file the server serves under a skill's root (in resources/list or a "
        "directory read) is listed in that skill's resources.",
        "List every file of the skill, or stop serving the ones you do not list.",
    ),
    Rule(
        "SW-RES-007",
        "nested-in-enclosing",
        "error",
        f"{_SEP} §Resources: completeness extends to nested skills",
        "A skill nested under another's root has each of its files in the enclosing "
        "skill's resources too, with the same digest and size.",
        "List the nested skill's files in the enclosing skill's resources as well.",
    ),
    # --- limits ------------------------------------------------------------------------
    Rule(
        "SW-LIM-001",
        "files-per-skill",
        "error",
        f"{_SEP} §Limits: servers SHOULD NOT exceed 512 entries; hosts refuse larger skills",
        "A skill lists at most 512 files, SKILL.md included.",
        "Split the skill, or drop files it does not need.",
        conformance=("sep-2640-limit-resources-per-skill",),
        inspector=("resource-limit-exceeded",),
    ),
    Rule(
        "SW-LIM-002",
        "bytes-per-skill",
        "error",
        f"{_SEP} §Limits: servers SHOULD NOT exceed 16 MiB; hosts refuse larger skills",
        "The sizes of a skill's files add up to at most 16 MiB (16,777,216 bytes).",
        "Split the skill, or move large data out of it.",
        conformance=("sep-2640-limit-total-size",),
        inspector=("size-limit-exceeded",),
    ),
    Rule(
        "SW-LIM-003",
        "frontmatter-bounds",
        "error",
        "hosts refuse it (skillward's Limits: 64 KiB, 16 levels and 4096 values of frontmatter)",
        "The frontmatter is at most 64 KiB as JSON, nests at most 16 deep and holds at "
        "most 4096 values; in SKILL.md, the closing --- starts within 64 KiB.",
        "Keep frontmatter small; move long text into the body or a file.",
        inspector=("frontmatter-unparsable",),
    ),
    # --- frontmatter and the Agent Skills format ---------------------------------------
    Rule(
        "SW-FM-001",
        "name-format",
        "error",
        f"{_AS}: name is 1-64 characters of a-z, 0-9 and single hyphens; {_SEP} §Resource "
        "Mapping (MUST)",
        "The name is 1-64 characters of a-z, 0-9 and single hyphens, not starting or "
        "ending with a hyphen.",
        "Rename the skill (and its directory) in lowercase-with-hyphens.",
        conformance=("sep-2640-name-naming-rules",),
        inspector=("malformed-name",),
    ),
    Rule(
        "SW-FM-002",
        "description-length",
        "error",
        f"{_AS}: description is 1-1024 characters",
        "The description is 1 to 1024 characters.",
        "Shorten the description (details belong in the body).",
        inspector=("malformed-description", "missing-description"),
    ),
    Rule(
        "SW-FM-003",
        "description-not-blank",
        "error",
        f"{_AS}: description is non-empty; FastMCP's client and the Inspector refuse a blank one",
        "The description is not only whitespace.",
        "Say what the skill does and when to use it.",
        inspector=("missing-description",),
    ),
    Rule(
        "SW-FM-004",
        "compatibility-format",
        "error",
        f"{_AS}: compatibility is 1-500 characters; the TypeScript SkillsClient refuses others",
        "compatibility, when present, is a string of 1-500 characters.",
        "Write compatibility as a short string.",
    ),
    Rule(
        "SW-FM-005",
        "metadata-string-map",
        "error",
        f"{_AS}: metadata maps strings to strings; the TypeScript SkillsClient refuses others",
        "metadata, when present, maps string keys to string values.",
        'Quote metadata values ("2.0", not 2.0).',
    ),
    Rule(
        "SW-FM-006",
        "string-fields",
        "warning",
        f"{_AS}: license and allowed-tools are strings",
        "license and allowed-tools, when present, are strings (allowed-tools space-separated).",
        "Write allowed-tools as one space-separated string.",
    ),
    Rule(
        "SW-FM-007",
        "metadata-reserved-prefix",
        "warning",
        f"{_SEP} §Frontmatter: metadata keys prefixed io.modelcontextprotocol/ are "
        "reserved, and none is defined",
        "No metadata key starts with io.modelcontextprotocol/.",
        "Use a reverse-domain prefix of your own.",
        conformance=("sep-2640-metadata-reserved-prefix",),
    ),
    Rule(
        "SW-FM-008",
        "no-proto-key",
        "error",
        "the TypeScript SkillsClient refuses it",
        "No frontmatter key, at any depth, is __proto__.",
        "Rename the key.",
    ),
    Rule(
        "SW-FM-009",
        "skillmd-frontmatter",
        "error",
        f"{_SEP} §Skill Format: SKILL.md MUST begin with YAML frontmatter",
        "The served SKILL.md starts with a --- line, a YAML mapping and a closing --- line.",
        "Start SKILL.md with ---, the frontmatter, and --- on a line of its own.",
        conformance=("sep-2640-skillmd-frontmatter",),
        inspector=("frontmatter-absent",),
    ),
    Rule(
        "SW-FM-010",
        "frontmatter-identical",
        "error",
        f"{_SEP} §Frontmatter: MUST be identical in content to the SKILL.md's (compared "
        "at YAML 1.2 core schema)",
        "The served SKILL.md's frontmatter equals the entry's frontmatter, field by field.",
        "Build the entry's frontmatter from the very SKILL.md you serve.",
        conformance=("sep-2640-entry-frontmatter-identical",),
        inspector=("frontmatter-mismatch",),
    ),
    Rule(
        "SW-FM-011",
        "frontmatter-safe-yaml",
        "error",
        "hosts refuse it (skillward's hardened YAML reader)",
        "The frontmatter is UTF-8 plain YAML: one document, no directives, anchors, "
        "aliases, tags, duplicate or non-string keys, .nan or .inf.",
        "Write plain key: value YAML.",
        inspector=("frontmatter-unparsable",),
    ),
    Rule(
        "SW-FM-012",
        "skillmd-length",
        "warning",
        f"{_AS}: keep SKILL.md under 500 lines",
        "The SKILL.md body is under 500 lines.",
        "Move detail into reference files the body links to.",
    ),
    # --- skills/get --------------------------------------------------------------------
    Rule(
        "SW-GET-001",
        "get-answers",
        "error",
        f"{_SEP} §Retrieval via skills/get: a server MUST answer for every skill it serves",
        "skills/get answers for every listed skill.",
        "Serve skills/get for every skill in the listing.",
        conformance=("sep-2640-skills-get-implemented",),
    ),
    Rule(
        "SW-GET-002",
        "get-echoes-uri",
        "error",
        f"{_SEP} §Retrieval via skills/get (the entry for the skill named); hosts refuse another",
        "result.skill.uri equals the URI asked for.",
        "Answer with the entry of the skill asked for.",
        conformance=("sep-2640-skills-get-entry-shape",),
    ),
    Rule(
        "SW-GET-003",
        "get-matches-list",
        "warning",
        f"{_SEP} §Retrieval via skills/get: identical in shape and meaning to the listing's entry",
        "Asked back to back, skills/get and skills/list give the same frontmatter and "
        "the same files and digests (a host would otherwise revoke its approval).",
        "Build both answers from one snapshot of the skill.",
    ),
    Rule(
        "SW-GET-004",
        "get-unknown-invalid-params",
        "error",
        f"{_SEP} §Retrieval via skills/get: a URI that is not a served skill MUST get -32602",
        "skills/get of a URI that names no skill (a made-up one, or a supporting file) "
        "answers -32602.",
        "Answer error -32602 (Invalid params) for URIs that are not skills.",
        conformance=("sep-2640-skills-get-unknown-uri-invalid-params",),
    ),
    Rule(
        "SW-GET-005",
        "get-no-cursor",
        "error",
        f"{_SEP} §Retrieval via skills/get: the result carries no pagination cursor",
        "A skills/get result has no nextCursor.",
        "Leave nextCursor out of skills/get results.",
        conformance=("sep-2640-skills-get-no-cursor",),
    ),
    Rule(
        "SW-GET-006",
        "get-cache-attributes",
        "error",
        f"{_SEP} (stable text): skills/get results carry ttlMs and cacheScope",
        "On protocol 2026-07-28, a skills/get result carries ttlMs (an integer >= 0) and "
        'cacheScope ("public" or "private").',
        'Add "ttlMs" and "cacheScope" to skills/get results on 2026-07-28.',
        conformance=("sep-2640-skills-get-cache-attributes",),
    ),
    # --- reads -------------------------------------------------------------------------
    Rule(
        "SW-READ-001",
        "file-readable",
        "error",
        f"{_SEP} §Skill Format (every skill MUST contain a SKILL.md); §Resources (the "
        "listed files are the skill's)",
        "resources/read of every listed file succeeds.",
        "Serve every file the entry lists.",
        conformance=("sep-2640-skillmd-required",),
        inspector=("read-error",),
    ),
    Rule(
        "SW-READ-002",
        "skillmd-as-text",
        "error",
        "the conformance suite fails a SKILL.md served only as a blob",
        "SKILL.md is served as a text content item.",
        "Send SKILL.md as text (it is UTF-8 Markdown).",
        conformance=("sep-2640-skillmd-required",),
    ),
    Rule(
        "SW-READ-003",
        "read-single-item",
        "error",
        "hosts refuse it",
        "A read of one file holds exactly one content item, for the URI asked for.",
        "Answer each read with one item whose uri is the one asked for.",
        inspector=("read-error",),
    ),
    Rule(
        "SW-READ-004",
        "read-encoding",
        "error",
        "hosts refuse it",
        "Text is valid Unicode, and a blob is strict, padded base64.",
        "Send binary files as standard base64 blobs.",
        inspector=("read-error",),
    ),
    Rule(
        "SW-READ-005",
        "size-matches",
        "error",
        f"{_SEP} §Resources: a read whose length differs from size is a verification failure",
        "The bytes read (UTF-8 of text, or the decoded blob) are as many as the listed size.",
        "List the size of the exact bytes you serve (a BOM and CRLF line ends count).",
        inspector=("mismatch",),
    ),
    Rule(
        "SW-READ-006",
        "digest-matches",
        "error",
        f"{_SEP} §Integrity and verification: hosts MUST verify, and MUST NOT use content "
        "that does not match",
        "The SHA-256 of the bytes read equals the listed digest.",
        "Hash the exact bytes you serve, and serve the bytes you hashed.",
        inspector=("mismatch",),
    ),
    Rule(
        "SW-READ-007",
        "unknown-resource-not-empty",
        "error",
        "SEP-2164 (protocol 2026-07-28): an unknown resource MUST NOT get empty contents",
        "resources/read of a URI the server does not serve is not answered with an "
        "empty contents array.",
        "Answer error -32602 for an unknown resource.",
        conformance=("sep-2164-no-empty-contents",),
    ),
    Rule(
        "SW-READ-008",
        "unknown-resource-code",
        "warning",
        "SEP-2164: an unknown resource SHOULD get -32602",
        "resources/read of a URI the server does not serve answers -32602.",
        "Answer error -32602 (Invalid params) for an unknown resource.",
        conformance=("sep-2164-error-code",),
    ),
    # --- directory reads ---------------------------------------------------------------
    Rule(
        "SW-DIR-001",
        "dir-method-works",
        "error",
        f"{_SEP} §Directory Listing: a server declaring directoryRead MUST support it for "
        "every directory of the skills it serves",
        "resources/directory/read works on every skill root and every subdirectory of it.",
        "Answer directory reads for skill roots and their subdirectories.",
        conformance=("sep-2640-directory-read-method-registered",),
    ),
    Rule(
        "SW-DIR-002",
        "dir-prefix-directories",
        "warning",
        f"{_SEP} §Directory Listing: every directory within the skill namespaces "
        "(read here as including organisational prefixes)",
        "resources/directory/read also works on the prefix directories above skill roots "
        "(skill://acme for skill://acme/billing/refunds).",
        "Answer directory reads for prefix directories too.",
    ),
    Rule(
        "SW-DIR-003",
        "dir-result-shape",
        "error",
        f"{_SEP} §Directory Listing (the same Resource objects resources/list returns)",
        "The result's resources is an array of Resource objects, each with a string uri "
        "and name; nextCursor, when present, is a string.",
        "Answer with Resource objects for the direct children.",
        conformance=("sep-2640-directory-read-result-resources-shape",),
    ),
    Rule(
        "SW-DIR-004",
        "dir-direct-children",
        "error",
        f"{_SEP} §Directory Listing: every direct child; the listing is not recursive",
        "Each child is a direct child of the directory read, listed once.",
        "List direct children only; list subdirectories as directory resources.",
    ),
    Rule(
        "SW-DIR-005",
        "dir-subdir-mimetype",
        "error",
        f'{_SEP} §Directory Listing: subdirectories are listed with mimeType "inode/directory"',
        'A child that is a directory has mimeType "inode/directory"; a file does not.',
        'Mark subdirectories with "inode/directory".',
        conformance=("sep-2640-directory-read-subdir-mimetype",),
    ),
    Rule(
        "SW-DIR-006",
        "dir-agrees-with-manifest",
        "error",
        f"{_SEP} §Directory reads and the held entry (a listed file absent from a directory "
        "read is one the server no longer serves)",
        "Walking a skill's directories finds every file its resources lists.",
        "Serve directory reads from the same snapshot as the listing.",
    ),
    Rule(
        "SW-DIR-007",
        "dir-invalid-params",
        "error",
        f"{_SEP} §Directory Listing: a URI that is not a directory MUST get -32602",
        "A directory read of a file (SKILL.md) or of an unknown URI answers -32602.",
        "Answer error -32602 for URIs that are not directories.",
        conformance=("sep-2640-directory-read-invalid-params",),
    ),
    Rule(
        "SW-DIR-008",
        "dir-pagination",
        "error",
        f"{_SEP} §Directory Listing (pagination mirrors resources/list); hosts refuse a "
        "runaway walk",
        "Following nextCursor ends, with no repeated cursor, within the host's bounds "
        "(10,000 children, 4 MiB).",
        "Return nextCursor only when another page follows.",
        conformance=("sep-2640-directory-read-pagination",),
    ),
    Rule(
        "SW-DIR-009",
        "dir-cache-attributes",
        "error",
        "base protocol 2026-07-28 (as resources/list); the Inspector and the TypeScript "
        "SDK refuse results without them",
        "On protocol 2026-07-28, a directory read carries ttlMs and cacheScope.",
        'Add "ttlMs" and "cacheScope" to resources/directory/read results on 2026-07-28.',
    ),
    # --- resource metadata -------------------------------------------------------------
    Rule(
        "SW-META-001",
        "skillmd-mimetype",
        "warning",
        f"{_SEP} §Resource Metadata: mimeType SHOULD be text/markdown",
        "SKILL.md is served with mimeType text/markdown.",
        'Set mimeType "text/markdown" on SKILL.md.',
        conformance=("sep-2640-skillmd-mimetype",),
    ),
    Rule(
        "SW-META-002",
        "skillmd-resource-name",
        "warning",
        f"{_SEP} §Resource Metadata: name SHOULD be the frontmatter name",
        "SKILL.md's entry in resources/list has name equal to the frontmatter name.",
        "Set the resource's name from the frontmatter.",
        conformance=("sep-2640-skillmd-metadata-name",),
    ),
    Rule(
        "SW-META-003",
        "skillmd-resource-description",
        "warning",
        f"{_SEP} §Resource Metadata: description SHOULD be the frontmatter description",
        "SKILL.md's entry in resources/list has description equal to the frontmatter description.",
        "Set the resource's description from the frontmatter.",
        conformance=("sep-2640-skillmd-metadata-description",),
    ),
    Rule(
        "SW-META-004",
        "meta-prefix",
        "warning",
        f"{_SEP} §Resource Metadata: _meta keys SHOULD use a reverse-domain prefix "
        "(io.modelcontextprotocol.skills/ for the extension's)",
        "_meta keys on skill resources have a reverse-domain prefix (example.com/key).",
        "Prefix your _meta keys with a domain you own.",
        conformance=("sep-2640-meta-prefix",),
    ),
    # --- instructions ------------------------------------------------------------------
    Rule(
        "SW-INSTR-001",
        "instructions-uris-are-skills",
        "error",
        f"{_SEP} (stable text): a host given only a skill URI, as in instructions, confirms "
        "it with skills/get",
        "Every .../SKILL.md URI in the server's instructions gets a valid entry from skills/get.",
        "Name only skills you serve in instructions, or serve them with skills/get.",
    ),
    # --- content hygiene ---------------------------------------------------------------
    Rule(
        "SW-HYG-001",
        "hidden-characters",
        "warning",
        f"{_SEP} §Security Implications (skill content is untrusted input): hosts mark "
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
        f"{_SEP} §Security Implications: allowed-tools MUST be ignored for MCP skills "
        "unless the user approves that grant",
        "The skill does not rely on allowed-tools: a host grants none of it unless a "
        "person approves.",
        "Expect each tool to be asked for; say in the body what the skill needs.",
    ),
    Rule(
        "SW-HYG-004",
        "hooks-declared",
        "warning",
        f"{_SEP} §Security Implications: hosts MUST ignore or approval-gate declarative "
        "execution (hooks, frontmatter scripts)",
        "The frontmatter declares no hooks: a host never runs them from an MCP skill.",
        "Drop hooks from skills you serve over MCP.",
    ),
    # --- information -------------------------------------------------------------------
    Rule(
        "SW-INFO-001",
        "executable-files",
        "note",
        f"{_SEP} §Security Implications: no implicit local execution; running a bundled "
        "script takes the person's approval",
        "The skill ships files that look executable (under scripts/, or starting with #!).",
        "Nothing to change: expect hosts to ask before running them.",
    ),
    Rule(
        "SW-INFO-002",
        "nested-skills",
        "note",
        f"{_SEP} §Nested skills: activating a nested skill takes fresh consent",
        "A listed skill lies under another listed skill's root.",
        "Nothing to change: a host asks for each nested skill on its own.",
    ),
)

_BY_ID = {r.id: r for r in RULES}


def rule(rule_id: str) -> Rule:
    """The rule with ID ``rule_id``; raise KeyError for an unknown one."""
    return _BY_ID[rule_id]
