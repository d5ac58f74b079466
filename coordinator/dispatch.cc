#include "coordinator/dispatch.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "coordinator/checkpoint_source.h"
#include "util/strings.h"

namespace tuner {

Dispatcher::Dispatcher(StudyRuns& runs, ExecutorRegistry& executors, LeaseTable& leases,
                       NodeGroups& groups, GroupCommit& commit, Outbox& outbox, Clock& clock,
                       std::chrono::milliseconds heartbeat_interval)
    : runs_(runs),
      executors_(executors),
      leases_(leases),
      groups_(groups),
      commit_(commit),
      outbox_(outbox),
      clock_(clock),
      heartbeat_interval_(heartbeat_interval) {}

StudyDemand Dispatcher::demand(const StudyRun& run, bool passed_over) const {
  return StudyDemand{.wants = !passed_over && run.wants_slots(),
                     .leased = run.leases().leased,
                     .gpus_per_trial = run.needs.gpus_per_trial,
                     .gpu_share = run.needs.gpu_share,
                     .gpu_memory = run.needs.gpu_memory_bytes,
                     .nodes_per_trial = run.needs.nodes_per_trial};
}

PlacementInput Dispatcher::snapshot(const std::vector<bool>& passed_over) const {
  PlacementInput input;
  for (const ExecutorEntry* executor : executor_order_) {
    std::vector<GpuMemory> memory;
    for (const GpuInfo& gpu : executor->resources.gpus) {
      memory.push_back(GpuMemory{.index = gpu.index, .bytes = gpu.memory_bytes});
    }
    const int held = leases_.held_on(executor->route);
    input.executors.push_back(
        ExecutorSlots{.credit = std::clamp(executor->capacity - held, 0, executor->credit),
                      .held = held,
                      .cpu_slots = executor->resources.cpu_slots,
                      .gpus = static_cast<int>(executor->resources.gpus.size()),
                      .free_gpus = leases_.free_gpus(executor->route, executor->resources.gpus),
                      .shared_gpus = leases_.shared_gpus(executor->route, executor->resources.gpus),
                      .gpu_memory = std::move(memory)});
  }
  for (size_t s = 0; s < study_order_.size(); ++s) {
    input.studies.push_back(demand(*study_order_[s], passed_over[s]));
  }
  return input;
}

void Dispatcher::log_groups_waiting_for_executors() {
  const int joined = static_cast<int>(executors_.size());
  for (StudyRun* run : study_order_) {
    if (run->needs.nodes_per_trial <= 1 || !run->wants_slots() ||
        joined >= run->needs.nodes_per_trial) {
      continue;
    }
    if (joined > 0 && joined != run->told_executors) {
      outbox_.log("study '" + run->study.name() + "': each trial runs on " +
                  std::to_string(run->needs.nodes_per_trial) +
                  " executors (the job's \"nodes\"), and " + std::to_string(joined) +
                  " have joined: its trials wait for more");
      run->told_executors = joined;
    }
  }
}

void Dispatcher::log_trials_waiting_for_gpus() {
  if (executors_.size() == 0) return;
  // The most GPUs an executor has with `memory` bytes or more (or of unknown memory).
  auto most_gpus_with = [this](uint64_t memory) {
    int most = 0;
    for (auto& [route, executor] : executors_.all()) {
      const auto& gpus = executor.resources.gpus;
      most = std::max(most, static_cast<int>(std::count_if(gpus.begin(), gpus.end(), [&](auto& g) {
                        return g.memory_bytes == 0 || g.memory_bytes >= memory;
                      })));
    }
    return most;
  };
  const int most_gpus = most_gpus_with(0);
  for (StudyRun* run : study_order_) {
    const int needed = run->needs.gpus_per_executor();
    if (const uint64_t memory = run->needs.gpu_memory_bytes; memory > 0 && needed <= most_gpus) {
      const int fit = most_gpus_with(memory);
      if (fit >= needed) {
        run->told_most_gpus = -1;
      } else if (run->wants_slots() && run->told_most_gpus != fit) {
        outbox_.log("study '" + run->study.name() + "': each trial needs " +
                    byte_size_text(memory) +
                    " on each of its GPUs (the job's \"gpu_memory_per_trial\"), and no executor "
                    "joined has enough such GPUs: its trials wait for one, or lower "
                    "gpu_memory_per_trial");
        run->told_most_gpus = fit;
      }
      continue;
    }
    if (needed <= most_gpus) {
      run->told_most_gpus = -1;
      continue;
    }
    if (!run->wants_slots() || run->told_most_gpus == most_gpus) continue;
    const int joined = static_cast<int>(executors_.size());
    outbox_.log("study '" + run->study.name() + "': each trial needs " + run->needs.gpus_text() +
                " (the job's \"gpus_per_trial\"), and the most any of the " +
                std::to_string(joined) + " executor(s) joined has is " + std::to_string(most_gpus) +
                " GPU(s): its trials wait for an executor with " + std::to_string(needed) +
                " or more (`tuner executor --gpus`), or lower gpus_per_trial");
    run->told_most_gpus = most_gpus;
  }
}

void Dispatcher::dispatch() {
  executor_order_.clear();
  study_order_.clear();
  for (auto& [route, executor] : executors_.all()) executor_order_.push_back(&executor);
  for (auto& [id, run] : runs_) study_order_.push_back(run.get());
  std::vector<bool> passed_over(study_order_.size(), false);
  PlacementInput input = snapshot(passed_over);

  // A lease made: the snapshot follows it. A study with nothing to give now, or whose trial
  // could not be sent: passed over for this step (the snapshot is taken again after a failed
  // send, which changed credits and leases).
  auto leased = [&](const Assignment& a) {
    apply(input, a);
    input.studies[a.study] = demand(*study_order_[a.study], passed_over[a.study]);
  };
  auto pass_over = [&](size_t study) {
    passed_over[study] = true;
    input.studies[study].wants = false;
  };

  // 1. Multi-node trials: each goes to `nodes` distinct executors at once, or to none.
  log_groups_waiting_for_executors();
  log_trials_waiting_for_gpus();
  while (std::optional<Assignment> a = next_group(input)) {
    StudyRun& run = *study_order_[a->study];
    std::optional<Prepared> work = run.next_work(commit_);
    if (!work) {
      pass_over(a->study);
      continue;
    }
    std::vector<ExecutorEntry*> nodes;
    for (size_t e : a->executors) nodes.push_back(executor_order_[e]);
    if (lease_group(nodes, run, std::move(*work), a->gpus)) {
      leased(*a);
    } else {
      passed_over[a->study] = true;
      input = snapshot(passed_over);
    }
  }

  // 2. The executors kept for multi-node trials whose turn it is, by every study that wants
  // slots now (one whose ask must wait keeps its executors).
  std::fill(passed_over.begin(), passed_over.end(), false);
  for (size_t s = 0; s < study_order_.size(); ++s)
    input.studies[s] = demand(*study_order_[s], false);
  const std::vector<bool> reserved = reserve_for_groups(input);

  // 3. Single-node trials, executor by executor, the fewest leased study first.
  while (std::optional<Assignment> a = next_single(input, reserved)) {
    StudyRun& run = *study_order_[a->study];
    std::optional<Prepared> work = run.next_work(commit_);
    if (!work) {
      pass_over(a->study);  // nothing from this study now: the next may have some
      continue;
    }
    if (lease_to(*executor_order_[a->executors.front()], run, std::move(*work), a->gpus.front())) {
      leased(*a);
    } else {
      input = snapshot(passed_over);  // the executor is gone: its credit is 0
    }
  }
}

bool Dispatcher::lease_to(ExecutorEntry& executor, StudyRun& run, Prepared work,
                          std::vector<int> gpus) {
  const int64_t trial_id = work.trial->id();
  const int number = work.trial->number();
  Lease& lease = leases_.grant(LeaseRequest{.run = &run,
                                            .executor_id = executor.executor_id,
                                            .route = executor.route,
                                            .work = std::move(work),
                                            .trial_id = trial_id,
                                            .trial_number = number,
                                            .gpus = std::move(gpus),
                                            .gpu_share = run.needs.gpu_share},
                               clock_.steady_now());
  --executor.credit;
  if (commit_.open()) {
    commit_.lease_made(lease);
    return true;
  }
  return send_trial(lease);
}

bool Dispatcher::lease_group(const std::vector<ExecutorEntry*>& nodes, StudyRun& run, Prepared work,
                             const std::vector<std::vector<int>>& gpus) {
  const uint64_t group_id = leases_.next_id();
  NodeGroup& group = groups_.open(group_id);
  const int64_t trial_id = work.trial->id();
  const int number = work.trial->number();
  for (size_t n = 0; n < nodes.size(); ++n) {
    ExecutorEntry& executor = *nodes[n];
    LeaseRequest request{.run = &run,
                         .executor_id = executor.executor_id,
                         .route = executor.route,
                         .trial_id = trial_id,
                         .trial_number = number,
                         .group = group_id,
                         .node = static_cast<int>(n),
                         .nodes = static_cast<int>(nodes.size()),
                         .gpus = gpus[n]};
    if (n == 0) {
      request.work = std::move(work);
    } else {
      const Prepared& first = leases_.find(group_id)->work;
      request.work.params = first.params;
      request.work.attempt = first.attempt;
      request.work.history = first.history;
    }
    Lease& lease = leases_.grant(std::move(request), clock_.steady_now());
    --executor.credit;
    group.leases.push_back(lease.id);
    if (commit_.open()) commit_.lease_made(lease);
  }
  if (commit_.open()) return true;
  for (uint64_t lease_id : std::vector<uint64_t>(group.leases)) {
    Lease* lease = leases_.find(lease_id);
    if (!lease || !send_trial(*lease)) return false;
  }
  return true;
}

bool Dispatcher::send_trial(Lease& lease) {
  const Prepared& work = lease.work;
  TrialMessage message{.lease_id = lease.id,
                       .study_name = lease.run->study.name(),
                       .trial_id = lease.trial_id,
                       .number = lease.trial_number,
                       .attempt = work.attempt,
                       .params = work.params,
                       .job_json = lease.run->options.job_json,
                       .heartbeat_interval_ms = heartbeat_interval_.count(),
                       .gpus = lease.gpus,
                       .node = lease.node,
                       .nodes = lease.nodes};
  // The lineage's first trial names the checkpoint, so that a re-run after a lost lease
  // continues where the lost attempt last saved. A PBT segment starts from its parent's
  // checkpoint (the executor copies it to its own).
  message.checkpoint_path = lease_checkpoint_path(lease, CheckpointOf::kOwn);
  message.start_checkpoint_path = lease_checkpoint_path(lease, CheckpointOf::kStart);
  if (work.segment && lease.run->options.pbt) {
    message.pause_at_step = lease.run->options.pbt->segment_end(work.segment->segment);
  }
  lease.unsent = false;
  if (outbox_.send(lease.route, message)) return true;
  outbox_.log("executor " + lease.executor_id + " is unreachable; trial " +
              std::to_string(lease.trial_number) + " waits for another");
  if (ExecutorEntry* executor = executors_.find(lease.route)) executor->credit = 0;
  if (lease.group != 0) {
    groups_.undo(lease.group, "executor " + lease.executor_id + " of another node was unreachable");
    return false;
  }
  Lease undone = leases_.take(lease.id);
  undone.run->requeue(std::move(undone.work));
  return false;
}

void Dispatcher::take_back(const ExecutorEntry& executor, const std::vector<HeldLease>& held) {
  for (const HeldLease& h : held) {
    if (leases_.contains(h.lease_id) || h.node > 0) continue;  // node 0 tells the trial
    for (auto& [id, run] : runs_) {
      if (run->study.name() != h.study_name) continue;
      std::optional<Prepared> work = run->take_back(h.trial_id);
      if (!work) break;
      const int number = work->trial->number();
      const Lease& lease = leases_.grant(LeaseRequest{.run = run.get(),
                                                      .executor_id = executor.executor_id,
                                                      .route = executor.route,
                                                      .work = std::move(*work),
                                                      .trial_id = h.trial_id,
                                                      .trial_number = number,
                                                      .gpus = h.gpus,
                                                      .gpu_share = run->needs.gpu_share,
                                                      .id = h.lease_id},
                                         clock_.steady_now());
      outbox_.log(leases_.describe(lease) + " taken back from an earlier coordinator");
      break;
    }
  }
}

}  // namespace tuner
