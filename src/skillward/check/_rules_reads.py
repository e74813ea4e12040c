"""The rules of what a server serves: ``resources/read`` of each file,
``resources/directory/read``, and the resources' metadata."""

from __future__ import annotations

from skillward.check._rule import SEP, Rule

__all__ = ["DIRECTORIES", "METADATA", "READS"]


#: Reads.
READS: tuple[Rule, ...] = (
    Rule(
        "SW-READ-001",
        "file-readable",
        "error",
        f"{SEP} §Skill Format (every skill MUST contain a SKILL.md); §Resources (the "
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
        f"{SEP} §Resources: a read whose length differs from size is a verification failure",
        "The bytes read (UTF-8 of text, or the decoded blob) are as many as the listed size.",
        "List the size of the exact bytes you serve (a BOM and CRLF line ends count).",
        inspector=("mismatch",),
    ),
    Rule(
        "SW-READ-006",
        "digest-matches",
        "error",
        f"{SEP} §Integrity and verification: hosts MUST verify, and MUST NOT use content "
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
)


#: Directory reads.
DIRECTORIES: tuple[Rule, ...] = (
    Rule(
        "SW-DIR-001",
        "dir-method-works",
        "error",
        f"{SEP} §Directory Listing: a server declaring directoryRead MUST support it for "
        "every directory of the skills it serves",
        "resources/directory/read works on every skill root and every subdirectory of it.",
        "Answer directory reads for skill roots and their subdirectories.",
        conformance=("sep-2640-directory-read-method-registered",),
    ),
    Rule(
        "SW-DIR-002",
        "dir-prefix-directories",
        "warning",
        f"{SEP} §Directory Listing: every directory within the skill namespaces "
        "(read here as including organisational prefixes)",
        "resources/directory/read also works on the prefix directories above skill roots "
        "(skill://acme for skill://acme/billing/refunds).",
        "Answer directory reads for prefix directories too.",
    ),
    Rule(
        "SW-DIR-003",
        "dir-result-shape",
        "error",
        f"{SEP} §Directory Listing (the same Resource objects resources/list returns)",
        "The result's resources is an array of Resource objects, each with a string uri "
        "and name; nextCursor, when present, is a string.",
        "Answer with Resource objects for the direct children.",
        conformance=("sep-2640-directory-read-result-resources-shape",),
    ),
    Rule(
        "SW-DIR-004",
        "dir-direct-children",
        "error",
        f"{SEP} §Directory Listing: every direct child; the listing is not recursive",
        "Each child is a direct child of the directory read, listed once.",
        "List direct children only; list subdirectories as directory resources.",
    ),
    Rule(
        "SW-DIR-005",
        "dir-subdir-mimetype",
        "error",
        f'{SEP} §Directory Listing: subdirectories are listed with mimeType "inode/directory"',
        'A child that is a directory has mimeType "inode/directory"; a file does not.',
        'Mark subdirectories with "inode/directory".',
        conformance=("sep-2640-directory-read-subdir-mimetype",),
    ),
    Rule(
        "SW-DIR-006",
        "dir-agrees-with-manifest",
        "error",
        f"{SEP} §Directory reads and the held entry (a listed file absent from a directory "
        "read is one the server no longer serves)",
        "Walking a skill's directories finds every file its resources lists.",
        "Serve directory reads from the same snapshot as the listing.",
    ),
    Rule(
        "SW-DIR-007",
        "dir-invalid-params",
        "error",
        f"{SEP} §Directory Listing: a URI that is not a directory MUST get -32602",
        "A directory read of a file (SKILL.md) or of an unknown URI answers -32602.",
        "Answer error -32602 for URIs that are not directories.",
        conformance=("sep-2640-directory-read-invalid-params",),
    ),
    Rule(
        "SW-DIR-008",
        "dir-pagination",
        "error",
        f"{SEP} §Directory Listing (pagination mirrors resources/list); hosts refuse a "
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
)


#: Resource metadata.
METADATA: tuple[Rule, ...] = (
    Rule(
        "SW-META-001",
        "skillmd-mimetype",
        "warning",
        f"{SEP} §Resource Metadata: mimeType SHOULD be text/markdown",
        "SKILL.md is served with mimeType text/markdown.",
        'Set mimeType "text/markdown" on SKILL.md.',
        conformance=("sep-2640-skillmd-mimetype",),
    ),
    Rule(
        "SW-META-002",
        "skillmd-resource-name",
        "warning",
        f"{SEP} §Resource Metadata: name SHOULD be the frontmatter name",
        "SKILL.md's entry in resources/list has name equal to the frontmatter name.",
        "Set the resource's name from the frontmatter.",
        conformance=("sep-2640-skillmd-metadata-name",),
    ),
    Rule(
        "SW-META-003",
        "skillmd-resource-description",
        "warning",
        f"{SEP} §Resource Metadata: description SHOULD be the frontmatter description",
        "SKILL.md's entry in resources/list has description equal to the frontmatter description.",
        "Set the resource's description from the frontmatter.",
        conformance=("sep-2640-skillmd-metadata-description",),
    ),
    Rule(
        "SW-META-004",
        "meta-prefix",
        "warning",
        f"{SEP} §Resource Metadata: _meta keys SHOULD use a reverse-domain prefix "
        "(io.modelcontextprotocol.skills/ for the extension's)",
        "_meta keys on skill resources have a reverse-domain prefix (example.com/key).",
        "Prefix your _meta keys with a domain you own.",
        conformance=("sep-2640-meta-prefix",),
    ),
)
