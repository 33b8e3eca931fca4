#!/usr/bin/env bash
# The planner against a real grid search (Xema part 3): tiny-t2i 64x64 / 128x128 / 256x256
# (4 steps, CFG on, weights 3:2:1) at 4 requests/s of Poisson arrivals, a 160 MiB budget on one
# device (one core), SLO 3x the isolated latency, concurrency up to 3 per template, batch 1
# (batches multiply the grid past an hour here). The planner
# profiles and searches; then every configuration that fits is served for real for 35 s
# (about 50 minutes). Writes OUT/plan.txt (the tables), OUT/grid.json (every point: simulated
# and measured) and OUT/plan.json (the planner's table).
# Usage: bench/xema/plan_grid.sh [OUT]   (default docs/results/xema-plan)
set -euo pipefail
T=${TESSERA:-build/release/src/cli/tessera}
OUT=${1:-docs/results/xema-plan}
mkdir -p "$OUT"
"$T" xema plan --mix bench/xema/mix-t2i-three.json --budget 160MiB --devices 1 --rate 4 \
  --slo-scale 3 --duration 35 --seed 1 --max-concurrency 3 --max-batch 1 --grid real \
  --json "$OUT/grid.json" --out "$OUT/plan.json" | tee "$OUT/plan.txt"
