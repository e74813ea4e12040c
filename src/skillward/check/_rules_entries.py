"""The rules of one skill entry: its fields, its URIs, its manifest, the host's limits on
it, and its frontmatter (the Agent Skills format)."""

from __future__ import annotations

from skillward.check._rule import AS, SEP, Rule

__all__ = ["ENTRY", "FRONTMATTER", "LIMITS", "MANIFEST", "URIS"]


#: One entry.
ENTRY: tuple[Rule, ...] = (
    Rule(
        "SW-ENTRY-001",
        "entry-uri",
        "error",
        f"{SEP} §Enumeration via skills/list (skills[].uri is required)",
        "Each entry is an object with a string uri.",
        "Give every entry the URI of its SKILL.md.",
        conformance=("sep-2640-entry-uri-required",),
    ),
    Rule(
        "SW-ENTRY-002",
        "entry-frontmatter",
        "error",
        f"{SEP} §Frontmatter (required; name and description always present)",
        "Each entry has a frontmatter object with a string name and a string description.",
        "Copy the SKILL.md frontmatter into the entry as a JSON object.",
        conformance=("sep-2640-entry-frontmatter-required",),
        inspector=("missing-name", "missing-description"),
    ),
    Rule(
        "SW-ENTRY-003",
        "entry-resources",
        "error",
        f"{SEP} §Resources: an entry with no resources, or any value other than an "
        'array or "dynamic", is invalid (MUST NOT load)',
        'Each entry has resources: an array of objects, or exactly "dynamic".',
        "List the skill's files as {uri, digest, size} objects.",
        conformance=("sep-2640-entry-resources-required",),
    ),
    Rule(
        "SW-ENTRY-004",
        "dynamic-resources",
        "warning",
        f'{SEP} §Resources: hosts MAY decline "dynamic" skills, and server authors '
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
)


#: URIs.
URIS: tuple[Rule, ...] = (
    Rule(
        "SW-URI-001",
        "skill-md-uri",
        "error",
        f"{SEP} §Resource Mapping (SKILL.md explicit in the URI); §Retrieval via skills/get",
        "The entry uri is <scheme>://<skill-path>/SKILL.md, with a skill path of one "
        "segment or more.",
        "Use the URI of the skill's SKILL.md, ending in /SKILL.md.",
        inspector=("malformed-uri",),
    ),
    Rule(
        "SW-URI-002",
        "final-segment-equals-name",
        "error",
        f"{SEP} §Resource Mapping: the final skill-path segment MUST equal the name",
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
        f"{SEP} §Resource Mapping (the first segment SHOULD be a reg-name); skillward "
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
        f"{SEP} §Resource Mapping: servers SHOULD use the skill:// scheme",
        "Skills are served under skill://.",
        "Use skill:// unless your domain has a scheme of its own.",
        conformance=("sep-2640-skill-uri-scheme",),
    ),
)


#: The manifest.
MANIFEST: tuple[Rule, ...] = (
    Rule(
        "SW-RES-001",
        "manifest-includes-self",
        "error",
        f"{SEP} §Resources: the array includes an entry matching the skill's uri (MUST)",
        "The resources array lists the SKILL.md itself, at the entry's exact uri.",
        "Add the SKILL.md, with its digest and size, to resources.",
        conformance=("sep-2640-resources-complete",),
        inspector=("manifest-missing-self",),
    ),
    Rule(
        "SW-RES-002",
        "manifest-no-duplicates",
        "error",
        f"{SEP} §Resources: every file, each exactly once (MUST)",
        "No file URI appears twice in resources.",
        "List each file once.",
        conformance=("sep-2640-resources-complete",),
        inspector=("duplicate-resource",),
    ),
    Rule(
        "SW-RES-003",
        "manifest-within-skill",
        "error",
        f"{SEP} §Resources: each uri MUST be the SKILL.md or a file within the skill",
        "Every file URI is the SKILL.md or lies under <skill root>/, in the same scheme.",
        "List only the skill's own files.",
        conformance=("sep-2640-resources-uri-within-skill",),
        inspector=("resource-outside-skill-root",),
    ),
    Rule(
        "SW-RES-004",
        "digest-format",
        "error",
        f"{SEP} §Integrity and verification: sha256: and 64 lowercase hex characters",
        "Every digest is sha256: followed by 64 lowercase hexadecimal characters.",
        'Write "sha256:" + hashlib.sha256(data).hexdigest() of the raw bytes.',
        conformance=("sep-2640-resources-digest-format",),
        inspector=("missing-digest", "malformed-digest"),
    ),
    Rule(
        "SW-RES-005",
        "size-integer",
        "error",
        f"{SEP} §Resources: each entry MUST carry size, in bytes",
        "Every size is a JSON integer of 0 or more (5, not 5.0 or true).",
        "Write the byte length of the raw content as an integer.",
        conformance=("sep-2640-resources-size-required",),
        inspector=("missing-size", "malformed-size"),
    ),
    Rule(
        "SW-RES-006",
        "manifest-complete",
        "error",
        f"{SEP} §Resources: when present, resources MUST be complete",
        "Every file the server serves under a skill's root (in resources/list or a "
        "directory read) is listed in that skill's resources.",
        "List every file of the skill, or stop serving the ones you do not list.",
    ),
    Rule(
        "SW-RES-007",
        "nested-in-enclosing",
        "error",
        f"{SEP} §Resources: completeness extends to nested skills",
        "A skill nested under another's root has each of its files in the enclosing "
        "skill's resources too, with the same digest and size.",
        "List the nested skill's files in the enclosing skill's resources as well.",
    ),
)


#: Limits.
LIMITS: tuple[Rule, ...] = (
    Rule(
        "SW-LIM-001",
        "files-per-skill",
        "error",
        f"{SEP} §Limits: servers SHOULD NOT exceed 512 entries; hosts refuse larger skills",
        "A skill lists at most 512 files, SKILL.md included.",
        "Split the skill, or drop files it does not need.",
        conformance=("sep-2640-limit-resources-per-skill",),
        inspector=("resource-limit-exceeded",),
    ),
    Rule(
        "SW-LIM-002",
        "bytes-per-skill",
        "error",
        f"{SEP} §Limits: servers SHOULD NOT exceed 16 MiB; hosts refuse larger skills",
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
)


#: Frontmatter and the Agent Skills format.
FRONTMATTER: tuple[Rule, ...] = (
    Rule(
        "SW-FM-001",
        "name-format",
        "error",
        f"{AS}: name is 1-64 characters of a-z, 0-9 and single hyphens; {SEP} §Resource "
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
        f"{AS}: description is 1-1024 characters",
        "The description is 1 to 1024 characters.",
        "Shorten the description (details belong in the body).",
        inspector=("malformed-description", "missing-description"),
    ),
    Rule(
        "SW-FM-003",
        "description-not-blank",
        "error",
        f"{AS}: description is non-empty; FastMCP's client and the Inspector refuse a blank one",
        "The description is not only whitespace.",
        "Say what the skill does and when to use it.",
        inspector=("missing-description",),
    ),
    Rule(
        "SW-FM-004",
        "compatibility-format",
        "error",
        f"{AS}: compatibility is 1-500 characters; the TypeScript SkillsClient refuses others",
        "compatibility, when present, is a string of 1-500 characters.",
        "Write compatibility as a short string.",
    ),
    Rule(
        "SW-FM-005",
        "metadata-string-map",
        "error",
        f"{AS}: metadata maps strings to strings; the TypeScript SkillsClient refuses others",
        "metadata, when present, maps string keys to string values.",
        'Quote metadata values ("2.0", not 2.0).',
    ),
    Rule(
        "SW-FM-006",
        "string-fields",
        "warning",
        f"{AS}: license and allowed-tools are strings",
        "license and allowed-tools, when present, are strings (allowed-tools space-separated).",
        "Write allowed-tools as one space-separated string.",
    ),
    Rule(
        "SW-FM-007",
        "metadata-reserved-prefix",
        "warning",
        f"{SEP} §Frontmatter: metadata keys prefixed io.modelcontextprotocol/ are "
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
        f"{SEP} §Skill Format: SKILL.md MUST begin with YAML frontmatter",
        "The served SKILL.md starts with a --- line, a YAML mapping and a closing --- line.",
        "Start SKILL.md with ---, the frontmatter, and --- on a line of its own.",
        conformance=("sep-2640-skillmd-frontmatter",),
        inspector=("frontmatter-absent",),
    ),
    Rule(
        "SW-FM-010",
        "frontmatter-identical",
        "error",
        f"{SEP} §Frontmatter: MUST be identical in content to the SKILL.md's (compared "
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
        f"{AS}: keep SKILL.md under 500 lines",
        "The SKILL.md body is under 500 lines.",
        "Move detail into reference files the body links to.",
    ),
)
