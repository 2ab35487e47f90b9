#!/usr/bin/env bash
# run_fuzz.sh <fuzzer binary> <seed corpus dir>: runs a libFuzzer target for RDX_FUZZ_SECONDS (default 60) on a
# scratch copy of the seed corpus. Exit status: 0 when libFuzzer finished without a finding; otherwise the status of
# the fuzzer, with the reproducer kept under $RDX_FUZZ_ARTIFACTS (default: next to the binary) and printed.
set -euo pipefail
fuzzer=${1:?usage: run_fuzz.sh <fuzzer binary> <seed corpus dir>}
seeds=${2:?usage: run_fuzz.sh <fuzzer binary> <seed corpus dir>}
seconds=${RDX_FUZZ_SECONDS:-60}
artifacts=${RDX_FUZZ_ARTIFACTS:-$(dirname "$fuzzer")/fuzz-artifacts}
[[ $seconds =~ ^[0-9]+$ ]] || { echo "RDX_FUZZ_SECONDS must be a whole number of seconds (got '$seconds')" >&2; exit 2; }
[ -x "$fuzzer" ] || { echo "fuzzer $fuzzer not built (engine/tools/build.sh fuzz $(basename "$fuzzer"))" >&2; exit 2; }
[ -d "$seeds" ] || { echo "seed corpus $seeds missing" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$artifacts"
cp "$seeds"/* "$work/corpus/"
status=0
# -timeout: one input taking >10 s is a finding; the outer timeout only guards against a wedged fuzzer.
timeout --kill-after=10 $((seconds + 120)) "$fuzzer" -max_total_time="$seconds" -max_len=8192 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" "$work/corpus" >"$work/log" 2>&1 || status=$?
grep -E "^(stat::|#[0-9]+.*DONE|INFO: Running with|Done )" "$work/log" || true
if [ "$status" -ne 0 ]; then
  tail -60 "$work/log"
  echo "FUZZ FINDING (exit $status); reproducers in $artifacts:" >&2
  ls -la "$artifacts" >&2
  exit "$status"
fi
echo "fuzz: $(basename "$fuzzer") ran ${seconds}s with no finding"
