#!/usr/bin/env bash
# Xema's plan tables at paper scale (modeled): Flux.2-dev, CogVideoX-5B and LTX-2 on eight
# modeled H100 80 GB and H200 141 GB GPUs, three templates each (bench/xema/paper/mix-*.json).
# Rates load the eight GPUs to about 70% at SP 1 (0.7 x 8 / the mix's mean isolated latency:
# Flux.2 0.18/s, CogVideoX 0.03/s, LTX-2 0.10/s); SLO 2x the isolated latency; an hour of
# Poisson arrivals. Seconds of planning each (no profiling runs: analytic traces).
# Each is planned three times on the same load: SP degree (1-8) and batch (1-4) searched;
# batch held to 1 (-b1: --max-batch 1); both held to 1 (-sp1: --max-sp 1 --max-batch 1).
# Writes OUT/<model>-<device>[-b1|-sp1].txt (the table as printed) and .json (the plan table).
# Usage: bench/xema/paper_tables.sh [OUT]   (default docs/results/xema-paper)
set -euo pipefail
T=${TESSERA:-build/release/src/cli/tessera}
OUT=${1:-docs/results/xema-paper}
mkdir -p "$OUT"
declare -A RATE=([flux2-dev]=0.18 [cogvideox-5b]=0.03 [ltx-2]=0.10)
for model in flux2-dev cogvideox-5b ltx-2; do
  for device in h100-80g h200-141g; do
    for held in "" b1 sp1; do
      case "$held" in
        "") flags=(--max-sp 64 --max-batch 4) ;;
        b1) flags=(--max-sp 64 --max-batch 1) ;;
        sp1) flags=(--max-sp 1 --max-batch 1) ;;
      esac
      name="$model-$device${held:+-$held}"
      "$T" xema plan --device "$device" --devices 8 --mix "bench/xema/paper/mix-$model.json" \
        --rate "${RATE[$model]}" --slo-scale 2 --duration 3600 --seed 1 --max-concurrency 3 \
        "${flags[@]}" --out "$OUT/$name.json" | tee "$OUT/$name.txt"
    done
  done
done
