"""``skillward check``: auditing a SEP-2640 server, for the people who write servers.

It connects a server as a host does, and reports every rule the server breaks (the rule
catalog of ``docs/check.md``) by the checks the host refuses with, without approving or
caching anything and without putting any of the server's content in its output.

May import: ``core``, ``edge`` and ``check``.
"""
