"""The rules of one skill entry: its fields, its URIs, its manifest, the host's limits on
it, and its frontmatter (the Agent Skills format)."""

from __future__ import annotations

from skillward.check._rule import AS, Rule

__all__ = ["ENTRY", "FRONTMATTER", "LIMITS", "MANIFEST", "URIS"]


#: One entry.
ENTRY: tuple[Rule, ...] = (
    Rule(
        "SW-ENTRY-001",
        "entry-uri",
        "error",
        "skills[].uri is Required: the resource URI of the skill's SKILL.md",
        "Each entry is an object with a string uri.",
        "Give every entry the URI of its SKILL.md.",
        conformance=("sep-2640-entry-uri-required",),
        section="Enumeration via skills/list",
        says="MUST",
    ),
    Rule(
        "SW-ENTRY-002",
        "entry-frontmatter",
        "error",
        'skills[].frontmatter is Required; name and description "are always present"',
        "Each entry has a frontmatter object with a string name and a string description.",
        "Copy the SKILL.md frontmatter into the entry as a JSON object.",
        conformance=("sep-2640-entry-frontmatter-required",),
        inspector=("missing-name", "missing-description"),
        section="Frontmatter",
        says="MUST",
    ),
    Rule(
        "SW-ENTRY-003",
        "entry-resources",
        "error",
        '"resources is REQUIRED on every skill entry"; any value other than an array or '
        '"dynamic" is invalid, "and hosts MUST NOT load it"',
        'Each entry has resources: an array of objects, or exactly "dynamic".',
        "List the skill's files as {uri, digest, size} objects.",
        conformance=("sep-2640-entry-resources-required",),
        section="Resources",
        says="MUST",
    ),
    Rule(
        "SW-ENTRY-004",
        "dynamic-resources",
        "warning",
        '"Hosts MAY decline to load such skills, and server authors SHOULD expect that '
        'some hosts will"',
        'The skill lists its files rather than "resources": "dynamic".',
        "Publish digests and sizes when the content is stable; skillward refuses "
        "dynamic skills unless configured otherwise.",
        inspector=("dynamic-resources",),
        section="Resources",
        says="SHOULD",
    ),
    Rule(
        "SW-ENTRY-005",
        "entry-known-fields",
        "warning",
        "silent on other fields; FastMCP's client refuses a whole page for one unknown field",
        "Entries carry only uri, frontmatter, resources and _meta; items only uri, "
        "digest, size and _meta.",
        "Move extra data under _meta, with a reverse-domain prefix.",
        section="Enumeration via skills/list",
    ),
)


