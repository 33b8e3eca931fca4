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
{ echo "Command: \`${cmd1#$BUILD/bench/}\`"; echo; $cmd1; } > "$tmp/a800x16.md"
cat "$tmp/a800x16.md"
replace_block docs/zellige.md baselines-a800x16 "$tmp/a800x16.md"

echo "== modeled baselines: a6000x32, 15 s videos, 175K tokens/GPU"
cmd2="$BUILD/bench/bench_zellige_sweep --cluster a6000x32 --load 175000 --seconds 15 --seeds 5"
{ echo "Command: \`${cmd2#$BUILD/bench/}\`"; echo; $cmd2; } > "$tmp/a6000x32.md"
cat "$tmp/a6000x32.md"
replace_block docs/zellige.md baselines-a6000x32 "$tmp/a6000x32.md"

if [ -x "$BUILD/bench/bench_attention" ]; then
  echo "== kernels (measured on this machine)"
  "$BUILD/bench/bench_attention" || true
fi
