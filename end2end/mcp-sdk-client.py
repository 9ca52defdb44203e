"""MCP's official Python SDK's client (`mcp` from PyPI) planning on
planboard's /mcp, for the server's API tests (`PLANBOARD_TEST_MCP_PY_CLIENT`,
run by the Python of `PLANBOARD_TEST_MCP_PYTHON`):

    python end2end/mcp-sdk-client.py <url of /mcp>

The client connects as it does by default ("auto": it asks `server/discover`
for 2026-07-28, which planboard speaks without sessions, and would fall back
to `initialize` otherwise). It prints one JSON line: the
revision agreed, the tools, what create_plan and get_hint answered and the
hint resource's text.
"""

import asyncio
import json
import sys

from mcp.client.client import Client


def text(result):
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def main(url):
    async with Client(url) as client:
        tools = await client.list_tools()
        created = await client.call_tool(
            "create_plan",
            {"title": "Planned by the Python SDK", "subtasks": [{"name": "measure the room"}]},
        )
        hint = await client.call_tool("get_hint", {})
        read = await client.read_resource("planboard://session/hint")
        print(json.dumps({
            "negotiated": client.protocol_version,
            "tools": [t.name for t in tools.tools],
            "created": {"isError": bool(created.is_error), "text": text(created)},
            "hint": text(hint),
            "resource": "\n".join(getattr(c, "text", "") for c in read.contents),
        }))


asyncio.run(main(sys.argv[1]))
