// RCC's OCC (the RCC seed, section 3): execution reads take the latest committed value without locking; the commit
// locks the write set at the primaries, validates the read set (version unchanged, not locked by another), logs the
// writes to the backups through the cluster's replica log, writes them back at the primaries and releases the locks,
// and reports the commit after that. These are the phases of Dandelion's dnl4 (txn/dandelion/), whose skeleton and
// coordinator recovery it runs. What OCC adds is the primitives: with `onesided` or `hybrid` its READ phase reads a
// remote record straight from the primary's memory (txn/remote_records.h); the commit's phases stay RPC (they take
// locks that coordinator recovery must find at the participant, and validation must ask the current primary).
#include "txn/dandelion/dandelion.h"

namespace rdx::txn::occ {

std::unique_ptr<ConcurrencyControl> make_occ(const CcEnv& env) {
  dandelion::CommitSteps steps{};
  steps.validate = true;
  steps.replicate = true;
  steps.report_after_unlock = true;
  return std::make_unique<dandelion::Dandelion>(env, steps);
}

}  // namespace rdx::txn::occ
