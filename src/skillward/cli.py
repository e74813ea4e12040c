"""The ``skillward`` command."""

from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="skillward")
    parser.parse_args(argv)
    return 0
