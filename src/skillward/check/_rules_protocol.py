"""The rules of the protocol a server speaks: declaring the extension, the host's message
caps, ``skills/list`` paging, ``skills/get``, and the skill URIs its instructions name."""

from __future__ import annotations

from skillward.check._rule import SEP, Rule

__all__ = ["CAPABILITY", "GET", "INSTRUCTIONS", "LISTING", "WIRE"]


#: Capability.
CAPABILITY: tuple[Rule, ...] = (
    Rule(
        "SW-CAP-001",
        "extension-declared",
        "error",
        f"{SEP} §Capability Declaration",
        "The server declares the io.modelcontextprotocol/skills extension in its "
        "capabilities (nothing else is checked without it).",
        'Declare capabilities.extensions["io.modelcontextprotocol/skills"] = {}.',
        inspector=("skills_unsupported",),
    ),
    Rule(
        "SW-CAP-002",
        "settings-inline",
        "error",
        f"{SEP} §Capability Declaration; SEP-2133 (no settings envelope)",
        "Extension settings sit directly under the identifier: no config, specVersion, "
        "stability or id envelope.",
        'Write {"directoryRead": true}, not {"config": {"directoryRead": true}}.',
        conformance=("sep-2640-capability-declaration-inline",),
    ),
    Rule(
        "SW-CAP-003",
        "directory-read-boolean",
        "error",
        f"{SEP} §Capability Declaration (directoryRead is a boolean); hosts refuse it",
        "directoryRead, when present, is a JSON boolean.",
        'Write "directoryRead": true or false (not a string or null).',
    ),
    Rule(
        "SW-CAP-004",
        "requires-resources",
        "error",
        f"{SEP} (stable text): a server declaring the extension MUST declare resources",
        "A server that declares the extension also declares the resources capability.",
        "Declare capabilities.resources (serve resources/read for the skill files).",
        conformance=("sep-2640-capability-requires-resources",),
    ),
    Rule(
        "SW-CAP-005",
        "commits-to-methods",
        "error",
        f"{SEP} §Capability Declaration: declaring the extension commits to skills/list "
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
)


#: Wire.
WIRE: tuple[Rule, ...] = (
    Rule(
        "SW-WIRE-001",
        "within-host-caps",
        "error",
        "hosts refuse it (skillward's Limits: 24 MiB and 262,144 JSON values a message; "
        "2 MiB a skills/get result)",
        "Every message fits the host's caps.",
        "Keep each result small: page skills/list, and keep files within their listed size.",
    ),
)


#: Skills/list.
LISTING: tuple[Rule, ...] = (
    Rule(
        "SW-LIST-001",
        "list-result-shape",
        "error",
        f"{SEP} §Enumeration via skills/list (MUST implement; skills is required)",
        "skills/list answers with an object whose skills is an array (it may be empty).",
        'Answer {"skills": [...]}.',
        conformance=("sep-2640-skills-list-implemented",),
    ),
    Rule(
        "SW-LIST-002",
        "pagination-ends",
        "error",
        f"{SEP} §Enumeration via skills/list (pagination mirrors the base protocol); "
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
        f"{SEP} §Enumeration via skills/list (an entry is atomic); the TypeScript "
        "SkillsClient refuses it",
        "No skill URI is listed twice, on one page or across pages.",
        "List each skill once.",
        conformance=("sep-2640-skills-list-entry-atomic",),
    ),
    Rule(
        "SW-LIST-006",
        "list-cache-attributes",
        "error",
        f"{SEP} §Enumeration via skills/list: on 2026-07-28 the result carries ttlMs "
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
        f"{SEP} §Names: within a listing, names SHOULD be unique",
        "No two listed skills share a name.",
        "Rename one of the skills (its final path segment and frontmatter name).",
        conformance=("sep-2640-names-should-be-unique",),
        inspector=("duplicate-name",),
    ),
    Rule(
        "SW-LIST-008",
        "look-alike-paths",
        "warning",
        f"{SEP} §Security Implications: name collisions are an impersonation surface",
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
)


#: Skills/get.
GET: tuple[Rule, ...] = (
    Rule(
        "SW-GET-001",
        "get-answers",
        "error",
        f"{SEP} §Retrieval via skills/get: a server MUST answer for every skill it serves",
        "skills/get answers for every listed skill.",
        "Serve skills/get for every skill in the listing.",
        conformance=("sep-2640-skills-get-implemented",),
    ),
    Rule(
        "SW-GET-002",
        "get-echoes-uri",
        "error",
        f"{SEP} §Retrieval via skills/get (the entry for the skill named); hosts refuse another",
        "result.skill.uri equals the URI asked for.",
        "Answer with the entry of the skill asked for.",
        conformance=("sep-2640-skills-get-entry-shape",),
    ),
    Rule(
        "SW-GET-003",
        "get-matches-list",
        "warning",
        f"{SEP} §Retrieval via skills/get: identical in shape and meaning to the listing's entry",
        "Asked back to back, skills/get and skills/list give the same frontmatter and "
        "the same files and digests (a host would otherwise revoke its approval).",
        "Build both answers from one snapshot of the skill.",
    ),
    Rule(
        "SW-GET-004",
        "get-unknown-invalid-params",
        "error",
        f"{SEP} §Retrieval via skills/get: a URI that is not a served skill MUST get -32602",
        "skills/get of a URI that names no skill (a made-up one, or a supporting file) "
        "answers -32602.",
        "Answer error -32602 (Invalid params) for URIs that are not skills.",
        conformance=("sep-2640-skills-get-unknown-uri-invalid-params",),
    ),
    Rule(
        "SW-GET-005",
        "get-no-cursor",
        "error",
        f"{SEP} §Retrieval via skills/get: the result carries no pagination cursor",
        "A skills/get result has no nextCursor.",
        "Leave nextCursor out of skills/get results.",
        conformance=("sep-2640-skills-get-no-cursor",),
    ),
    Rule(
        "SW-GET-006",
        "get-cache-attributes",
        "error",
        f"{SEP} (stable text): skills/get results carry ttlMs and cacheScope",
        "On protocol 2026-07-28, a skills/get result carries ttlMs (an integer >= 0) and "
        'cacheScope ("public" or "private").',
        'Add "ttlMs" and "cacheScope" to skills/get results on 2026-07-28.',
        conformance=("sep-2640-skills-get-cache-attributes",),
    ),
)


#: Instructions.
INSTRUCTIONS: tuple[Rule, ...] = (
    Rule(
        "SW-INSTR-001",
        "instructions-uris-are-skills",
        "error",
        f"{SEP} (stable text): a host given only a skill URI, as in instructions, confirms "
        "it with skills/get",
        "Every .../SKILL.md URI in the server's instructions gets a valid entry from skills/get.",
        "Name only skills you serve in instructions, or serve them with skills/get.",
    ),
)
