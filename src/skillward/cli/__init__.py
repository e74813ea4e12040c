"""The ``skillward`` command: its grammar, and the commands on local state and on servers.

Importing it imports little beyond argparse: each command imports what it uses when it
runs.

May import: anything.
"""

from skillward.cli.command import main

__all__ = ["main"]
