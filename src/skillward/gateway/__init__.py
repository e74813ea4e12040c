"""skillward gateway: verified, gated skills for any MCP host, through one MCP server.

May import: ``core``, ``edge``, ``trust``, ``cache``, ``host`` and ``gateway``.
"""
