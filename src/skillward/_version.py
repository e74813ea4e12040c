"""The installed version of skillward, read once from the package metadata."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("skillward")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
