#!/usr/bin/env bash
# Xema against the serving configurations people deploy, at paper scale (modeled): every modeled
# GPU (RTX 4090 24 GB, L40S 48 GB, H100 80 GB, H200 141 GB), 1 and 8 GPUs, the three paper
# models' mixes, loads 30-120% of capacity, SLO 2x the isolated latency, 400 expected arrivals
# per point. Run twice: the offload configurations at the device's pinned host link, and at
# 12 GB/s (an assumed pageable-copy rate: accelerate's hooks copy from pageable memory).
# Writes OUT/deployed[-pageable12].{txt,json} and OUT/attainment[-pageable12].png. About 8 min
# on 2 cores.
# Usage: bench/xema/deployed_sweep.sh [OUT]   (default docs/results/xema-deployed)
set -euo pipefail
T=${TESSERA:-build/release/src/cli/tessera}
OUT=${1:-docs/results/xema-deployed}
mkdir -p "$OUT"
"$T" xema deployed --json "$OUT/deployed.json" | tee "$OUT/deployed.txt"
"$T" xema deployed --offload-host-gbps 12 --json "$OUT/deployed-pageable12.json" |
  tee "$OUT/deployed-pageable12.txt"
/usr/bin/python3 bench/xema/plot_deployed.py "$OUT/deployed.json" --out "$OUT/attainment.png"
/usr/bin/python3 bench/xema/plot_deployed.py "$OUT/deployed-pageable12.json" \
  --out "$OUT/attainment-pageable12.png"
