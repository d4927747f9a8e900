"""An MCP session driven by the official Python SDK (`mcp` on PyPI), a client nobody here wrote.

Usage: session.py CALLS_JSON -- SERVER_COMMAND [ARGS...]
       session.py CALLS_JSON --http URL TOKEN
  CALLS_JSON  a JSON list of {"tool": NAME, "arguments": {...}} or {"resource": URI}; an argument
              {"$from": [CALL, KEY, ...]} is the value at that path of an earlier call's answer
              (as in the output below: ["calls"][CALL][KEY]...), as an assistant reads one result
              to make its next call
Starts the server over stdio (the environment passed on: KUBECONFIG and the like), or connects
to a running one over streamable HTTP with `Authorization: Bearer TOKEN`, lists its
tools and resources, calls each of CALLS in order (a tool, or a resource read), checks every
structured result against the tool's output schema (jsonschema), and prints one JSON document on
stdout:
  {"server": {...}, "tools": [{"name", "inputSchema", "outputSchema"}], "resources": [{"uri", "mimeType"}],
   "calls": [{"tool", "isError", "text", "structured", "schemaErrors", "bytes"} or {"tool", "protocolError"}
             or {"resource", "text", "mimeType"}]}
"""

import json
import os
import sys

import anyio
import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def main() -> None:
    calls = json.loads(sys.argv[1])
    if sys.argv[2] == "--http":
        url, token = sys.argv[3], sys.argv[4]
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with client, streamable_http_client(url, http_client=client) as (read, write):
            await run(read, write, calls)
    else:
        command = sys.argv[sys.argv.index("--") + 1 :]
        server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
        async with stdio_client(server) as (read, write):
            await run(read, write, calls)


async def run(read, write, calls) -> None:
    async with ClientSession(read, write) as session:
        initialized = await session.initialize()
        listed = await session.list_tools()
        tools = {tool.name: tool for tool in listed.tools}
        resources = await session.list_resources()
        answers = []
        for call in calls:
            if "resource" in call:
                try:
                    answer = await session.read_resource(call["resource"])
                except Exception as error:
                    answers.append({"resource": call["resource"], "protocolError": str(error)})
                    continue
                contents = answer.contents[0]
                answers.append(
                    {"resource": call["resource"], "text": getattr(contents, "text", None), "mimeType": contents.mime_type}
                )
                continue
            arguments = {name: resolved(value, answers) for name, value in call.get("arguments", {}).items()}
            try:
                result = await session.call_tool(call["tool"], arguments)
            except Exception as error:  # a JSON-RPC error: the call itself was refused
                answers.append({"tool": call["tool"], "protocolError": str(error)})
                continue
            text = "\n".join(block.text for block in result.content if getattr(block, "text", None))
            structured = result.structured_content
            errors = []
            schema = tools[call["tool"]].output_schema if call["tool"] in tools else None
            if structured is not None and schema is not None:
                validator = jsonschema.Draft202012Validator(schema)
                errors = [error.message for error in validator.iter_errors(structured)]
            answers.append(
                {
                    "tool": call["tool"],
                    "isError": bool(result.is_error),
                    "text": text,
                    "structured": structured,
                    "schemaErrors": errors,
                    "bytes": len(json.dumps(result.model_dump(mode="json", by_alias=True))),
                }
            )
    print(
        json.dumps(
            {
                "server": initialized.server_info.model_dump(mode="json", by_alias=True),
                "tools": [
                    {"name": tool.name, "inputSchema": tool.input_schema, "outputSchema": tool.output_schema}
                    for tool in listed.tools
                ],
                "resources": [
                    {"uri": str(resource.uri), "mimeType": resource.mime_type} for resource in resources.resources
                ],
                "calls": answers,
            }
        )
    )


def resolved(value, answers):
    """An argument, with {"$from": [CALL, KEY, ...]} replaced by what that earlier answer holds."""
    if not (isinstance(value, dict) and list(value) == ["$from"]):
        return value
    index, *path = value["$from"]
    found = answers[index]
    for key in path:
        found = found[key]
    return found


anyio.run(main)
