"""Server labels: the host's own name for each server, and how config files spell it.

A label is 1-64 characters of ``a-z``, ``0-9`` and single hyphens. It, never a server's
self-reported name, is the server's identity everywhere in skillward. Pure: text in, a
label out or :class:`~skillward.core.errors.ConfigError`.
"""

from __future__ import annotations

import re

from skillward.core.errors import ConfigError

__all__ = ["check_label", "normalise_label"]

_LABEL_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")
_MAX_LABEL = 64
# Names real mcpServers files use: ASCII letters and digits, with spaces, '_', '.', '-'.
# Never ':' or '/' (references and file names) and never a control character.
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.\-]*\Z")
_SEPARATORS = re.compile(r"[ _.\-]+")


def check_label(label: str) -> str:
    """Return ``label`` if it is a valid server label, else raise ConfigError."""
    if not isinstance(label, str) or len(label) > _MAX_LABEL or not _LABEL_RE.match(label):
        raise ConfigError(
            f"server label {label!r} must be 1-{_MAX_LABEL} characters of a-z, 0-9 and single "
            "hyphens (for example 'acme-docs')"
        )
    return label


def normalise_label(name: str) -> str:
    """The label for a server name as config files spell it.

    Lower case, and every run of spaces, ``_``, ``.`` and ``-`` becomes one hyphen:
    ``brave_search`` is ``brave-search`` and ``My Server`` is ``my-server``. Two names
    with the same label are the same server to skillward, so labels stay unique without
    regard to case. Anything else (``:``, ``/``, control or non-ASCII characters) is
    refused with ConfigError.
    """
    if not isinstance(name, str) or len(name) > 4 * _MAX_LABEL or not _NAME_RE.match(name):
        raise ConfigError(
            f"server label {name!r} must be letters, digits, spaces, '_', '.' and '-', "
            "starting with a letter or digit"
        )
    return check_label(_SEPARATORS.sub("-", name).strip("-").lower())
