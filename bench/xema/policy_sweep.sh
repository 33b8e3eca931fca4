#!/usr/bin/env bash
# Every serving policy on the same seeded arrivals: a 3:1 mix of tiny-t2i 128x128 and 256x256
# (4 steps, CFG on), one device, three budgets (256 MiB: everything fits unmitigated; 128 MiB
# and 96 MiB: the 256x256 template needs mitigation), two rates, SLO scales 2, 5, 10.
# Writes OUT/bench.txt (the table) and OUT/bench.json (every point). About 10 minutes.
# Usage: bench/xema/policy_sweep.sh [OUT]   (default docs/results/xema-bench)
set -euo pipefail
T=${TESSERA:-build/release/src/cli/tessera}
OUT=${1:-docs/results/xema-bench}
mkdir -p "$OUT"
"$T" xema bench --policies none,static,offload,tiling,caching,xema \
  --budgets 256MiB,128MiB,96MiB --rates 1,2 --slo-scales 2,5,10 \
  --mix bench/xema/mix-t2i-small-big.json --duration 12 --seed 1 --devices 1 --queue 16 \
  --time-scale "${TIME_SCALE:-3000}" --json "$OUT/bench.json" | tee "$OUT/bench.txt"
