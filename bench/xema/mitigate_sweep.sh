#!/usr/bin/env bash
# The mitigation planner at three budgets per template (85%, 50% and 30% of the unmitigated
# peak), next to the always-on baselines at the same template: every mitigation of the
# "tiling" policy on, and every offload on. Writes one JSON plan and one log per run to OUT.
# Usage: bench/xema/mitigate_sweep.sh [OUT]   (default docs/results/xema-mitigate)
set -euo pipefail
T=${TESSERA:-build/release/src/cli/tessera}
OUT=${1:-docs/results/xema-mitigate}
SCALE=${TIME_SCALE:-}  # fix the host link's time scale (empty: measured by each run)
mkdir -p "$OUT"
link=()
[ -n "$SCALE" ] && link=(--time-scale "$SCALE")
run_template() {
  local name=$1 peak_mib=$2
  shift 2
  local req=("$@")
  for pct in 85 50 30; do
    local b=$((peak_mib * pct / 100))MiB
    echo "== $name budget $b ($pct% of the peak)"
    "$T" xema mitigate "${req[@]}" --budget "$b" --consider-offload "${link[@]}" \
      --json "$OUT/$name-$pct.json" 2>&1 | grep -v '^\[' | tee "$OUT/$name-$pct.log" || true
  done
  echo "== $name always-on tiling"
  "$T" xema trace "${req[@]}" "${TILING[@]}" --out "$OUT/$name-tiling.trace.json" 2>&1 |
    grep -E 'peak live|request time' | tee "$OUT/$name-tiling.log"
  echo "== $name always-on offload"
  "$T" xema trace "${req[@]}" --offload text,latent,image,weights "${link[@]}" \
    --out "$OUT/$name-offload.trace.json" 2>&1 |
    grep -E 'peak live|request time|exposed' | tee "$OUT/$name-offload.log"
  rm -f "$OUT"/*.trace.json
}
TILING=(--vae-tiles 4)
run_template t2i-256 208 --model tiny-t2i --size 256x256 --steps 4
run_template t2i-512 724 --model tiny-t2i --size 512x512 --steps 2
TILING=(--vae-tiles 4 --vae-slices 17 --attention-chunks 16)  # the tiling policy's
run_template t2v-128x17 191 --model tiny-t2v --size 128x128 --frames 17 --steps 2 \
  --attention chunked
