"""Registering: ``servers add``, ``servers list`` and ``servers remove``.

A server registered once is connected by every command (``list``, ``load``,
``gateway``...): these commands change the ``servers.json`` they read, in the user
config directory, or the file ``--config`` names (``edge/_serversfile.py``). They
connect no server, and import neither ``mcp`` nor the host.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from skillward.cli._context import EXIT_OK, add_command

if TYPE_CHECKING:
    from skillward.cli._context import Commands
    from skillward.edge._serversfile import Entry
    from skillward.terminal.prompts import Terminal

__all__ = ["add_commands", "servers_add", "servers_list", "servers_remove"]


def add_commands(commands: Commands) -> None:
    servers = commands.add_parser(
        "servers", help="register servers once, in servers.json, for every command"
    )
    actions = servers.add_subparsers(dest="servers_action", metavar="ACTION", required=True)
    add = add_command(
        actions,
        "add",
        servers_add,
        help="register a server under LABEL: a URL, or a command line",
        description="Add a server to servers.json in the user config directory (or the "
        "file --config names), which every command reads. A URL is reached over "
        "streamable HTTP; anything else is a command line for stdio, one shell-quoted "
        "argument or the words after --. Values are stored as given: write secrets as "
        "${VAR}, in single quotes, to take them from the environment when a command "
        "reads the file.",
    )
    add.add_argument("label", metavar="LABEL")
    add.add_argument("target", metavar="CMD_OR_URL", nargs="+")
    for flag, kind, what in (
        ("--header", _header, "an HTTP header sent with every request"),
        ("--env", _pair, "an environment variable for a stdio server"),
    ):
        add.add_argument(
            flag,
            action="append",
            default=[],
            type=kind,
            metavar="NAME=VALUE",
            help=f"{what} (repeatable); its value is never shown",
        )
    add.add_argument(
        "--replace", action="store_true", help="replace the server already under that label"
    )
    add_command(
        actions, "list", servers_list, help="the registered servers, header and env values masked"
    )
    remove = add_command(actions, "remove", servers_remove, help="unregister a server")
    remove.add_argument("label", metavar="LABEL")


def _pair(text: str, separators: str = "=") -> tuple[str, str]:
    """``NAME=VALUE``, cut at the first separator. The error never quotes it: the value
    is a secret."""
    cut = min((at for at in map(text.find, separators) if at > 0), default=-1)
    if cut < 0:
        raise argparse.ArgumentTypeError("expected NAME=VALUE (the value is not shown)")
    return text[:cut], text[cut + 1 :].lstrip() if text[cut] == ":" else text[cut + 1 :]


def _header(text: str) -> tuple[str, str]:
    """``NAME=VALUE``, or ``NAME: VALUE`` as curl and other hosts write headers (a
    header's name holds neither ``=`` nor ``:``)."""
    return _pair(text, "=:")


def _file(args: argparse.Namespace) -> Path:
    from skillward.edge._dirs import default_servers_file

    return args.config if args.config is not None else default_servers_file()


def _row(entry: Entry) -> str:
    """One entry on one line, escaped; values masked."""
    from skillward.core.errors import printable
    from skillward.edge._serversfile import MASK

    parts = [entry.label or entry.name, entry.target or "(no command or url)"]
    if entry.headers:
        parts.append("headers: " + ", ".join(f"{name}: {MASK}" for name in entry.headers))
    if entry.env:
        parts.append("env: " + ", ".join(f"{name}={MASK}" for name in entry.env))
    if entry.disabled:
        parts.append("(disabled)")
    if entry.problem is not None:
        parts.append(f"(skipped: {entry.problem})")
    return printable("  ".join(parts), limit=4000)


def servers_add(args: argparse.Namespace, terminal: Terminal) -> int:
    import shlex

    from skillward.core.errors import ConfigError
    from skillward.core.labels import normalise_label
    from skillward.edge._serversfile import add_server, new_entry, read_entries

    label = normalise_label(args.label)
    target = args.target[0] if len(args.target) == 1 else shlex.join(args.target)
    for option, pairs in (("--header", args.header), ("--env", args.env)):
        names = [name.lower() if option == "--header" else name for name, _ in pairs]
        if len(set(names)) < len(names):
            raise ConfigError(f"server {label!r}: the same {option} name is given twice")
    entry = new_entry(label, target, headers=dict(args.header), env=dict(args.env))
    path = _file(args)
    replaced = add_server(path, label, entry, replace=args.replace)
    (added,) = [e for e in read_entries(path) if e.label == label]
    if args.json:
        terminal.json({"file": str(path), "replaced": replaced, "server": added.to_json()})
        return EXIT_OK
    terminal.note(f"{'replaced' if replaced else 'added'} in {path}:")
    terminal.text(_row(added))
    return EXIT_OK


def servers_list(args: argparse.Namespace, terminal: Terminal) -> int:
    from skillward.edge._serversfile import read_entries

    path = _file(args)
    entries = read_entries(path, must_exist=args.config is not None)
    if args.json:
        terminal.json({"file": str(path), "servers": [e.to_json() for e in entries]})
        return EXIT_OK
    terminal.note(f"servers file: {path}")
    for entry in entries:
        terminal.text(_row(entry))
    if not entries:
        terminal.note("(none; add one with `skillward servers add LABEL CMD_OR_URL`)")
    return EXIT_OK


def servers_remove(args: argparse.Namespace, terminal: Terminal) -> int:
    from skillward.core.labels import normalise_label
    from skillward.edge._serversfile import remove_server

    label = normalise_label(args.label)
    path = _file(args)
    names = remove_server(path, label)
    if args.json:
        terminal.json({"file": str(path), "removed": label, "names": names})
    else:
        terminal.note(f"removed server {label!r} from {path}")
    return EXIT_OK
