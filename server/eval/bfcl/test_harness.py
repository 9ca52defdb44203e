"""Tests of the BFCL harness (run by scripts/test): the schema conversion,
the call strings BFCL evaluates (the model's arguments are an attacker's
input), and the scorer (ground truth passes, nothing fails).

    target/bfcl-venv/bin/python server/eval/bfcl/test_harness.py
"""

import json
import os
import sys
import tempfile
import unittest
from contextlib import contextmanager

import anyio

sys.path.insert(0, os.path.dirname(__file__))
import mcp_server  # noqa: E402


@contextmanager
def current(attempt, entry, turn):
    """A control file naming the entry and turn, and an empty log, for the
    server's calls in the block."""
    with tempfile.TemporaryDirectory() as d:
        os.environ["BFCL_CONTROL"] = os.path.join(d, "control.json")
        os.environ["BFCL_LOG"] = os.path.join(d, "log.jsonl")
        with open(os.environ["BFCL_CONTROL"], "w") as f:
            json.dump({"attempt": attempt, "entry": entry, "turn": turn}, f)
        yield


def call_tool(name, arguments):
    class Params:
        pass

    Params.name, Params.arguments = name, arguments
    return anyio.run(mcp_server.on_call_tool, None, Params)


class Harness(unittest.TestCase):
    def test_bfcl_types_become_json_schema_types(self):
        schema = mcp_server.json_schema(
            {"type": "dict", "properties": {"x": {"type": "float"}, "p": {"type": "tuple", "items": {"type": "integer"}},
                                            "o": {"type": "dict"}}, "required": ["x"]})
        self.assertEqual(schema["type"], "object")
        self.assertEqual(schema["properties"]["x"]["type"], "number")
        self.assertEqual(schema["properties"]["p"], {"type": "array", "items": {"type": "integer"}})
        self.assertEqual(schema["properties"]["o"], {"type": "object", "properties": {}})

    def test_every_function_of_the_eight_classes_is_offered_once_with_an_object_schema(self):
        tools = mcp_server.tools()
        self.assertEqual(len(tools), 128)
        self.assertEqual(len({t.name for t in tools}), 128)
        for t in tools:
            self.assertEqual(t.input_schema["type"], "object", t.name)
            self.assertNotIn("dict", json.dumps(t.input_schema).replace('"description"', ""), t.name)

    def test_a_call_string_writes_each_value_as_a_python_literal(self):
        call, error = mcp_server.call_string("mv", {"source": "a'); import os; ('", "destination": "temp"})
        self.assertIsNone(error)
        self.assertEqual(call, "mv(source=\"a'); import os; ('\", destination='temp')")

    def test_an_argument_name_that_is_not_an_identifier_is_refused(self):
        for key in ["x=__import__('os').system('true'),y", "a b", "import", ""]:
            call, error = mcp_server.call_string("ls", {key: True})
            self.assertIsNone(call, key)
            self.assertIn("not an argument name", error)

    def test_a_function_bfcl_does_not_have_is_refused(self):
        call, error = mcp_server.call_string("__import__", {})
        self.assertIsNone(call)
        self.assertIn("no such function", error)

    def test_a_call_runs_on_the_entrys_state_and_is_logged_with_its_turn(self):
        with current("t1", "multi_turn_base_0", 1):
            self.assertIn("document", call_tool("ls", {}).content[0].text)
            call_tool("cd", {"folder": "document"})
            self.assertIn("final_report.pdf", call_tool("ls", {}).content[0].text)
            with open(os.environ["BFCL_LOG"]) as f:
                logged = [json.loads(x) for x in f]
            self.assertEqual([r["call"] for r in logged], ["ls()", "cd(folder='document')", "ls()"])
            self.assertEqual({r["turn"] for r in logged}, {1})

    def test_a_function_of_a_class_the_entry_does_not_involve_is_refused(self):
        with current("t2", "multi_turn_base_0", 0):
            result = call_tool("startEngine", {"ignitionMode": "START"})
            self.assertTrue(result.is_error)
            self.assertIn("not among this task's functions", result.content[0].text)
            self.assertFalse(os.path.exists(os.environ["BFCL_LOG"]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
