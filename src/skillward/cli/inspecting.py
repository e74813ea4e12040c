"""Inspecting: ``list``, ``show``, ``load`` and ``read``.

Each connects the servers given and looks at what they serve, verified: the catalog, a
skill's entry, its activation exactly as the model would get it, a supporting file.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from skillward.cli._context import EXIT_OK, add_command, over_host

if TYPE_CHECKING:
    from skillward.cli._context import Commands
    from skillward.cli._host import Connected
    from skillward.core.registry import SkillRecord

__all__ = ["add_commands", "list_", "load", "read", "show"]


def add_commands(commands: Commands) -> None:
    add_command(commands, "list", list_, help="the catalog across origins, with collisions")
    show_ = add_command(
        commands, "show", show, help="a skill's entry: frontmatter and files (fetches nothing)"
    )
    show_.add_argument("ref", metavar="REF", help="NAME, LABEL:NAME, LABEL:PATH or LABEL:URI")
    load_ = add_command(
        commands,
        "load",
        load,
        help="verify and print a skill's activation exactly as the model would get it",
    )
    load_.add_argument("ref", metavar="REF")
    load_.add_argument(
        "--approve-once",
        action="store_true",
        help="approve loading this one skill now, without a prompt",
    )
    read_ = add_command(
        commands, "read", read, help="a supporting file, verified against the skill's entry"
    )
    read_.add_argument("ref", metavar="REF")
    read_.add_argument("path", metavar="PATH", help="path relative to the skill root")


@over_host
async def list_(args: argparse.Namespace, on: Connected) -> int:
    from skillward.cli._host import origin_summaries, show_catalog

    host = on.host
    if not args.json:
        show_catalog(host, on.terminal, on.failed)
        return EXIT_OK
    # catalog() lists the listed records in registry order, so the two line up.
    records = [record for record in host.registry.records() if record.listed]
    skills = [
        {
            "ref": item.ref,
            "qualified": host.registry.qualified_ref(record),
            "name": item.name,
            "description": item.description,
            "origin": {
                "kind": item.origin.kind,
                "label": item.origin.label,
                "reported_name_unverified": item.origin.detail if item.origin.is_mcp else None,
            },
        }
        for item, record in zip(host.catalog(), records, strict=True)
    ]
    on.terminal.json(
        {
            "skills": skills,
            "servers": origin_summaries(host, on.failed)[1],
            "collisions": [
                {
                    "kind": c.kind,
                    "subject": c.subject,
                    "members": list(c.members),
                    "message": c.message,
                }
                for c in host.collisions()
            ],
            "declined": [
                {"origin": d.origin.label, "error": str(d.error)} for d in host.declined()
            ],
        }
    )
    return EXIT_OK


@over_host
async def show(args: argparse.Namespace, on: Connected) -> int:
    record = await on.host.lookup(args.ref)
    qualified = on.host.registry.qualified_ref(record)
    if args.json:
        on.terminal.json(_entry_json(record, qualified))
    else:
        on.terminal.entry(record, qualified)
    return EXIT_OK


def _entry_json(record: SkillRecord, qualified: str) -> dict[str, object]:
    entry = record.entry
    return {
        "qualified": qualified,
        "name": record.name,
        "description": record.description,
        "origin": {
            "kind": record.origin.kind,
            "label": record.origin.label,
            "reported_name_unverified": record.origin.detail if record.origin.is_mcp else None,
        },
        "listed": record.listed,
        "uri": entry.uri if entry else None,
        "directory": record.directory,
        "frontmatter": entry.frontmatter.as_dict() if entry else None,
        "resources": (
            "dynamic"
            if entry and entry.is_dynamic
            else [
                {"uri": item.uri, "size": item.size, "digest": item.digest}
                for item in (entry.manifest.values() if entry else ())
            ]
        ),
    }


@over_host
async def load(args: argparse.Namespace, on: Connected) -> int:
    record = await on.host.lookup(args.ref)
    if on.approver.approve_once:
        on.approver.approve_only(record.key)
    activation = await on.host.activate(args.ref)
    if args.json:
        on.terminal.json(
            {
                **activation.block.to_json(),
                "requested_tools": list(activation.requested_tools),
                "granted_tools": list(activation.granted_tools),
                "tools_refused": activation.tools_refused,
            }
        )
        return EXIT_OK
    on.terminal.block(activation.block, as_json=False)
    if activation.tools_refused is not None:
        on.terminal.note(
            f"requested {len(activation.requested_tools)} tools; none can be granted: "
            f"{activation.tools_refused}"
        )
    elif activation.requested_tools:
        on.terminal.grants(activation.granted_tools, activation.requested_tools)
    return EXIT_OK


@over_host
async def read(args: argparse.Namespace, on: Connected) -> int:
    block = await on.host.read_file(args.ref, args.path)
    on.terminal.block(block, as_json=args.json)
    return EXIT_OK
