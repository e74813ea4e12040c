"""skillward gateway: verified, gated skills for any MCP host, through one MCP server."""
