#!/usr/bin/env bash
# make test-engine: lint; the gtest suite (with the family conformance suites) and multi-process integration tests on
# the release build; the unit tests and the failure-path integration tests on ASan+UBSan binaries; the concurrency
# tests (the conformance suites among them) under TSan; the RESP parser fuzzer for RDX_FUZZ_SECONDS (default 60).
# RDX_ENGINE_TIERS (default "release asan tsan fuzz") selects tiers (RDX_TEST_TIERS is hack/test-all.sh's: engine, operator, ...).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tiers=${RDX_ENGINE_TIERS:-release asan tsan fuzz}
jobs=${RDX_JOBS:-2}
# The multi-process tests run in their own venv (tools/python-env.sh: pinned packages), whatever python3 is first on
# PATH (on these machines it is pyenv's, without redis-py): a missing module fails the run, never skips it.
python=${RDX_PYTHON:-$(bash "$here/tools/python-env.sh")}
log() { printf '\n=== %s ===\n' "$*"; }
# The planted-bug tests check that the checker catches a protocol's test-only fault, not the engine: the release tier
# runs them, the sanitizer tiers do not (under TSan they were the slowest tests, about 20-35 s each). Hermes' test of the
# paper's unconditional writes is one: it plants them (TestFaults::unconditional_writes) and needs 9000 operations.
planted='CheckerCatchesAProtocolThatDoesNotCheckItsReads|PlantedFaultIsCaught|ThePapersUnconditionalWritesLoseUpdates'

run_ctest() {  # flavor [ctest args...]
  local flavor=$1; shift
  ctest --test-dir "$here/build/$flavor" --output-on-failure --timeout 300 -j "$jobs" "$@"
}

verbs_note() {  # report verbs tests honestly: run where a device exists, otherwise say why they did not run
  local bin=$here/build/$1/src/transport/verbs/transport_verbs_test
  [ -x "$bin" ] || return 0
  local out; out=$("$bin" 2>&1 || true)
  if grep -q "NOT RUN" <<<"$out"; then
    echo "verbs transport tests: NOT RUN here ($(grep -o 'NOT RUN[^)]*)' <<<"$out" | head -1)); they run on soft-RoCE in make test-softroce"
  fi
}

log "lint"
bash "$here/tools/lint.sh"
"$python" -c 'import pytest, redis, yaml' || { echo "error: $python lacks pytest, redis-py or PyYAML" >&2; exit 1; }

# pytest: every collected test must pass (a skip fails the run: see tests/integration/conftest.py).
integration() {  # binaries-dir pytest-args...
  local bin=$1; shift
  RDX_BIN=$bin "$python" -m pytest -q -p no:cacheprovider "$@"
}

for tier in $tiers; do
  case $tier in
    release)
      log "release: build"
      bash "$here/tools/build.sh" release
      log "release: unit tests (gtest via ctest)"
      run_ctest release
      verbs_note release
      log "release: rdx-lincheck (Go: Porcupine model tests)"
      (cd "$here/tools/lincheck" && test -z "$(gofmt -l .)" && go vet . && go test -count=1 .) ||
        { echo "error: rdx-lincheck: gofmt, vet or tests failed" >&2; exit 1; }
      log "release: multi-process integration tests"
      integration "$here/build/release/bin" "$here/tests/integration" --durations=25  # (the slowest: the test budget)
      ;;
    asan)
      log "asan: build (ASan+UBSan)"
      bash "$here/tools/build.sh" asan
      log "asan: unit tests"
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 run_ctest asan \
        -E "$planted"
      log "asan: failure-path integration tests on sanitized binaries"
      # Crashes, restarts, hostile input, and transactions under load through Dandelion's commit and RCC's OCC with
      # one-sided reads (the other protocols' code runs sanitized in the conformance suites above; the checker's
      # planted-anomaly tests check the checker, not the engine); the release tier ran every test.
      ASAN_OPTIONS=detect_leaks=1 integration "$here/build/asan/bin" \
        "$here/tests/integration/test_cluster.py" "$here/tests/integration/test_bad_input.py" \
        "$here/tests/integration/test_recovery.py" "$here/tests/integration/test_txn.py" \
        -k "not dnl2 and not dnl1 and not nowait and not waitdie and not mvcc and not sundial and not hybrid and not planted"
      ;;
    tsan)
      log "tsan: build (the concurrency tests)"
      bash "$here/tools/build.sh" tsan transport_tcp_test store_test rpc_test cluster_test replication_conformance \
        txn_conformance sessions_conformance
      log "tsan: concurrency tests"
      TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 run_ctest tsan -L concurrency -E "$planted"
      ;;
    fuzz)
      log "fuzz: build (clang, libFuzzer + ASan + UBSan)"
      bash "$here/tools/build.sh" fuzz resp_parser_fuzz
      log "fuzz: RESP parser for ${RDX_FUZZ_SECONDS:-60} s"
      run_ctest fuzz -L fuzz
      ;;
    *) echo "unknown tier $tier" >&2; exit 2 ;;
  esac
done
log "engine tests passed ($tiers)"
