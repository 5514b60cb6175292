"""A Python MCP server with 26 well-documented tools (``weather_service`` ... ``photos_service``), over stdio:
more schema than an 8k model's window should hold. Each answers ``<topic> done with <arguments>``."""

from __future__ import annotations

import json

from mcp.server.mcpserver import MCPServer

TOPICS = ["weather", "calendar", "email", "invoice", "ticket", "deploy", "backup", "translate", "invoice_pdf",
          "stock", "flight", "hotel", "recipe", "music", "podcast", "news", "map", "taxi", "parcel", "bank",
          "crypto", "fitness", "diary", "todo", "contacts", "photos"]

server = MCPServer("many-tools")


def _add(topic: str) -> None:
    def handler(option_0: str = "", option_1: str = "", option_2: str = "", option_3: str = "") -> str:
        return f"{topic} done with " + json.dumps([option_0, option_1, option_2, option_3])

    description = (f"Works with the {topic} service: look up, create and change {topic} records. " * 4
                   + "".join(f"option_{i}: option {i} of the {topic} service. " * 4 for i in range(4)))
    server.add_tool(handler, name=f"{topic}_service", description=description)


for _topic in TOPICS:
    _add(_topic)

if __name__ == "__main__":
    server.run()
