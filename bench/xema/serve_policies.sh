#!/usr/bin/env bash
# Serves the same open-loop load under each memory policy and budget, one server at a time
# (xema serve + xema loadgen), and keeps each loadgen report and the server's metrics.
#   bench/xema/serve_policies.sh [BIN] [OUT_DIR]
set -euo pipefail
BIN=${1:-build/release/src/cli/tessera}
OUT=${2:-/tmp/xema-serve-policies}
MIX='[{"model":"tiny-t2i","size":"32x32","steps":2,"weight":3},{"model":"tiny-t2i","size":"64x64","steps":4,"weight":1}]'
mkdir -p "$OUT"
for budget in 56MiB 128MiB; do
  for policy in none static; do
    name="$policy-$budget"
    "$BIN" xema serve --port 0 --policy "$policy" --budget "$budget" --duration-s 120 \
      > "$OUT/$name.serve.txt" 2>&1 &
    server=$!
    url=""
    for _ in $(seq 50); do
      url=$(grep -o 'http://[0-9.:]*' "$OUT/$name.serve.txt" || true)
      [ -n "$url" ] && break
      sleep 0.1
    done
    echo "== policy $policy, budget $budget ($url)"
    "$BIN" xema loadgen --url "$url" --rate 1.5 --mix "$MIX" --duration 20 --seed 1 \
      --slo-scale 5 --json "$OUT/$name.loadgen.json" | tee "$OUT/$name.loadgen.txt"
    curl -s "$url/v1/metrics" > "$OUT/$name.metrics.json"
    kill -TERM "$server"
    wait "$server"
  done
done
