"""BFCL's multi-turn functions as an MCP server (stdio), for planboard's agent.

Serves every function of BFCL v4's eight multi-turn API classes (128 tools,
names unique across the classes) with their schemas in JSON Schema (BFCL
writes `dict`, `float`, `tuple` and `any`). A call is executed by BFCL's
own back end (`execute_multi_turn_func_call`) on the instances of the entry
and turn named in the control file, so state carries from one turn's run to
the next as it does in BFCL's harness, and it is logged as a BFCL call
string with its turn, for BFCL's checker to replay.

The control file (`BFCL_CONTROL`, JSON `{"attempt", "entry", "turn"}`) is
written by `run.py` before each turn's run; the log (`BFCL_LOG`) is JSON
Lines `{"attempt", "entry", "turn", "call", "result"}`.

Everything a call carries is the model's: a tool name must be one of the
entry's classes' functions, an argument name a Python identifier (BFCL
evaluates the call string), and each value is written with `repr` of its
JSON value, so no text of the model is ever evaluated as code.
"""

import json
import keyword
import os
import sys
from functools import lru_cache
from importlib import resources

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

CLASSES = [
    "GorillaFileSystem",
    "MathAPI",
    "MessageAPI",
    "TwitterAPI",
    "TicketAPI",
    "TradingBot",
    "TravelAPI",
    "VehicleControlAPI",
]
DATA = resources.files("bfcl_eval") / "data"
CATEGORY = os.environ.get("BFCL_CATEGORY", "multi_turn_base")
# What a call returns to the model, at most (a file system's `cat` of a long file).
RESULT_MAX = 4000


def json_schema(bfcl):
    """BFCL's parameter schema in JSON Schema."""
    if isinstance(bfcl, list):
        return [json_schema(x) for x in bfcl]
    if not isinstance(bfcl, dict):
        return bfcl
    out = {}
    for key, value in bfcl.items():
        if key == "type" and isinstance(value, str):
            out[key] = {"dict": "object", "float": "number", "tuple": "array", "any": "string"}.get(value, value)
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: json_schema(v) for name, v in value.items()}
        else:
            out[key] = json_schema(value)
    if out.get("type") == "object" and "properties" not in out:
        out["properties"] = {}
    return out


@lru_cache(maxsize=None)
def functions():
    """Every class's functions: name -> (class, doc)."""
    found = {}
    for cls in CLASSES:
        text = (DATA / "multi_turn_func_doc" / MULTI_TURN_FUNC_DOC_FILE_MAPPING[cls]).read_text()
        for line in text.splitlines():
            if line.strip():
                doc = json.loads(line)
                found[doc["name"]] = (cls, doc)
    return found


@lru_cache(maxsize=None)
def entries():
    text = (DATA / f"BFCL_v4_{CATEGORY}.json").read_text()
    return {e["id"]: e for e in (json.loads(line) for line in text.splitlines() if line.strip())}


def control():
    with open(os.environ["BFCL_CONTROL"]) as f:
        return json.load(f)


def call_string(name, arguments):
    """`name(a=1, b='x')`, or why not."""
    if name not in functions():
        return None, f"no such function: {name}"
    parts = []
    for key, value in (arguments or {}).items():
        if not isinstance(key, str) or not key.isidentifier() or keyword.iskeyword(key):
            return None, f"not an argument name: {key!r}"
        parts.append(f"{key}={value!r}")
    return f"{name}({', '.join(parts)})", None


def tools():
    listed = []
    for name, (_cls, doc) in sorted(functions().items()):
        listed.append(
            types.Tool(
                name=name,
                description=doc.get("description", "")[:2000],
                input_schema=json_schema(doc["parameters"]),
            )
        )
    return listed


async def on_list_tools(_ctx, _params):
    return types.ListToolsResult(tools=tools())


async def on_call_tool(_ctx, params):
    now = control()
    entry = entries()[now["entry"]]
    call, error = call_string(params.name, params.arguments)
    if call is not None and functions()[params.name][0] not in entry["involved_classes"]:
        call, error = None, f"{params.name} is not among this task's functions"
    if call is None:
        return types.CallToolResult(content=[types.TextContent(type="text", text=error)], is_error=True)
    results, _ = execute_multi_turn_func_call(
        func_call_list=[call],
        # BFCL deep-copies it when it makes the entry's instances.
        initial_config=entry["initial_config"],
        involved_classes=entry["involved_classes"],
        model_name=f"planboard_{now['attempt']}",
        test_entry_id=entry["id"],
    )
    result = results[0] if results else ""
    with open(os.environ["BFCL_LOG"], "a") as log:
        log.write(json.dumps({**now, "call": call, "result": result}) + "\n")
    failed = result.startswith("Error during execution") or '"error"' in result[:40]
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=result[:RESULT_MAX])], is_error=failed
    )


async def main():
    server = Server("bfcl", version="1", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    if sys.argv[1:] == ["--names"]:
        print("\n".join(sorted(functions())))
    else:
        anyio.run(main)
