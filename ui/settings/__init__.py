"""Settings: the dialog (provider, model, keys, appearance, approvals) and its MCP servers page."""
