"""The rules of the protocol a server speaks: declaring the extension, the host's message
caps, ``skills/list`` paging, ``skills/get``, and the skill URIs its instructions name."""

from __future__ import annotations

from skillward.check._rule import Rule

__all__ = ["CAPABILITY", "GET", "INSTRUCTIONS", "LISTING", "WIRE"]


#: Capability.
CAPABILITY: tuple[Rule, ...] = (
    Rule(
        "SW-CAP-001",
        "extension-declared",
        "error",
        "servers declare support for this extension (SEP-2133 extension negotiation); "
        'every server requirement of the SEP is one of "a server declaring the '
        'extension", and a client issues the skills methods only after seeing the '
        "declaration (§Backward Compatibility)",
        "The server declares the io.modelcontextprotocol/skills extension in its "
        "capabilities (nothing else is checked without it).",
        'Declare capabilities.extensions["io.modelcontextprotocol/skills"] = {}.',
        inspector=("skills_unsupported",),
        section="Capability Declaration",
        says="MUST",
    ),
    Rule(
        "SW-CAP-002",
        "settings-inline",
        "error",
        "the settings object sits under the identifier, as SEP-2133 defines extension "
        "settings; the conformance suite fails an envelope",
        "Extension settings sit directly under the identifier: no config, specVersion, "
        "stability or id envelope.",
        'Write {"directoryRead": true}, not {"config": {"directoryRead": true}}.',
        conformance=("sep-2640-capability-declaration-inline",),
        section="Capability Declaration",
        says="MUST",
    ),
    Rule(
        "SW-CAP-003",
        "directory-read-boolean",
        "error",
        "the settings table: directoryRead is of type boolean",
        "directoryRead, when present, is a JSON boolean.",
        'Write "directoryRead": true or false (not a string or null).',
        section="Capability Declaration",
        says="MUST",
    ),
    Rule(
        "SW-CAP-004",
        "requires-resources",
        "error",
        '(stable text) "A server that declares the extension MUST also declare the '
        'resources capability"',
        "A server that declares the extension also declares the resources capability.",
        "Declare capabilities.resources (serve resources/read for the skill files).",
        conformance=("sep-2640-capability-requires-resources",),
        section="Dependencies",
        says="MUST",
    ),
    Rule(
        "SW-CAP-005",
        "commits-to-methods",
        "error",
        '"A server declaring the extension MUST implement the skills/list method" and '
        '"MUST also implement the skills/get method", on every protocol version it '
        "declares the extension on",
        "skills/list and skills/get are implemented: neither answers -32601 (method not "
        "found), on either protocol era the extension is declared on.",
        "Register handlers for skills/list and skills/get.",
        conformance=("sep-2640-capability-commits-to-methods", "sep-2640-skills-get-implemented"),
        section="Capability Declaration",
        says="MUST",
    ),
    Rule(
        "SW-CAP-006",
        "legacy-era-declared",
        "note",
        'servers declare support "in their initialize response"; nothing requires a '
        "server to offer the extension on both protocol eras, and only what it declares "
        "is checked",
        "On the 2025-11-25 initialize handshake the server declares the extension too "
        "(hosts on that era see no skills otherwise).",
        "To serve hosts on 2025-11-25, declare capabilities.extensions in the initialize "
        "result too (the mcp Python SDK 2.x drops it unless you put it back) and serve "
        "the skills methods there.",
        inspector=("skills_unsupported",),
        section="Capability Declaration",
    ),
)


#: Wire.
WIRE: tuple[Rule, ...] = (
    Rule(
        "SW-WIRE-001",
        "within-host-caps",
        "warning",
        "the SEP bounds a skill (512 files, 16 MiB), not a message; skillward refuses a "
        "message past its caps (24 MiB and 262,144 JSON values a message; 2 MiB a "
        "skills/get result)",
        "Every message fits the host's caps.",
        "Keep each result small: page skills/list, and keep files within their listed size.",
        section="Limits",
    ),
)


