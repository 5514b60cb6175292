"""The MCP servers dock: servers and their state, tools, prompts and resources (the Qt item model and
the panes). The servers' settings page is :mod:`ui.settings.mcp_servers`."""
