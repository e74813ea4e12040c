"""``skillward serve``: the reference SEP-2640 server. The library never imports it;
only the command line does.

May import: ``core``, ``edge`` and ``serve``.
"""
