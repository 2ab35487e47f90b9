#!/usr/bin/env bash
# Source checks that compilers do not make; run by engine/tools/test.sh.
set -euo pipefail
src=$(cd "$(dirname "$0")/../src" && pwd)
# GCC 12 miscompiles coroutines with co_await inside a condition or a conditional/logical expression (the coroutine
# body may silently never run). Write `auto x = co_await f(); if (x) ...` instead.
python3 - "$src" <<'PY'
import pathlib, re, sys
bad = re.compile(r'(\b(if|while)\s*\(\s*!?\s*co_await\b)|((&&|\|\||\?)\s*co_await\b)|(\bco_await\b[^;]*(&&|\|\|))')
found = 0
for p in sorted(pathlib.Path(sys.argv[1]).rglob('*')):
    if p.suffix not in ('.cc', '.h'):
        continue
    for n, line in enumerate(p.read_text(errors='replace').splitlines(), 1):
        code = line.split('//', 1)[0]
        if bad.search(code):
            print(f'{p}:{n}: {line.strip()}')
            found += 1
if found:
    print(f'lint: {found} co_await inside a condition or a conditional expression (see engine/tools/lint.sh)', file=sys.stderr)
    sys.exit(1)
PY

# Layers: an include may only go down the layer order (engine/CMakeLists.txt; ARCHITECTURE: common -> transport -> rpc
# -> store -> cluster -> {replication, txn} -> server, with resp and bench as services rdxd plugs into the server).
# Layers of one rank are siblings and may not include each other. Tests of a layer follow its rule; cross-layer
# tests live in engine/tests/.
# The check itself is checked first: a planted upward include (txn -> server) must fail it.
planted=$(mktemp -d)
trap 'rm -rf "$planted"' EXIT
mkdir -p "$planted/txn" "$planted/server"
printf '#include "server/node.h"\n' > "$planted/txn/planted.h"
if python3 "$(dirname "$0")/layers.py" "$planted" >/dev/null 2>&1; then
  echo "lint: the layer check passed a planted upward include (engine/tools/layers.py is broken)" >&2
  exit 1
fi
python3 "$(dirname "$0")/layers.py" "$src"

# Formatting: engine/.clang-format (Google style, 120 columns); fix with: clang-format -i <file>.
cd "$src/.."
unformatted=$(find src bench fuzz tests -name '*.cc' -o -name '*.h' 2>/dev/null | sort | while read -r f; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || echo "$f"
done)
if [ -n "$unformatted" ]; then
  printf 'lint: not clang-formatted (clang-format -i FILE):\n%s\n' "$unformatted" >&2
  exit 1
fi