#: Skills/list.
LISTING: tuple[Rule, ...] = (
    Rule(
        "SW-LIST-001",
        "list-result-shape",
        "error",
        '"MUST implement the skills/list method"; its result\'s skills is required '
        '("The result MAY be empty")',
        "skills/list answers with an object whose skills is an array (it may be empty).",
        'Answer {"skills": [...]}.',
        conformance=("sep-2640-skills-list-implemented",),
        section="Enumeration via skills/list",
        says="MUST",
    ),
    Rule(
        "SW-LIST-002",
        "pagination-ends",
        "error",
        '"Pagination mirrors the base protocol\'s list methods": a nextCursor names the '
        "next page, so a listing whose cursors repeat, or never end, cannot be read (the "
        "conformance suite fails it)",
        "Following nextCursor ends: no cursor repeats, and the walk ends within the "
        "host's page limit (1000 pages).",
        "Return nextCursor only when another page follows, and never the same one twice.",
        conformance=("sep-2640-skills-list-pagination",),
        section="Enumeration via skills/list",
        says="MUST",
    ),
    Rule(
        "SW-LIST-003",
        "next-cursor-shape",
        "error",
        "pagination mirrors the base protocol, whose schema makes nextCursor a string "
        "(skillward reads at most 4096 characters of one)",
        "nextCursor, when present, is a string of at most 4096 characters.",
        "Send an opaque string cursor, or leave nextCursor out on the last page.",
        section="Enumeration via skills/list",
        says="MUST",
    ),
    Rule(
        "SW-LIST-004",
        "page-count-portable",
        "warning",
        "silent on a page count; the conformance suite follows 50 pages, the Inspector 64",
        "The whole listing fits in at most 50 pages.",
        "Send larger pages.",
        conformance=("sep-2640-skills-list-pagination",),
        section="Enumeration via skills/list",
    ),
    Rule(
        "SW-LIST-005",
        "entry-uri-unique",
        "error",
        '"An entry is atomic — a skill\'s resources set is never split across pages" '
        "(the conformance suite fails a split entry); the TypeScript SkillsClient "
        "refuses a URI listed twice",
        "No skill URI is listed twice, on one page or across pages.",
        "List each skill once.",
        conformance=("sep-2640-skills-list-entry-atomic",),
        section="Enumeration via skills/list",
        says="MUST",
    ),
    Rule(
        "SW-LIST-006",
        "list-cache-attributes",
        "error",
        '"In protocol versions 2026-07-28 and later, the result also carries" ttlMs and '
        "cacheScope, which SEP-2549 requires of a cacheable result",
        "On protocol 2026-07-28, every page carries ttlMs (an integer >= 0) and "
        'cacheScope ("public" or "private").',
        'Add "ttlMs" and "cacheScope" to each skills/list result on 2026-07-28.',
        conformance=("sep-2640-skills-list-cache-attributes",),
        section="Enumeration via skills/list",
        says="MUST",
    ),
    Rule(
        "SW-LIST-007",
        "names-unique",
        "warning",
        '"Within a server\'s listing, names SHOULD be unique"',
        "No two listed skills share a name.",
        "Rename one of the skills (its final path segment and frontmatter name).",
        conformance=("sep-2640-names-should-be-unique",),
        inspector=("duplicate-name",),
        section="Names",
        says="SHOULD",
    ),
    Rule(
        "SW-LIST-008",
        "look-alike-paths",
        "warning",
        '"Name collisions are an impersonation surface" (a host\'s duty); silent on '
        "paths that differ only in case, Unicode form or percent-encoding",
        "No two skill paths differ only in letter case, Unicode form or percent-encoding.",
        "Rename one of the skills so that the two do not look alike.",
        section="Security Implications",
    ),
    Rule(
        "SW-LIST-009",
        "listing-within-bounds",
        "warning",
        '"a listing may be arbitrarily large"; skillward reads at most 2 MiB a page, and '
        "12 MiB, 20,000 entries and 65,536 files a listing",
        "Each page, and the whole listing, fits the host's bounds.",
        "Page the listing in smaller pages; leave very large catalogs partial (a skill "
        "absent from the listing is still reachable with skills/get).",
        section="Limits",
    ),
    Rule(
        "SW-LIST-010",
        "stable-order",
        "warning",
        "silent; a host walking the pages again expects the same listing",
        "Two walks of the listing give the same skills in the same order.",
        "Order the listing by something stable (the URI), and make cursors point into it.",
        section="Enumeration via skills/list",
    ),
    Rule(
        "SW-LIST-011",
        "invalid-cursor",
        "warning",
        "pagination mirrors the base protocol's, where an invalid cursor SHOULD get -32602",
        "skills/list with a cursor the server never issued answers -32602 (Invalid "
        "params), not a page.",
        "Validate cursors; answer an unknown one with error -32602.",
        section="Enumeration via skills/list",
        says="SHOULD",
    ),
)


