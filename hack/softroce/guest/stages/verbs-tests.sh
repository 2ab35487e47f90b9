#!/bin/bash
# The verbs backend's gtest binary (backend tests + the shared conformance suite) on rxe. A skipped test here means
# the device was not usable: that is a failure, never a pass. Counts go to results/verbs-tests.counts.
set -uo pipefail
bin=$RDX_BIN/transport_verbs_test
[ -x "$bin" ] || { echo "missing $bin"; exit 1; }
export RDX_VERBS_ADDR=$RDMA_IP
# shellcheck disable=SC2086  # VERBS_TEST_ARGS holds several flags
"$bin" --gtest_color=no --gtest_output=xml:"$RESULTS/verbs-tests.xml" ${VERBS_TEST_ARGS:-} 2>&1 | tee /tmp/verbs-tests.out
rc=${PIPESTATUS[0]}
count() { grep -oE "^\[  $1 *\] [0-9]+ test" /tmp/verbs-tests.out | grep -oE '[0-9]+' | tail -n1; }
passed=$(count PASSED); failed=$(count FAILED); skipped=$(count SKIPPED)
total=$(grep -oE '^\[==========\] [0-9]+ tests' /tmp/verbs-tests.out | grep -oE '[0-9]+' | tail -n1)
echo "total=${total:-0} passed=${passed:-0} failed=${failed:-0} skipped=${skipped:-0}" | tee "$RESULTS/verbs-tests.counts"
[ "$rc" -eq 0 ] || { echo "verbs tests failed (exit $rc)"; exit 1; }
[ "${skipped:-0}" -eq 0 ] || { echo "verbs tests NOT RUN in the VM: ${skipped} skipped (see above)"; exit 1; }
[ "${passed:-0}" -gt 0 ] || { echo "no verbs test passed"; exit 1; }