#: URIs.
URIS: tuple[Rule, ...] = (
    Rule(
        "SW-URI-001",
        "skill-md-uri",
        "error",
        'uri is "the full resource URI of the skill\'s SKILL.md", and '
        '"params.uri MUST be the URI of a skill\'s SKILL.md"',
        "The entry uri is <scheme>://<skill-path>/SKILL.md, with a skill path of one "
        "segment or more.",
        "Use the URI of the skill's SKILL.md, ending in /SKILL.md.",
        inspector=("malformed-uri",),
        section="Resource Mapping",
        says="MUST",
    ),
    Rule(
        "SW-URI-002",
        "final-segment-equals-name",
        "error",
        "\"The final segment of <skill-path> MUST equal the skill's name as declared in "
        'its SKILL.md frontmatter"',
        "The final skill-path segment equals frontmatter.name (the name matches its directory).",
        "Rename the skill's directory, or its frontmatter name, so that they agree.",
        conformance=(
            "sep-2640-entry-uri-matches-frontmatter-name",
            "sep-2640-final-segment-equals-name",
        ),
        inspector=("name-path-mismatch",),
        section="Resource Mapping",
        says="MUST",
    ),
    Rule(
        "SW-URI-003",
        "authority-reg-name",
        "warning",
        '"The first <skill-path> segment occupies the authority component and SHOULD be '
        'a valid reg-name"; skillward refuses other authorities',
        "The first skill-path segment is an RFC 3986 reg-name: no userinfo, port, IP "
        "literal or other character.",
        "Use letters, digits and -._~ in the first segment (percent-encode the rest).",
        conformance=("sep-2640-authority-reg-name",),
        section="Resource Mapping",
        says="SHOULD",
    ),
    Rule(
        "SW-URI-004",
        "canonical-uri",
        "warning",
        '"any other prefix segments SHOULD be valid URI path segments"; silent on one '
        "spelling per URI, which skillward requires: it takes the exact string as identity",
        "Skill and file URIs are canonical: ASCII, a lowercase scheme, uppercase "
        "percent-encodings of reserved characters only, no empty, . or .. segment, no "
        "trailing slash, query or fragment, at most 2048 characters.",
        "Percent-encode non-ASCII characters as UTF-8 with uppercase hex, and write "
        "each path once, canonically.",
        section="Resource Mapping",
        says="SHOULD",
    ),
    Rule(
        "SW-URI-005",
        "no-file-scheme",
        "warning",
        '"A server MAY serve skills under another scheme native to its domain"; '
        "skillward refuses file: (server strings never become paths)",
        "No skill or file URI uses the file: scheme.",
        "Serve the files under skill:// (or another scheme of your own).",
        section="Resource Mapping",
        says="MAY",
    ),
    Rule(
        "SW-URI-006",
        "skill-scheme",
        "warning",
        '"Servers SHOULD use the skill:// URI scheme"',
        "Skills are served under skill://.",
        "Use skill:// unless your domain has a scheme of its own.",
        conformance=("sep-2640-skill-uri-scheme",),
        section="Resource Mapping",
        says="SHOULD",
    ),
)


#: The manifest.
MANIFEST: tuple[Rule, ...] = (
    Rule(
        "SW-RES-001",
        "manifest-includes-self",
        "error",
        '"resources MUST be complete: it lists every file of the skill, each exactly '
        "once, including an entry matching the skill's top-level uri\"",
        "The resources array lists the SKILL.md itself, at the entry's exact uri.",
        "Add the SKILL.md, with its digest and size, to resources.",
        conformance=("sep-2640-resources-complete",),
        inspector=("manifest-missing-self",),
        section="Resources",
        says="MUST",
    ),
    Rule(
        "SW-RES-002",
        "manifest-no-duplicates",
        "error",
        '"resources MUST be complete: it lists every file of the skill, each exactly once"',
        "No file URI appears twice in resources.",
        "List each file once.",
        conformance=("sep-2640-resources-complete",),
        inspector=("duplicate-resource",),
        section="Resources",
        says="MUST",
    ),
    Rule(
        "SW-RES-003",
        "manifest-within-skill",
        "error",
        "\"Each uri MUST be the skill's SKILL.md or a file within the skill's directory\"",
        "Every file URI is the SKILL.md or lies under <skill root>/, in the same scheme.",
        "List only the skill's own files.",
        conformance=("sep-2640-resources-uri-within-skill",),
        inspector=("resource-outside-skill-root",),
        section="Resources",
        says="MUST",
    ),
    Rule(
        "SW-RES-004",
        "digest-format",
        "error",
        'digests are "formatted as sha256:{hex} where {hex} is 64 lowercase hexadecimal '
        'characters" (the conformance suite fails others)',
        "Every digest is sha256: followed by 64 lowercase hexadecimal characters.",
        'Write "sha256:" + hashlib.sha256(data).hexdigest() of the raw bytes.',
        conformance=("sep-2640-resources-digest-format",),
        inspector=("missing-digest", "malformed-digest"),
        section="Integrity and verification",
        says="MUST",
    ),
    Rule(
        "SW-RES-005",
        "size-integer",
        "error",
        '"Each entry MUST carry size: the length in bytes of the file\'s raw content"',
        "Every size is a JSON integer of 0 or more (5, not 5.0 or true).",
        "Write the byte length of the raw content as an integer.",
        conformance=("sep-2640-resources-size-required",),
        inspector=("missing-size", "malformed-size"),
        section="Resources",
        says="MUST",
    ),
    Rule(
        "SW-RES-006",
        "manifest-complete",
        "error",
        '"When present, resources MUST be complete: it lists every file of the skill"; '
        "a file is what resources/list or a directory read serves under the skill's root",
        "Every file the server serves under a skill's root (in resources/list or a "
        "directory read) is listed in that skill's resources.",
        "List every file of the skill, or stop serving the ones you do not list.",
        section="Resources",
        says="MUST",
    ),
    Rule(
        "SW-RES-007",
        "nested-in-enclosing",
        "error",
        "\"Completeness extends to nested skills: ... the enclosing skill's resources "
        'lists them too"',
        "A skill nested under another's root has each of its files in the enclosing "
        "skill's resources too, with the same digest and size.",
        "List the nested skill's files in the enclosing skill's resources as well.",
        section="Resources",
        says="MUST",
    ),
    Rule(
        "SW-RES-008",
        "generated-resource",
        "note",
        'resources lists "every file of the skill"; a resource a framework generates '
        "under a skill's root is not one of its files (§Backward Compatibility names "
        "FastMCP's per-skill _manifest), and a host acting on the skill never reads it",
        "Resources a known framework generates under a skill's root (FastMCP's "
        "_manifest) are reported apart from the skill's files.",
        "Nothing to change for hosts of SEP-2640; the finding says where it comes from.",
        section="Resources",
    ),
)


