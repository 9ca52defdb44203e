#!/usr/bin/env bash
# Builds the site (the board's browser half as wasm, its CSS and assets) and
# the server, doing the job `cargo leptos build` does for this project with
# the tools it would call itself: cargo, wasm-bindgen (the version in
# Cargo.lock) and, for release, npm's wasm-opt. Without cargo-leptos a fresh
# machine saves its ~14-minute install; the artifacts are the same files in
# the same places (target/site, target/front, target/{debug,release}), so
# `cargo leptos` still works beside this.
#
#   scripts/build.sh            debug build (what the tests use)
#   scripts/build.sh --release  release build (what scripts/run serves)
#
# The two halves build one after the other: on a 2-core machine two cargo
# builds at once are slower than one after the other, and the wasm is the
# smaller one.
set -euo pipefail
source "$(dirname "$0")/setup.sh"
cd "$ROOT"

release=false
[ "${1:-}" = "--release" ] && release=true

# What the server compiles in (leptos_config reads LEPTOS_OUTPUT_NAME at
# compile time) and the flag cargo-leptos adds for this project
# (always-erase-components): the same two the tests build with, so every
# cargo call reuses one set of artifacts. The site's layout is Cargo.toml's
# [workspace.metadata.leptos], which the server also reads at run time.
export LEPTOS_OUTPUT_NAME="planboard"
export RUSTFLAGS="--cfg erase_components"

pkg="target/site/pkg"
# The tools this calls (quick checks when they are there already).
ensure_wasm_target
ensure_wasm_bindgen
$release && ensure_binaryen
mkdir -p "$pkg"

if $release; then
  wasm_profile=(--profile wasm-release)
  wasm_dir="wasm-release"
  server_profile=(--release)
else
  wasm_profile=()
  wasm_dir="debug"
  server_profile=()
fi

step "building the board's wasm (app with hydrate, $wasm_dir)"
cargo build --package=app --lib --target-dir=target/front --target=wasm32-unknown-unknown \
  --no-default-features --features=hydrate "${wasm_profile[@]}"

step "wasm-bindgen: the wasm and its JavaScript glue into $pkg"
wasm-bindgen --target=web --no-typescript --out-name="$LEPTOS_OUTPUT_NAME" --out-dir="$pkg" \
  "target/front/wasm32-unknown-unknown/$wasm_dir/app.wasm"
# Leptos' hydration script asks for <name>.wasm, not wasm-bindgen's <name>_bg.wasm.
mv -f "$pkg/${LEPTOS_OUTPUT_NAME}_bg.wasm" "$pkg/$LEPTOS_OUTPUT_NAME.wasm"

if $release; then
  # npm's binaryen (setup.sh's ensure_binaryen); Debian's v108 breaks hydration.
  step "wasm-opt -Oz"
  wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int \
    "$pkg/$LEPTOS_OUTPUT_NAME.wasm" -o "$pkg/$LEPTOS_OUTPUT_NAME.wasm"
fi

# The stylesheet has no @import to bundle; cargo-leptos would also minify it
# (25 KB, gzip-compressed on the wire either way).
cp style/main.css "$pkg/$LEPTOS_OUTPUT_NAME.css"
cp -r public/. target/site/

step "building the server ($($release && echo release || echo debug))"
cargo build --package=server --bin=planboard --no-default-features "${server_profile[@]}"
