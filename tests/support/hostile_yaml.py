"""Hostile SKILL.md frontmatter, shared by the tests and the benchmark."""

from __future__ import annotations


def md(block: str, body: str = "# Body\n") -> bytes:
    return f"---\n{block}---\n{body}".encode()


def _billion_laughs() -> bytes:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        refs = ",".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return md("\n".join(lines) + "\n")


#: name -> (SKILL.md bytes, what the refusal says, as a regex)
HOSTILE: dict[str, tuple[bytes, str]] = {
    "billion-laughs": (_billion_laughs(), "anchors"),
    "alias-without-anchor": (md("a: *nothing\n"), "aliases|not valid YAML"),
    "2-MB-frontmatter": (md("description: " + "x" * (2 * 1024 * 1024) + "\n"), "too large"),
    "2-MB-unterminated": (b"---\n" + b"a: b\n" * 400_000, "too large|no closing"),
    "5000-deep-sequences": (md("a: " + "[" * 5000 + "]" * 5000 + "\n"), "nests deeper"),
    "5000-deep-mappings": (md("a: " + "{b: " * 5000 + "c" + "}" * 5000 + "\n"), "nests deeper"),
    "python-object-tag": (
        md("name: !!python/object/apply:os.system ['echo pwned']\n"),
        "tags are not allowed",
    ),
    "10000-nodes": (md("a: [" + ",".join(["1"] * 10_000) + "]\n"), "more than 4096 nodes"),
    "5000-digit-numeral": (md("a: " + "9" * 5000 + "\n"), "numeral longer"),
    "invalid-utf8": (b"---\nname: \xc3\x28\n---\n", "UTF-8"),
    "dashes-inside-a-value-unclosed": (b"---\nname: x ---\n", "no closing"),
}

NORMAL = md("name: refunds\ndescription: Process refunds\nmetadata:\n  version: '1.0'\n")
