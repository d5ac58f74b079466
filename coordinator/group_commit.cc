#include "coordinator/group_commit.h"

#include "coordinator/study_run.h"

namespace tuner {

GroupCommit::GroupCommit(LeaseTable& leases, NodeGroups& groups, Outbox& outbox, Clock& clock,
                         std::chrono::milliseconds heartbeat_interval, Listener& listener)
    : leases_(leases),
      groups_(groups),
      outbox_(outbox),
      clock_(clock),
      heartbeat_interval_(heartbeat_interval),
      listener_(listener) {}

void GroupCommit::run(StudyRun* only, const std::function<void()>& body) {
  if (!only) {
    body();
    return;
  }
  open_ = true;
  try {
    only->study.run_batch(body);
  } catch (const std::exception& e) {
    open_ = false;
    undo(*only, e.what());
    return;
  }
  open_ = false;
  std::vector<std::pair<uint64_t, FrozenTrial>> told;
  told.swap(told_);
  std::vector<uint64_t> leased;
  leased.swap(leased_);
  std::vector<std::pair<StudyRun*, FrozenTrial>> ask_failures;
  ask_failures.swap(ask_failures_);
  std::vector<std::pair<std::string, DecisionMessage>> decisions;
  decisions.swap(decisions_);
  if (!told.empty() || !leased.empty() || !ask_failures.empty() || !decisions.empty()) {
    writes_succeeded();
  }
  // In the order the REPORTs came, before the outcomes that came after them.
  for (const auto& [route, decision] : decisions) outbox_.send(route, decision);
  for (auto& [lease_id, finished] : told) {
    if (leases_.contains(lease_id)) listener_.acknowledge(lease_id, finished);
  }
  for (const auto& [failed_run, failed] : ask_failures) failed_run->finished(failed);
  for (uint64_t lease_id : leased) {
    const Lease* lease = leases_.find(lease_id);
    if (lease && lease->unsent) listener_.send_trial(lease_id);
  }
}

void GroupCommit::told(Lease& lease, FrozenTrial finished) {
  leases_.set_outcome_pending(lease, true);
  told_.emplace_back(lease.id, std::move(finished));
}

void GroupCommit::lease_made(Lease& lease) {
  lease.unsent = true;
  leased_.push_back(lease.id);
}

void GroupCommit::decided(const std::string& route, DecisionMessage decision) {
  decisions_.emplace_back(route, std::move(decision));
}

void GroupCommit::ask_failed(StudyRun& run, FrozenTrial failed) {
  ask_failures_.emplace_back(&run, std::move(failed));
}

void GroupCommit::undo(StudyRun& run, const std::string& why) {
  outbox_.log(
      "cannot commit this round's outcomes and new trials (the outcomes are to be sent again, "
      "the trials asked again): " +
      why);
  for (const auto& [lease_id, finished] : told_) {
    Lease* lease = leases_.find(lease_id);
    if (lease && lease->outcome_pending) leases_.set_outcome_pending(*lease, false);
  }
  told_.clear();
  if (!decisions_.empty()) {
    outbox_.log("the intermediate values of " + std::to_string(decisions_.size()) +
                " REPORT(s) of this round are lost (not stored; no DECISION sent)");
  }
  decisions_.clear();
  for (const auto& [failed_run, failed] : ask_failures_) --failed_run->stats.failed_asks;
  ask_failures_.clear();  // their FAIL trials were not stored either
  for (uint64_t lease_id : leased_) {
    auto it = leases_.find_it(lease_id);
    if (it == leases_.end()) continue;
    Lease lease = leases_.take(it);
    listener_.return_credit(lease.route);
    if (lease.group != 0) groups_.erase(lease.group);
    if (lease.node > 0) continue;  // node 0's lease holds the trial
    lease.run->undo_lease(std::move(lease.work));
  }
  leased_.clear();
  run.ask_blocked_until = clock_.steady_now() + heartbeat_interval_;
  run.pbt_check = true;  // segments made in the batch are gone too
  write_failed(why);
}

void GroupCommit::write_failed(const std::string& why) {
  const Clock::SteadyTime now = clock_.steady_now();
  last_error_ = why;
  if (failures_in_a_row_++ == 0) {
    first_failure_ = now;
    listener_.warn("cannot store the study's outcomes and new trials: " + why +
                   "; trying again for " + std::to_string(kGiveUpAfter.count()) +
                   " s (what was committed before is kept)");
  }
  if (storage_failure_ || failures_in_a_row_ < kGiveUpFailures ||
      now - first_failure_ < kGiveUpAfter) {
    return;
  }
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(now - first_failure_).count();
  storage_failure_ = "the study's writes failed " + std::to_string(failures_in_a_row_) +
                     " times in a row over " + std::to_string(seconds) + " s: " + why;
}

void GroupCommit::writes_succeeded() {
  if (failures_in_a_row_ == 0) return;
  if (!storage_failure_) {
    listener_.warn("the study's writes are stored again (after " +
                   std::to_string(failures_in_a_row_) + " failed attempt(s))");
  }
  failures_in_a_row_ = 0;
  last_error_.clear();
}

}  // namespace tuner
