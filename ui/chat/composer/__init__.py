"""The message box: text, attachments (files, images, MCP resources), @ mentions, / commands, the
model picker and the context meter."""
