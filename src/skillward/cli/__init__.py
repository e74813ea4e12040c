"""The ``skillward`` command: its grammar, and its commands in groups, one module each
(``inspecting``, ``approving``, ``administering``, ``demonstrating``, ``serving``).

Importing it imports little beyond argparse: each command imports what it uses when it
runs.

May import: anything.
"""

from skillward.cli._main import main

__all__ = ["main"]
