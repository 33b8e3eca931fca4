"""What every tessera plot script does first: check its two arguments, import matplotlib
(headless), read the JSON the command handed it and the list it must not be empty.

The plot scripts import it from their own folder (`tessera` writes it beside the script it
runs; run by hand, it is in scripts/).
"""
import json
import sys


def load_figure_data(argv, usage, key):
    """Returns (pyplot, data, data[key]); exits with a one-line reason when it cannot."""
    if len(argv) != 3:
        sys.exit(usage)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        sys.exit(f"matplotlib is missing ({e}); on Debian: apt install python3-matplotlib")
    try:
        with open(argv[1]) as f:
            data = json.load(f)
        items = data[key]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"{argv[1]}: {e}")
    if not items:
        sys.exit(f"{argv[1]}: {key}: empty, nothing to draw")
    return plt, data, items
