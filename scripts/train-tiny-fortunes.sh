#!/bin/sh
# Regenerates data/llama/tiny-fortunes/{config.json,model.safetensors,train_log.txt} and then
# golden.json: installs Debian's `fortunes` package if its texts are missing, trains on the CPU
# under `nice` (measured 16 minutes on one thread of a shared 2-core machine), then runs the
# torch golden check. Extra arguments go to train_tiny_fortunes.py (e.g. --steps 100).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
out="$repo/data/llama/tiny-fortunes"
if [ ! -f /usr/share/games/fortunes/fortunes ]; then
  echo "installing Debian's fortunes package (the training text)" >&2
  if [ "$(id -u)" = 0 ]; then apt-get install -y fortunes; else sudo apt-get install -y fortunes; fi
fi
# Debian's python3-torch (a pyenv or venv python may lack it).
py=/usr/bin/python3
export OMP_WAIT_POLICY=passive
nice -n 10 "$py" "$here/train_tiny_fortunes.py" --out "$out" "$@"
nice -n 10 "$py" "$here/check_tiny_fortunes_golden.py" --model "$out"
