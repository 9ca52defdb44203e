#!/usr/bin/env bash
# BFCL v4 multi-turn (base) through planboard's agent, scored by BFCL's own
# checker. Installs BFCL's wheel (its data, back ends and checker), mpmath
# and MCP's Python SDK in target/bfcl-venv (setup.sh's ensure_bfcl), starts planboard's release
# binary on a free port with a fresh database and `mcp_server.py` as its
# only MCP server (its 128 tools `auto`: the runs are not watched), then
# runs `run.py` over the sample (`sample.txt`, 40 entries never tuned on).
#
#   bash server/eval/bfcl/bench.sh [--first N] [--limit SECS] [--out FILE]
#
# The model is planboard's usual setting (PLANBOARD_LLM_*), by default the
# local model of scripts/local-model.sh on port 8091. The binary is the
# release build's, else the debug build's (PLANBOARD_BIN names another).
set -euo pipefail
source "$(dirname "$0")/../../../scripts/setup.sh"
here="$ROOT/server/eval/bfcl"
bin="${PLANBOARD_BIN:-$ROOT/target/release/planboard}"
[ -x "$bin" ] || bin="$ROOT/target/debug/planboard"
[ -x "$bin" ] || { echo "no planboard binary: run bash scripts/build.sh [--release] first" >&2; exit 1; }
ensure_bfcl
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
control="$work/control.json"
log="$work/calls.jsonl"
echo '{"attempt": "none", "entry": "multi_turn_base_0", "turn": 0}' > "$control"
cat > "$work/mcp.json" <<JSON
{"mcpServers": {"bfcl": {"command": "$BFCL_PYTHON", "args": ["$here/mcp_server.py"],
  "env": {"BFCL_CONTROL": "$control", "BFCL_LOG": "$log"}}}}
JSON
policy=$("$BFCL_PYTHON" "$here/mcp_server.py" --names | sed 's/$/=auto/' | paste -sd, -)
DATABASE_URL="sqlite://$work/planboard.db" PLANBOARD_WORKSPACES="$work/workspaces" \
  LEPTOS_SITE_ADDR="127.0.0.1:$port" LEPTOS_SITE_ROOT="$ROOT/target/site" LEPTOS_OUTPUT_NAME=planboard \
  PLANBOARD_LLM_MODEL="${PLANBOARD_LLM_MODEL:-qwen2.5-coder-1.5b-instruct}" \
  PLANBOARD_LLM_BASE_URL="${PLANBOARD_LLM_BASE_URL:-http://127.0.0.1:8091/v1}" \
  PLANBOARD_MCP_SERVERS="$work/mcp.json" PLANBOARD_TOOL_POLICY="$policy" \
  "$bin" > "$work/planboard.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
# Up, and the MCP server connected with its 128 tools.
offered=0
for _ in $(seq 1 60); do
  offered=$(curl -sf "http://127.0.0.1:$port/api/tool-servers" 2>/dev/null |
    "$BFCL_PYTHON" -c 'import json,sys; print(sum(len(s.get("tools") or []) for s in json.load(sys.stdin) if s["name"] == "bfcl"))' 2>/dev/null || echo 0)
  [ "$offered" = 128 ] && break
  sleep 1
done
[ "$offered" = 128 ] || { echo "planboard did not offer BFCL's 128 tools ($offered); see $work/planboard.log" >&2; exit 1; }
echo "planboard at http://127.0.0.1:$port (log, database, calls: $work)"
"$BFCL_PYTHON" "$here/run.py" --base "http://127.0.0.1:$port" --control "$control" --log "$log" "$@"
