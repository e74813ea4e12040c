"""The content cache: the seam the host depends on, and the disk cache behind it.

The host imports :mod:`skillward.cache.seam` only; the disk cache (``_disk``, over its
packs, index and files in ``_packs``, ``_index`` and ``_files``) is chosen by whoever
builds the host.

May import: ``core``, ``edge`` and ``cache``.
"""
