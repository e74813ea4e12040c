"""Skill trees on disk for tests, with the awkward bytes real skills contain."""

from __future__ import annotations

from pathlib import Path

CRLF_TEXT = b"line one\r\nline two\r\n"
BOM_TEXT = b"\xef\xbb\xbfstarts with a byte order mark\n"
BINARY = bytes(range(256)) * 4


def skill_md(name: str, description: str = "A test skill", extra: str = "") -> bytes:
    return (
        f"---\nname: {name}\ndescription: {description}\n{extra}---\n# {name}\n\nBody.\n".encode()
    )


def write(root: Path, relative: str, data: bytes) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def build_tree(root: Path) -> dict[str, bytes]:
    """A tree of four skills (one nested, one in a prefix); returns every file by URI."""
    files = {
        "skill://git-workflow/SKILL.md": skill_md("git-workflow", "Git conventions"),
        "skill://git-workflow/notes/crlf.txt": CRLF_TEXT,
        "skill://git-workflow/notes/bom.md": BOM_TEXT,
        "skill://git-workflow/assets/blob.bin": BINARY,
        "skill://acme/billing/refunds/SKILL.md": skill_md(
            "refunds", "Refund policy", "metadata:\n  version: '2.0'\n"
        ),
        "skill://acme/billing/refunds/templates/email.md": b"Hello {{name}}\n",
        "skill://acme/billing/refunds/partial/SKILL.md": skill_md("partial", "Partial refunds"),
        "skill://acme/billing/refunds/partial/steps.md": b"1. Check\n",
        "skill://hidden-skill/SKILL.md": skill_md("hidden-skill", "Served but not listed"),
    }
    for uri, data in files.items():
        write(root, uri.removeprefix("skill://"), data)
    return files