#: Limits.
LIMITS: tuple[Rule, ...] = (
    Rule(
        "SW-LIM-001",
        "files-per-skill",
        "warning",
        '"Servers SHOULD NOT serve a skill that exceeds either limit" (512 entries); '
        "skillward refuses larger skills",
        "A skill lists at most 512 files, SKILL.md included.",
        "Split the skill, or drop files it does not need.",
        conformance=("sep-2640-limit-resources-per-skill",),
        inspector=("resource-limit-exceeded",),
        section="Limits",
        says="SHOULD",
    ),
    Rule(
        "SW-LIM-002",
        "bytes-per-skill",
        "warning",
        '"Servers SHOULD NOT serve a skill that exceeds either limit" (16 MiB); '
        "skillward refuses larger skills",
        "The sizes of a skill's files add up to at most 16 MiB (16,777,216 bytes).",
        "Split the skill, or move large data out of it.",
        conformance=("sep-2640-limit-total-size",),
        inspector=("size-limit-exceeded",),
        section="Limits",
        says="SHOULD",
    ),
    Rule(
        "SW-LIM-003",
        "frontmatter-bounds",
        "warning",
        "silent on the frontmatter's size; skillward refuses more than 64 KiB, 16 levels "
        "or 4096 values of it",
        "The frontmatter is at most 64 KiB as JSON, nests at most 16 deep and holds at "
        "most 4096 values; in SKILL.md, the closing --- starts within 64 KiB.",
        "Keep frontmatter small; move long text into the body or a file.",
        inspector=("frontmatter-unparsable",),
        section="Limits",
    ),
)