#: Skills/get.
GET: tuple[Rule, ...] = (
    Rule(
        "SW-GET-001",
        "get-answers",
        "error",
        '"A server MUST answer for every skill it serves, whether or not that skill '
        'appears in its skills/list result"',
        "skills/get answers for every listed skill.",
        "Serve skills/get for every skill in the listing.",
        conformance=("sep-2640-skills-get-implemented",),
        section="Retrieval via skills/get",
        says="MUST",
    ),
    Rule(
        "SW-GET-002",
        "get-echoes-uri",
        "error",
        'skills/get "returns the entry for a single skill named by its URI" (the '
        "conformance suite fails another URI)",
        "result.skill.uri equals the URI asked for.",
        "Answer with the entry of the skill asked for.",
        conformance=("sep-2640-skills-get-entry-shape",),
        section="Retrieval via skills/get",
        says="MUST",
    ),
    Rule(
        "SW-GET-003",
        "get-matches-list",
        "warning",
        '"identical in shape and meaning to an entry of skills/list"; each is "a '
        'point-in-time snapshot", so the SEP allows them to differ',
        "Asked back to back, skills/get and skills/list give the same frontmatter and "
        "the same files and digests (a host would otherwise revoke its approval).",
        "Build both answers from one snapshot of the skill.",
        section="Retrieval via skills/get",
    ),
    Rule(
        "SW-GET-004",
        "get-unknown-invalid-params",
        "error",
        '"If the URI does not identify a skill the server serves, the server MUST return '
        'error -32602 (Invalid params)"',
        "skills/get of a URI that names no skill (a made-up one, or a supporting file) "
        "answers -32602.",
        "Answer error -32602 (Invalid params) for URIs that are not skills.",
        conformance=("sep-2640-skills-get-unknown-uri-invalid-params",),
        section="Retrieval via skills/get",
        says="MUST",
    ),
    Rule(
        "SW-GET-005",
        "get-no-cursor",
        "error",
        '"The result carries no pagination cursor: a single entry is not a list" (the '
        "conformance suite fails one)",
        "A skills/get result has no nextCursor.",
        "Leave nextCursor out of skills/get results.",
        conformance=("sep-2640-skills-get-no-cursor",),
        section="Retrieval via skills/get",
        says="MUST",
    ),
    Rule(
        "SW-GET-006",
        "get-cache-attributes",
        "error",
        "(stable text) skills/get results carry ttlMs and cacheScope, which a cacheable "
        "result requires",
        "On protocol 2026-07-28, a skills/get result carries ttlMs (an integer >= 0) and "
        'cacheScope ("public" or "private").',
        'Add "ttlMs" and "cacheScope" to skills/get results on 2026-07-28.',
        conformance=("sep-2640-skills-get-cache-attributes",),
        section="Retrieval via skills/get",
        says="MUST",
    ),
)


#: Instructions.
INSTRUCTIONS: tuple[Rule, ...] = (
    Rule(
        "SW-INSTR-001",
        "instructions-uris-are-skills",
        "warning",
        '"A server MAY direct the agent to specific skill URIs from its instructions", '
        "which a host confirms with skills/get (stable text); a URI naming no skill "
        "points nowhere",
        "Every .../SKILL.md URI in the server's instructions gets a valid entry from skills/get.",
        "Name only skills you serve in instructions, or serve them with skills/get.",
        section="Pointer from Server Instructions",
    ),
)
