#include "coordinator/placement.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace tuner {

namespace {

// Whether GPU `index` of `executor` has room for `need` more bytes of memory where `held` are
// held: always where either the need or the GPU's memory is not known.
bool memory_fits(const ExecutorSlots& executor, int index, uint64_t held, uint64_t need) {
  if (need == 0) return true;
  for (const GpuMemory& gpu : executor.gpu_memory) {
    if (gpu.index == index) {
      return gpu.bytes == 0 || (held <= gpu.bytes && need <= gpu.bytes - held);
    }
  }
  return true;
}

// The GPU with the most room left that fits the study's share and memory, or nullopt. Its room:
// kWholeGpu when free (the first free one wins ties), else what the shares held on it leave.
std::optional<int> gpu_with_room(const ExecutorSlots& executor, const StudyDemand& study) {
  std::optional<int> best;
  int best_room = 0;
  auto consider = [&](int index, int room, uint64_t memory_held) {
    if (room >= study.gpu_share && (!best || room > best_room) &&
        memory_fits(executor, index, memory_held, study.gpu_memory)) {
      best = index;
      best_room = room;
    }
  };
  for (int index : executor.free_gpus) consider(index, kWholeGpu, 0);
  for (const SharedGpu& gpu : executor.shared_gpus) {
    consider(gpu.index, kWholeGpu - gpu.used, gpu.memory);
  }
  return best;
}

// The free GPUs of `executor` with the memory a whole-GPU trial of `study` takes, in its order.
std::vector<int> free_gpus_that_fit(const ExecutorSlots& executor, const StudyDemand& study) {
  std::vector<int> gpus;
  for (int index : executor.free_gpus) {
    if (memory_fits(executor, index, 0, study.gpu_memory)) gpus.push_back(index);
  }
  return gpus;
}

bool has_gpus_free(const ExecutorSlots& executor, const StudyDemand& study) {
  if (study.gpu_share > 0) return gpu_with_room(executor, study).has_value();
  if (study.gpus_per_trial <= 0) return true;
  const auto fits = [&](int index) { return memory_fits(executor, index, 0, study.gpu_memory); };
  return std::count_if(executor.free_gpus.begin(), executor.free_gpus.end(), fits) >=
         study.gpus_per_trial;
}

// The first gpus_per_trial free GPUs of `executor` that fit, or the GPU its share goes to (none
// for a study that needs none). REQUIRES: has_gpus_free(executor, study).
std::vector<int> gpus_for(const ExecutorSlots& executor, const StudyDemand& study) {
  if (study.gpu_share > 0) return {*gpu_with_room(executor, study)};
  if (study.gpus_per_trial <= 0) return {};
  std::vector<int> gpus = free_gpus_that_fit(executor, study);
  gpus.resize(static_cast<size_t>(study.gpus_per_trial));
  return gpus;
}

// A share of GPU `index` taken on `executor` by a trial of `study`: a free GPU becomes a shared
// one.
void take_share(ExecutorSlots& executor, int index, const StudyDemand& study) {
  for (SharedGpu& gpu : executor.shared_gpus) {
    if (gpu.index == index) {
      gpu.used += study.gpu_share;
      gpu.memory += study.gpu_memory;
      return;
    }
  }
  executor.free_gpus.erase(std::remove(executor.free_gpus.begin(), executor.free_gpus.end(), index),
                           executor.free_gpus.end());
  executor.shared_gpus.push_back(
      SharedGpu{.index = index, .used = study.gpu_share, .memory = study.gpu_memory});
}

}  // namespace

int gpu_share(double fraction) {
  if (fraction <= 0) return 0;
  return std::clamp(static_cast<int>(std::lround(fraction * kWholeGpu)), 1, kWholeGpu);
}

