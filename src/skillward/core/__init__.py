"""The verifier core: pure, no I/O.

Bytes and text in; frozen, verified objects out, or a typed error from
:mod:`skillward.core.errors`. No module here opens a file, a socket or a process, or
imports ``os``, ``pathlib``, ``anyio`` or ``mcp``.

May import: ``core`` only.
"""