#: Frontmatter and the Agent Skills format.
FRONTMATTER: tuple[Rule, ...] = (
    Rule(
        "SW-FM-001",
        "name-format",
        "error",
        '"The final <skill-path> segment, being the skill name, MUST satisfy the Agent '
        f"Skills specification's naming rules\" ({AS}: 1-64 characters of a-z, 0-9 and "
        "single hyphens)",
        "The name is 1-64 characters of a-z, 0-9 and single hyphens, not starting or "
        "ending with a hyphen.",
        "Rename the skill (and its directory) in lowercase-with-hyphens.",
        conformance=("sep-2640-name-naming-rules",),
        inspector=("malformed-name",),
        section="Resource Mapping",
        says="MUST",
    ),
    Rule(
        "SW-FM-002",
        "description-length",
        "error",
        f'"A skill served over MCP MUST conform to the Agent Skills specification"; {AS}: '
        'the description "Must be 1-1024 characters"',
        "The description is 1 to 1024 characters.",
        "Shorten the description (details belong in the body).",
        inspector=("malformed-description", "missing-description"),
        section="Skill Format",
        says="MUST",
    ),
    Rule(
        "SW-FM-003",
        "description-not-blank",
        "warning",
        f'{AS}: a description "Should describe both what the skill does and when to use '
        "it\"; FastMCP's client and the Inspector refuse a blank one",
        "The description is not only whitespace.",
        "Say what the skill does and when to use it.",
        inspector=("missing-description",),
        section="Skill Format",
        says="SHOULD",
    ),
    Rule(
        "SW-FM-004",
        "compatibility-format",
        "error",
        f'"A skill served over MCP MUST conform to the Agent Skills specification"; {AS}: '
        'compatibility "Must be 1-500 characters if provided"',
        "compatibility, when present, is a string of 1-500 characters.",
        "Write compatibility as a short string.",
        section="Skill Format",
        says="MUST",
    ),
    Rule(
        "SW-FM-005",
        "metadata-string-map",
        "error",
        f'"A skill served over MCP MUST conform to the Agent Skills specification"; {AS}: '
        'metadata is "a map from string keys to string values"',
        "metadata, when present, maps string keys to string values.",
        'Quote metadata values ("2.0", not 2.0).',
        section="Skill Format",
        says="MUST",
    ),
    Rule(
        "SW-FM-006",
        "string-fields",
        "warning",
        f'{AS}: allowed-tools is a "Space-separated string" (experimental) and license a '
        "license name or file; neither is typed as strictly as the fields above",
        "license and allowed-tools, when present, are strings (allowed-tools space-separated).",
        "Write allowed-tools as one space-separated string.",
        section="Skill Format",
    ),
    Rule(
        "SW-FM-007",
        "metadata-reserved-prefix",
        "warning",
        '"keys prefixed with io.modelcontextprotocol/ are reserved for metadata defined '
        'by MCP extensions. This extension currently defines no such keys" (the '
        "conformance suite warns)",
        "No metadata key starts with io.modelcontextprotocol/.",
        "Use a reverse-domain prefix of your own.",
        conformance=("sep-2640-metadata-reserved-prefix",),
        section="Frontmatter",
        says="SHOULD",
    ),
    Rule(
        "SW-FM-008",
        "no-proto-key",
        "warning",
        "silent; the TypeScript SkillsClient refuses a __proto__ key",
        "No frontmatter key, at any depth, is __proto__.",
        "Rename the key.",
        section="Frontmatter",
    ),
    Rule(
        "SW-FM-009",
        "skillmd-frontmatter",
        "error",
        '"SKILL.md MUST begin with YAML frontmatter containing at minimum the name and '
        'description fields"',
        "The served SKILL.md starts with a --- line, a YAML mapping and a closing --- line.",
        "Start SKILL.md with ---, the frontmatter, and --- on a line of its own.",
        conformance=("sep-2640-skillmd-frontmatter",),
        inspector=("frontmatter-absent",),
        section="Skill Format",
        says="MUST",
    ),
    Rule(
        "SW-FM-010",
        "frontmatter-identical",
        "error",
        '"The frontmatter object MUST be identical in content to the frontmatter of the '
        'SKILL.md it describes" (compared at YAML 1.2 core schema)',
        "The served SKILL.md's frontmatter equals the entry's frontmatter, field by field.",
        "Build the entry's frontmatter from the very SKILL.md you serve.",
        conformance=("sep-2640-entry-frontmatter-identical",),
        inspector=("frontmatter-mismatch",),
        section="Frontmatter",
        says="MUST",
    ),
    Rule(
        "SW-FM-011",
        "frontmatter-safe-yaml",
        "warning",
        "silent on YAML features; skillward's hardened reader refuses them",
        "The frontmatter is UTF-8 plain YAML: one document, no directives, anchors, "
        "aliases, tags, duplicate or non-string keys, .nan or .inf.",
        "Write plain key: value YAML.",
        inspector=("frontmatter-unparsable",),
        section="Skill Format",
    ),
    Rule(
        "SW-FM-012",
        "skillmd-length",
        "warning",
        f"{AS} recommends keeping SKILL.md under 500 lines",
        "The SKILL.md body is under 500 lines.",
        "Move detail into reference files the body links to.",
        section="Skill Format",
        says="SHOULD",
    ),
)