std::optional<Assignment> next_group(const PlacementInput& input) {
  for (size_t s = 0; s < input.studies.size(); ++s) {
    const StudyDemand& study = input.studies[s];
    if (study.nodes_per_trial <= 1 || !study.wants) continue;
    Assignment assignment{.study = s};
    for (size_t e = 0; e < input.executors.size(); ++e) {
      const ExecutorSlots& executor = input.executors[e];
      if (executor.credit <= 0 || executor.held >= executor.cpu_slots) continue;
      if (!has_gpus_free(executor, study)) continue;
      assignment.executors.push_back(e);
      assignment.gpus.push_back(gpus_for(executor, study));
      if (static_cast<int>(assignment.executors.size()) == study.nodes_per_trial) {
        return assignment;
      }
    }
  }
  return std::nullopt;
}

std::vector<bool> reserve_for_groups(const PlacementInput& input) {
  std::vector<bool> reserved(input.executors.size(), false);
  int fewest_single_node = std::numeric_limits<int>::max();
  for (const StudyDemand& study : input.studies) {
    if (study.nodes_per_trial == 1 && study.wants) {
      fewest_single_node = std::min(fewest_single_node, study.leased);
    }
  }
  for (const StudyDemand& study : input.studies) {
    if (study.nodes_per_trial <= 1 || !study.wants || study.leased > fewest_single_node) continue;
    std::vector<std::pair<int, size_t>> eligible;  // (leases held, executor)
    for (size_t e = 0; e < input.executors.size(); ++e) {
      if (reserved[e] || input.executors[e].gpus < study.gpus_per_trial) continue;
      eligible.emplace_back(input.executors[e].held, e);
    }
    if (static_cast<int>(eligible.size()) < study.nodes_per_trial) continue;
    std::stable_sort(eligible.begin(), eligible.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (int n = 0; n < study.nodes_per_trial; ++n) reserved[eligible[n].second] = true;
  }
  return reserved;
}

std::optional<Assignment> next_single(const PlacementInput& input,
                                      const std::vector<bool>& reserved) {
  for (size_t e = 0; e < input.executors.size(); ++e) {
    const ExecutorSlots& executor = input.executors[e];
    if (reserved[e] || executor.credit <= 0 || executor.held >= lease_limit(executor.cpu_slots)) {
      continue;
    }
    std::optional<size_t> chosen;
    for (size_t s = 0; s < input.studies.size(); ++s) {
      const StudyDemand& study = input.studies[s];
      if (!study.wants || study.nodes_per_trial > 1 || !has_gpus_free(executor, study)) continue;
      if (!chosen || study.leased < input.studies[*chosen].leased) chosen = s;
    }
    if (chosen) {
      return Assignment{
          .study = *chosen, .executors = {e}, .gpus = {gpus_for(executor, input.studies[*chosen])}};
    }
  }
  return std::nullopt;
}

void apply(PlacementInput& input, const Assignment& assignment) {
  for (size_t n = 0; n < assignment.executors.size(); ++n) {
    ExecutorSlots& executor = input.executors[assignment.executors[n]];
    --executor.credit;
    ++executor.held;
    if (const StudyDemand& study = input.studies[assignment.study]; study.gpu_share > 0) {
      for (int gpu : assignment.gpus.at(n)) take_share(executor, gpu, study);
    } else if (n < assignment.gpus.size()) {
      for (int gpu : assignment.gpus[n]) {
        executor.free_gpus.erase(
            std::remove(executor.free_gpus.begin(), executor.free_gpus.end(), gpu),
            executor.free_gpus.end());
      }
    }
  }
  ++input.studies[assignment.study].leased;
}

std::vector<Assignment> plan(PlacementInput input, std::vector<int> trials) {
  for (size_t s = 0; s < input.studies.size(); ++s) input.studies[s].wants = trials[s] > 0;
  std::vector<Assignment> round;
  auto take = [&](Assignment assignment) {
    apply(input, assignment);
    if (--trials[assignment.study] <= 0) input.studies[assignment.study].wants = false;
    round.push_back(std::move(assignment));
  };
  while (std::optional<Assignment> a = next_group(input)) take(std::move(*a));
  const std::vector<bool> reserved = reserve_for_groups(input);
  while (std::optional<Assignment> a = next_single(input, reserved)) take(std::move(*a));
  return round;
}

}  // namespace tuner
