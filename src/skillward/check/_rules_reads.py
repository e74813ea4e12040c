"""The rules of what a server serves: ``resources/read`` of each file,
``resources/directory/read``, and the resources' metadata."""

from __future__ import annotations

from skillward.check._rule import Rule

__all__ = ["DIRECTORIES", "METADATA", "READS"]


#: Reads.
READS: tuple[Rule, ...] = (
    Rule(
        "SW-READ-001",
        "file-readable",
        "error",
        '"Every skill MUST contain a SKILL.md file at its root"; the files resources '
        "lists are the skill's, which hosts read with resources/read",
        "resources/read of every listed file succeeds.",
        "Serve every file the entry lists.",
        conformance=("sep-2640-skillmd-required",),
        inspector=("read-error",),
        section="Skill Format",
        says="MUST",
    ),
    Rule(
        "SW-READ-002",
        "skillmd-as-text",
        "error",
        '"Every skill MUST contain a SKILL.md file", as the conformance suite reads it: '
        "one served only as a blob is not retrievable",
        "SKILL.md is served as a text content item.",
        "Send SKILL.md as text (it is UTF-8 Markdown).",
        conformance=("sep-2640-skillmd-required",),
        section="Skill Format",
        says="MUST",
    ),
    Rule(
        "SW-READ-003",
        "read-single-item",
        "warning",
        '"Skill files are read via the standard resources/read method"; silent on the '
        "number of items, and skillward refuses a read of one file that is not one item "
        "for that URI",
        "A read of one file holds exactly one content item, for the URI asked for.",
        "Answer each read with one item whose uri is the one asked for.",
        inspector=("read-error",),
        section="Reading",
    ),
    Rule(
        "SW-READ-004",
        "read-encoding",
        "error",
        '"Skill files are read via the standard resources/read method", whose schema '
        "makes text a string and a blob base64",
        "Text is valid Unicode, and a blob is strict, padded base64.",
        "Send binary files as standard base64 blobs.",
        inspector=("read-error",),
        section="Reading",
        says="MUST",
    ),
    Rule(
        "SW-READ-005",
        "size-matches",
        "error",
        'size is "the length in bytes of the file\'s raw content" (MUST carry); "A read '
        "whose byte length differs from the entry's size is a verification failure\"",
        "The bytes read (UTF-8 of text, or the decoded blob) are as many as the listed size.",
        "List the size of the exact bytes you serve (a BOM and CRLF line ends count).",
        inspector=("mismatch",),
        section="Resources",
        says="MUST",
    ),
    Rule(
        "SW-READ-006",
        "digest-matches",
        "error",
        '"Each entry in a skill\'s resources carries the digest of the file at its uri"; '
        "hosts MUST verify it and MUST NOT use content that does not match",
        "The SHA-256 of the bytes read equals the listed digest.",
        "Hash the exact bytes you serve, and serve the bytes you hashed.",
        inspector=("mismatch",),
        section="Integrity and verification",
        says="MUST",
    ),
    Rule(
        "SW-READ-007",
        "unknown-resource-not-empty",
        "error",
        "skill files are read with the base protocol's resources/read, where (SEP-2164, "
        "2026-07-28) an unknown resource MUST NOT get empty contents",
        "resources/read of a URI the server does not serve is not answered with an "
        "empty contents array.",
        "Answer error -32602 for an unknown resource.",
        conformance=("sep-2164-no-empty-contents",),
        section="Reading",
        says="MUST",
    ),
    Rule(
        "SW-READ-008",
        "unknown-resource-code",
        "warning",
        "skill files are read with the base protocol's resources/read, where (SEP-2164) "
        'an unknown resource SHOULD get -32602, "the same code resources/read uses for '
        'unknown resources"',
        "resources/read of a URI the server does not serve answers -32602.",
        "Answer error -32602 (Invalid params) for an unknown resource.",
        conformance=("sep-2164-error-code",),
        section="Reading",
        says="SHOULD",
    ),
)


