#!/usr/bin/env bash
# Runs the benchmarks and refreshes the generated tables in docs/ (between
# <!-- BEGIN name --> and <!-- END name --> markers). Usage: bash bench/run_all.sh [build dir]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}

# replace_block FILE NAME CONTENT_FILE: swaps the text between the markers for the content.
replace_block() {
  python3 - "$1" "$2" "$3" <<'PY'
import sys
path, name, content = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
text = open(path).read()
begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
i, j = text.index(begin) + len(begin), text.index(end)
open(path, "w").write(text[:i] + "\n" + content.rstrip() + "\n" + text[j:])
PY
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== modeled baselines: a800x16, 15 s videos, high load (350K tokens/GPU)"
cmd1="$BUILD/bench/bench_zellige_sweep --cluster a800x16 --load 350000 --seconds 15 --seeds 5"
{ echo "Command: \`${cmd1#$BUILD/bench/}\`"; echo; $cmd1 --json "$tmp/a800x16.json"; } > "$tmp/a800x16.md"
cat "$tmp/a800x16.md"
replace_block docs/zellige.md baselines-a800x16 "$tmp/a800x16.md"

echo "== modeled baselines: a6000x32, 15 s videos, 175K tokens/GPU"
cmd2="$BUILD/bench/bench_zellige_sweep --cluster a6000x32 --load 175000 --seconds 15 --seeds 5"
{ echo "Command: \`${cmd2#$BUILD/bench/}\`"; echo; $cmd2 --json "$tmp/a6000x32.json"; } > "$tmp/a6000x32.md"
cat "$tmp/a6000x32.md"
replace_block docs/zellige.md baselines-a6000x32 "$tmp/a6000x32.md"

# Figures (matplotlib from Debian's python3-matplotlib; /usr/bin/python3 where it lives).
PY=${TESSERA_PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3 )}
# The latest kept 2-rank validate run (docs/results/), drawn as predicted vs measured.
VALIDATE_JSON=${VALIDATE_JSON:-docs/results/validate-2ranks-s17-light-2.json}
VALIDATE_TITLE=${VALIDATE_TITLE:-"zellige validate, 2 ranks, default options, one light background process (25% of one core): 21 plans, median of 5 steps"}
echo "== figures: docs/img/"
mkdir -p docs/img
"$BUILD/src/cli/tessera" zellige plan --cluster a800x16 --workload v50 \
  --plot docs/img/zellige-plan-v50.png > /dev/null
"$PY" bench/zellige/plot_speedup_by_mix.py "$tmp/a800x16.json" "$tmp/a6000x32.json" \
  --out docs/img/zellige-speedup-by-mix.png
"$PY" bench/zellige/plot_validate_scatter.py "$VALIDATE_JSON" --title "$VALIDATE_TITLE" \
  --out docs/img/zellige-validate-scatter.png
echo "wrote docs/img/zellige-plan-v50.png, zellige-speedup-by-mix.png, zellige-validate-scatter.png"

if [ -x "$BUILD/bench/bench_attention" ]; then
  echo "== kernels (measured on this machine)"
  "$BUILD/bench/bench_attention" || true
fi
