#!/usr/bin/env bash
# Prints the interpreter of the engine's test environment: a venv under the rdx cache, made from Debian's python3 and
# filled from engine/tests/requirements.txt (pinned), keyed by both, so it is built once per machine and reused by
# every clone. The python3 first on PATH (pyenv's, on these machines) is never relied on.
source "$(dirname "$0")/../../hack/lib.sh"
base=/usr/bin/python3
req=$RDX_ROOT/engine/tests/requirements.txt
[ -x "$base" ] || die "$base is missing (make deps-engine installs python3 and python3-venv)"
key=$( ("$base" --version; cat "$req") | sha256sum | cut -c1-16)
venv=$RDX_CACHE/python/$key
if [ ! -f "$venv/.complete" ]; then
  mkdir -p "$RDX_CACHE/python"
  (
    exec 5>"$RDX_CACHE/python/.lock"
    flock -w 900 5 || die "python-env: timed out waiting for another build of $venv"
    if [ ! -f "$venv/.complete" ]; then
      log "python-env: creating $venv ($("$base" --version), $(grep -vc '^#' "$req") pinned packages)"
      rm -rf "$venv"
      "$base" -m venv "$venv" >&2 || die "python-env: $base -m venv failed (apt-get install python3-venv)"
      "$venv/bin/pip" install -q --disable-pip-version-check -r "$req" >&2 || die "python-env: pip install failed"
      touch "$venv/.complete"
    fi
  )
fi
echo "$venv/bin/python"
