// RCC's two-phase-locking protocols (the RCC seed, section 3): NOWAIT and WAITDIE. Both lock every key a
// transaction reads during its execution, at the key's primary, with the read (one round trip that returns the
// record and the lock status), hold the locks to the end, and commit as a lock-based commit does: lock the keys
// written blind, replicate the writes through the cluster's replica log, apply them at the primaries, release.
// They share that commit, and its coordinator recovery, with Dandelion's dnl2 (txn/dandelion/: the skeleton,
// configured by CommitSteps; execution_locks.cc is the execution phase), and differ in what a read does when the
// key is held:
//   nowait   aborts the transaction
//   waitdie  waits while the holder is younger (started later), aborts when it is older or unknown
#include "txn/dandelion/dandelion.h"

namespace rdx::txn::twopl {

using dandelion::CommitSteps;
using dandelion::Dandelion;

namespace {
std::unique_ptr<ConcurrencyControl> make(const CcEnv& env, bool wait_die) {
  CommitSteps steps{};
  steps.lock_reads = true;  // the commit's lock step lists every key locked (coordinator recovery asks them all)
  steps.replicate = true;
  steps.apply_in_replicate = true;
  steps.lock_at_read = true;
  steps.wait_die = wait_die;
  return std::make_unique<Dandelion>(env, steps);
}
}  // namespace

std::unique_ptr<ConcurrencyControl> make_nowait(const CcEnv& env) { return make(env, false); }
std::unique_ptr<ConcurrencyControl> make_waitdie(const CcEnv& env) { return make(env, true); }

}  // namespace rdx::txn::twopl
