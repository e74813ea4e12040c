"""The I/O boundary: servers, their processes and transports, files and directories.

The only layer that talks to the outside world (the MCP client, stdio processes, the
``mcpServers`` file, local skill directories, the user's directories). What it reads is
handed to ``core`` to parse and verify.

May import: ``core`` and ``edge``.
"""
