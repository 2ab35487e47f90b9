#!/usr/bin/env python3
"""Fails on an #include that goes against the engine's layer order (see engine/tools/lint.sh).

usage: layers.py SRC_DIR   (exit 1 and one line per offending include, naming both layers and the rule)
"""
import pathlib
import re
import sys

# Rank per layer folder under engine/src: a file may include files of layers with a lower rank only (and its own).
RANKS = {
    "common": 0,
    "metrics": 1, "transport": 1,
    "rpc": 2,
    "store": 3,
    "cluster": 4,
    "replication": 5, "txn": 5,
    "server": 6, "checker": 6, "workload": 6, "client": 6,
    "resp": 7, "bench": 7,
    "rdxd": 8,
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def main():
    src = pathlib.Path(sys.argv[1])
    bad = []
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".cc", ".h", ".def"):
            continue
        layer = path.relative_to(src).parts[0]
        if layer not in RANKS:
            bad.append(f"{path}: folder '{layer}' has no rank in engine/tools/layers.py (add it to the layer order)")
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m or "/" not in m.group(1):
                continue
            target = m.group(1).split("/")[0]
            if target == layer or target not in RANKS:
                continue
            if RANKS[target] >= RANKS[layer]:
                how = "a sibling" if RANKS[target] == RANKS[layer] else "a higher"
                bad.append(f"{path}:{n}: {layer} (rank {RANKS[layer]}) includes {m.group(1)} of {how} layer "
                           f"{target} (rank {RANKS[target]}): includes go down the layer order only")
    for b in bad:
        print(b)
    if bad:
        print(f"lint: {len(bad)} include(s) against the layer order (engine/tools/layers.py)", file=sys.stderr)
        sys.exit(1)


main()
