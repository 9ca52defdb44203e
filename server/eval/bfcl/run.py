"""Runs BFCL v4 multi-turn entries through planboard's agent and scores them
with BFCL's own checker.

    python run.py --base http://127.0.0.1:PORT --control FILE --log FILE
                  [--sample sample.txt] [--first N] [--limit SECS] [--out FILE]

planboard must be serving at --base with `mcp_server.py` among its MCP
servers (same --control and --log files in its environment) and the BFCL
tools allowed (`setup.sh` prints the settings; `bench.sh` does it all).
Each turn of an entry is one run (`POST /api/runs`, approval off, memory
off, `tools`: the entry's functions, less its `excluded_function`): the task is the turn's
user message after the conversation so far (the earlier turns' messages
and planboard's answers). The MCP server keeps the entry's state between
its turns. After the last turn the calls logged per turn go to BFCL's
`multi_turn_checker` with the entry's ground truth; an entry counts only
when every turn passes. Prints one line per entry and the score.
"""

import argparse
import json
import os
import statistics
import time
import urllib.request
import uuid
from importlib import resources

from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

import mcp_server

DATA = resources.files("bfcl_eval") / "data"
ENDED = {"done", "failed", "cancelled", "paused"}


def lines(path):
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def http(method, url, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read() or b"null")


def entry_tools(entry):
    """The functions of the entry's classes, less those it excludes (the
    server's list, in its order)."""
    excluded = entry.get("excluded_function", [])
    return [
        name
        for name, (cls, _doc) in mcp_server.functions().items()
        if cls in entry["involved_classes"] and name not in excluded
    ]


def task_text(history, message):
    if not history:
        return message
    said = "\n".join(f"{who}: {text}" for who, text in history)
    return f"The conversation so far:\n{said}\n\nThe user now asks: {message}"


def run_turn(base, task, tools, limit):
    run = http("POST", f"{base}/api/runs", {
        "task": task, "approval_required": False, "memory": False, "tools": tools,
    })
    started = time.time()
    while True:
        view = http("GET", f"{base}/api/runs/{run['id']}")
        if view["state"] in ENDED or time.time() - started > limit:
            break
        time.sleep(1)
    if view["state"] not in {"done", "failed", "cancelled"}:
        http("POST", f"{base}/api/runs/{run['id']}/cancel", {})
    calls = view.get("spent", {}).get("llm_calls")
    return view["state"], view.get("answer") or "", time.time() - started, calls, run["id"]


def main():
    args = argparse.ArgumentParser()
    args.add_argument("--base", required=True)
    args.add_argument("--control", required=True)
    args.add_argument("--log", required=True)
    args.add_argument("--sample", default=os.path.join(os.path.dirname(__file__), "sample.txt"))
    args.add_argument("--first", type=int, default=0, help="only the sample's first N entries")
    args.add_argument("--limit", type=float, default=600, help="seconds a turn's run may take")
    args.add_argument("--out", default="bfcl-results.jsonl")
    args.add_argument("--check-scorer", action="store_true",
                      help="score the sample's ground truth (all must pass) and no calls (all must fail); no run")
    a = args.parse_args()
    entries = mcp_server.entries()
    truth = {e["id"]: e["ground_truth"] for e in lines(DATA / "possible_answer" / "BFCL_v4_multi_turn_base.json")}
    ids = [x.strip() for x in open(a.sample) if x.strip() and not x.startswith("#")]
    if a.first:
        ids = ids[: a.first]
    if a.check_scorer:
        ok = 0
        for entry_id in ids:
            good = multi_turn_checker([[t] for t in truth[entry_id]], truth[entry_id], entries[entry_id], "multi_turn_base", "scorer_truth")
            empty = multi_turn_checker([[] for _ in truth[entry_id]], truth[entry_id], entries[entry_id], "multi_turn_base", "scorer_empty")
            ok += good["valid"] and not empty["valid"]
            if not good["valid"] or empty["valid"]:
                print(f"{entry_id}: ground truth {good['valid']}, no calls {empty['valid']}")
        print(f"scorer: {ok}/{len(ids)} entries pass with the ground truth and fail with no calls")
        return
    right, seconds, model_calls = 0, [], []
    for n, entry_id in enumerate(ids, 1):
        entry = entries[entry_id]
        attempt = uuid.uuid4().hex[:8]
        tools = entry_tools(entry)
        history, turns = [], []
        t0 = time.time()
        for turn, messages in enumerate(entry["question"]):
            message = "\n".join(m["content"] for m in messages if m["role"] == "user")
            with open(a.control, "w") as f:
                json.dump({"attempt": attempt, "entry": entry_id, "turn": turn}, f)
            state, answer, took, calls, run_id = run_turn(a.base, task_text(history, message), tools, a.limit)
            model_calls.append(calls or 0)
            turns.append({"turn": turn, "run": run_id, "state": state, "seconds": round(took, 1), "answer": answer[:500]})
            history += [("User", message), ("You", answer[:600] or f"(the run ended {state} without an answer)")]
        logged = [json.loads(x) for x in open(a.log)] if os.path.exists(a.log) else []
        # One step per turn (none for a turn without calls): BFCL executes a
        # turn's steps in order either way.
        per_turn = []
        for t in range(len(entry["question"])):
            calls = [r["call"] for r in logged if r["attempt"] == attempt and r["turn"] == t]
            per_turn.append([calls] if calls else [])
        verdict = multi_turn_checker(per_turn, truth[entry_id], entry, "multi_turn_base", f"planboard_check_{attempt}")
        took = time.time() - t0
        seconds.append(took)
        right += bool(verdict["valid"])
        print(f"{n:>3}/{len(ids)} {entry_id:<22} {'RIGHT' if verdict['valid'] else 'wrong'} {took:6.0f} s "
              f"{len(entry['question'])} turns, {sum(len(t[0]) if t else 0 for t in per_turn)} calls"
              f"{'' if verdict['valid'] else ': ' + str(verdict.get('error_type', ''))}", flush=True)
        with open(a.out, "a") as out:
            out.write(json.dumps({"entry": entry_id, "valid": verdict["valid"], "verdict": {k: v for k, v in verdict.items() if k != "details"},
                                  "calls": per_turn, "turns": turns, "seconds": round(took, 1)}) + "\n")
    print(f"\nBFCL v4 multi_turn_base through planboard: {right}/{len(ids)} entries right "
          f"({100 * right / max(1, len(ids)):.1f} %), median {statistics.median(seconds):.0f} s per entry, "
          f"{sum(model_calls) / max(1, len(model_calls)):.1f} model calls per turn")


if __name__ == "__main__":
    main()
