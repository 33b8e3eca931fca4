#!/usr/bin/env bash
# Runs `tessera xema check` on the tiny request templates of docs/xema.md and writes one text
# table and one JSON per template to OUT_DIR (default docs/results/xema-check). Each check
# records the template, replays it from every static layout and allocator policy, and fails
# (exit 1) if a peak, an output or a replay differs.
#   bench/xema/check_templates.sh [OUT_DIR]
set -euo pipefail
TESSERA=${TESSERA:-build/release/src/cli/tessera}
OUT=${1:-docs/results/xema-check}
mkdir -p "$OUT"
run() {
  local name=$1
  shift
  echo "== $name: tessera xema check $*"
  "$TESSERA" xema check "$@" --json "$OUT/$name.json" | tee "$OUT/$name.txt"
}
run t2i-64-cfg       --model tiny-t2i --size 64x64 --steps 4
run t2i-64-nocfg     --model tiny-t2i --size 64x64 --steps 4 --cfg off
run t2i-256-cfg      --model tiny-t2i --size 256x256 --steps 4
run t2i-256-chunked  --model tiny-t2i --size 256x256 --steps 4 --attention chunked --attention-chunks 1
run t2i-512-cfg      --model tiny-t2i --size 512x512 --steps 2
run t2v-64x9         --model tiny-t2v --size 64x64 --frames 9 --steps 4
run t2v-128x17       --model tiny-t2v --size 128x128 --frames 17 --steps 4
run t2v-128x17-slice --model tiny-t2v --size 128x128 --frames 17 --steps 4 --vae-slices 4