#: Directory reads.
DIRECTORIES: tuple[Rule, ...] = (
    Rule(
        "SW-DIR-001",
        "dir-method-works",
        "error",
        '"A server that declares directoryRead MUST support the method for every '
        'directory within the skill namespaces it serves as individual files"',
        "resources/directory/read works on every skill root and every subdirectory of it.",
        "Answer directory reads for skill roots and their subdirectories.",
        conformance=("sep-2640-directory-read-method-registered",),
        section="Directory Listing",
        says="MUST",
    ),
    Rule(
        "SW-DIR-002",
        "dir-prefix-directories",
        "warning",
        '"every directory level is a directory resource: the skill root ... and each '
        'subdirectory"; whether the prefix directories above skill roots are too, the '
        "SEP does not say",
        "resources/directory/read also works on the prefix directories above skill roots "
        "(skill://acme for skill://acme/billing/refunds).",
        "Answer directory reads for prefix directories too.",
        section="Directory Listing",
    ),
    Rule(
        "SW-DIR-003",
        "dir-result-shape",
        "error",
        'the result carries "the same Resource objects that resources/list returns, with '
        'the same nextCursor pagination contract"',
        "The result's resources is an array of Resource objects, each with a string uri "
        "and name; nextCursor, when present, is a string.",
        "Answer with Resource objects for the direct children.",
        conformance=("sep-2640-directory-read-result-resources-shape",),
        section="Directory Listing",
        says="MUST",
    ),
    Rule(
        "SW-DIR-004",
        "dir-direct-children",
        "error",
        '"The result contains every direct child of the directory ... The listing is not '
        'recursive"',
        "Each child is a direct child of the directory read, listed once.",
        "List direct children only; list subdirectories as directory resources.",
        section="Directory Listing",
        says="MUST",
    ),
    Rule(
        "SW-DIR-005",
        "dir-subdir-mimetype",
        "error",
        '"subdirectories listed as directory resources (mimeType: "inode/directory")"',
        'A child that is a directory has mimeType "inode/directory"; a file does not.',
        'Mark subdirectories with "inode/directory".',
        conformance=("sep-2640-directory-read-subdir-mimetype",),
        section="Directory Listing",
        says="MUST",
    ),
    Rule(
        "SW-DIR-006",
        "dir-agrees-with-manifest",
        "warning",
        '"The two views can disagree": a listed file absent from a directory read "is a '
        'file the server no longer serves"; asked back to back, they should not',
        "Walking a skill's directories finds every file its resources lists.",
        "Serve directory reads from the same snapshot as the listing.",
        section="Directory reads and the held entry",
    ),
    Rule(
        "SW-DIR-007",
        "dir-invalid-params",
        "error",
        '"If the URI does not exist, or exists but is not a directory resource, the server '
        'MUST return error -32602 (Invalid params)"',
        "A directory read of a file (SKILL.md) or of an unknown URI answers -32602.",
        "Answer error -32602 for URIs that are not directories.",
        conformance=("sep-2640-directory-read-invalid-params",),
        section="Directory Listing",
        says="MUST",
    ),
    Rule(
        "SW-DIR-008",
        "dir-pagination",
        "error",
        '"Pagination mirrors resources/list": a nextCursor names the next page, so cursors '
        "that repeat or never end cannot be read (skillward reads at most 10,000 "
        "children, 4 MiB)",
        "Following nextCursor ends, with no repeated cursor, within the host's bounds "
        "(10,000 children, 4 MiB).",
        "Return nextCursor only when another page follows.",
        conformance=("sep-2640-directory-read-pagination",),
        section="Directory Listing",
        says="MUST",
    ),
    Rule(
        "SW-DIR-009",
        "dir-cache-attributes",
        "warning",
        "silent on caching attributes of a directory read (it names only resources/list's "
        "pagination contract); the Inspector and the TypeScript SDK refuse results "
        "without them",
        "On protocol 2026-07-28, a directory read carries ttlMs and cacheScope.",
        'Add "ttlMs" and "cacheScope" to resources/directory/read results on 2026-07-28.',
        section="Directory Listing",
    ),
)


#: Resource metadata.
METADATA: tuple[Rule, ...] = (
    Rule(
        "SW-META-001",
        "skillmd-mimetype",
        "warning",
        '"mimeType SHOULD be text/markdown"',
        "SKILL.md is served with mimeType text/markdown.",
        'Set mimeType "text/markdown" on SKILL.md.',
        conformance=("sep-2640-skillmd-mimetype",),
        section="Resource Metadata",
        says="SHOULD",
    ),
    Rule(
        "SW-META-002",
        "skillmd-resource-name",
        "warning",
        '"name SHOULD be set from the name field of the SKILL.md YAML frontmatter"',
        "SKILL.md's entry in resources/list has name equal to the frontmatter name.",
        "Set the resource's name from the frontmatter.",
        conformance=("sep-2640-skillmd-metadata-name",),
        section="Resource Metadata",
        says="SHOULD",
    ),
    Rule(
        "SW-META-003",
        "skillmd-resource-description",
        "warning",
        '"description SHOULD be set from the description field of the SKILL.md YAML frontmatter"',
        "SKILL.md's entry in resources/list has description equal to the frontmatter description.",
        "Set the resource's description from the frontmatter.",
        conformance=("sep-2640-skillmd-metadata-description",),
        section="Resource Metadata",
        says="SHOULD",
    ),
    Rule(
        "SW-META-004",
        "meta-prefix",
        "warning",
        '"When _meta keys are used for skill resources, implementations SHOULD use the '
        'io.modelcontextprotocol.skills/ reverse-domain prefix"; others use their own',
        "_meta keys on skill resources have a reverse-domain prefix (example.com/key).",
        "Prefix your _meta keys with a domain you own.",
        conformance=("sep-2640-meta-prefix",),
        section="Resource Metadata",
        says="SHOULD",
    ),
)
