#!/usr/bin/env bash
# Two serving plan tables served in turn (A B A B ...) on the same seeded load: the same mix,
# rate, duration, seed and SLO references (the isolated latencies a planner profiled), so their
# SLO attainments differ only by the plans and the machine's run-to-run noise.
# Usage: bench/xema/plan_ab.sh PLAN_A PLAN_B MIX SLO_REFERENCES [ROUNDS] [OUT]
#   SLO_REFERENCES: comma-separated seconds, one per mix template.
# Env: BUDGET (160MiB), DEVICES (1), RATE (4), DURATION (35), SEED (1), SLO_SCALE (3).
# Writes OUT/{a,b}-N.json (loadgen reports), OUT/{a,b}-N.metrics.json (the server's
# /v1/metrics at the end of the run) and prints one line per run.
set -euo pipefail
T=${TESSERA:-build/release/src/cli/tessera}
A=$1 B=$2 MIX=$3 REF=$4 ROUNDS=${5:-3} OUT=${6:-/tmp/plan-ab}
mkdir -p "$OUT"
run() {  # plan label round
  local log="$OUT/$2-$3.serve.txt"
  "$T" xema serve --port 0 --budget "${BUDGET:-160MiB}" --devices "${DEVICES:-1}" --plan "$1" \
    >"$log" 2>&1 &
  local pid=$!
  local url=""
  for _ in $(seq 1 600); do
    url=$(grep -o 'http://[0-9.:]*' "$log" | head -1 || true)
    [ -n "$url" ] && break
    sleep 0.1
  done
  "$T" xema loadgen --url "$url" --mix "$MIX" --rate "${RATE:-4}" --duration "${DURATION:-35}" \
    --seed "${SEED:-1}" --slo-scale "${SLO_SCALE:-3}" --slo-reference "$REF" \
    --json "$OUT/$2-$3.json" 2>/dev/null | tail -1 | sed "s/^/$2 round $3: /"
  curl -s "$url/v1/metrics" >"$OUT/$2-$3.metrics.json" || true
  kill -INT "$pid"
  wait "$pid" || true
}
for r in $(seq 1 "$ROUNDS"); do
  run "$A" a "$r"
  run "$B" b "$r"
done
