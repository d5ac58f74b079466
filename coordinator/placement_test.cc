#include "coordinator/placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

namespace tuner {
namespace {

ExecutorSlots executor(int credit, int cpu_slots, int held = 0, std::vector<int> free_gpus = {}) {
  return ExecutorSlots{.credit = credit,
                       .held = held,
                       .cpu_slots = cpu_slots,
                       .gpus = static_cast<int>(free_gpus.size()),
                       .free_gpus = std::move(free_gpus)};
}

StudyDemand study(int leased = 0, int gpus_per_trial = 0, int nodes_per_trial = 1) {
  return StudyDemand{.wants = true,
                     .leased = leased,
                     .gpus_per_trial = gpus_per_trial,
                     .nodes_per_trial = nodes_per_trial};
}

// A study whose trials each take `fraction` of one GPU (a command job's gpus_per_trial < 1).
StudyDemand sharing_study(double fraction, int leased = 0) {
  StudyDemand demand = study(leased);
  demand.gpu_share = gpu_share(fraction);
  return demand;
}

// How many trials of `round` got each GPU (single-node trials: one executor each).
std::map<int, int> trials_per_gpu(const std::vector<Assignment>& round) {
  std::map<int, int> count;
  for (const Assignment& a : round) {
    for (int gpu : a.gpus.at(0)) ++count[gpu];
  }
  return count;
}

// The studies of a round's assignments, in order.
std::vector<size_t> studies_of(const std::vector<Assignment>& round) {
  std::vector<size_t> studies;
  for (const Assignment& a : round) studies.push_back(a.study);
  return studies;
}

TEST(PlacementTest, AFreeSlotGoesToTheStudyWithTheFewestTrialsLeased) {
  PlacementInput input{.executors = {executor(/*credit=*/4, /*cpu_slots=*/4)},
                       .studies = {study(/*leased=*/2), study(/*leased=*/0)}};
  const std::vector<Assignment> round = plan(input, {10, 10});
  // Study 1 catches up first (0, 1 < 2), then they take turns, study 0 first on ties.
  EXPECT_EQ(studies_of(round), (std::vector<size_t>{1, 1, 0, 1}));
}

TEST(PlacementTest, TiesGoToTheStudyAddedFirst) {
  PlacementInput input{.executors = {executor(3, 4)}, .studies = {study(), study(), study()}};
  EXPECT_EQ(studies_of(plan(input, {5, 5, 5})), (std::vector<size_t>{0, 1, 2}));
  std::optional<Assignment> first = next_single(input, {false});
  ASSERT_TRUE(first);
  EXPECT_EQ(first->study, 0u);
}

TEST(PlacementTest, AStudyWithNothingToLeaseIsPassedOver) {
  PlacementInput input{.executors = {executor(4, 4)}, .studies = {study(), study(/*leased=*/3)}};
  // Study 0 has one trial to give: then study 1 gets the rest, though it has more leased.
  EXPECT_EQ(studies_of(plan(input, {1, 5})), (std::vector<size_t>{0, 1, 1, 1}));
  input.studies[0].wants = false;
  input.studies[1].wants = false;
  EXPECT_FALSE(next_single(input, {false}));
}

TEST(PlacementTest, AnExecutorTakesItsSlotsAndAsManyAgainAheadAtMost) {
  EXPECT_EQ(lease_limit(3), 6);
  // Credit beyond the limit is not used: 2 slots, 1 lease held, 3 more at most.
  PlacementInput input{.executors = {executor(/*credit=*/10, /*cpu_slots=*/2, /*held=*/1)},
                       .studies = {study()}};
  EXPECT_EQ(plan(input, {10}).size(), 3u);
  // And no more than its credit.
  input.executors[0].credit = 2;
  EXPECT_EQ(plan(input, {10}).size(), 2u);
  // An executor without slots takes nothing.
  input.executors[0] = executor(5, 0);
  EXPECT_TRUE(plan(input, {10}).empty());
}

TEST(PlacementTest, EachTrialGetsTheGpusItNeedsOrWaits) {
  PlacementInput input{.executors = {executor(4, 4, 0, {0, 1, 2})},
                       .studies = {study(0, /*gpus_per_trial=*/2)}};
  std::vector<Assignment> round = plan(input, {5});
  ASSERT_EQ(round.size(), 1u);  // two GPUs left would be needed for a second
  EXPECT_EQ(round[0].gpus, (std::vector<std::vector<int>>{{0, 1}}));

  // A GPU held (not free) is not given; a study that needs none takes the slot.
  input.executors[0].free_gpus = {2};
  input.studies.push_back(study());
  round = plan(input, {5, 1});
  ASSERT_EQ(round.size(), 1u);
  EXPECT_EQ(round[0].study, 1u);
  EXPECT_EQ(round[0].gpus, (std::vector<std::vector<int>>{{}}));

  // apply() takes the GPUs given.
  input = PlacementInput{.executors = {executor(4, 4, 0, {3, 5})}, .studies = {study(0, 1)}};
  round = plan(input, {5});
  ASSERT_EQ(round.size(), 2u);
  EXPECT_EQ(round[0].gpus[0], std::vector<int>{3});
  EXPECT_EQ(round[1].gpus[0], std::vector<int>{5});
}

TEST(PlacementTest, GpuSharesAreFractionsOfOneGpuInMillionths) {
  EXPECT_EQ(gpu_share(0), 0);
  EXPECT_EQ(gpu_share(0.5), kWholeGpu / 2);
  EXPECT_EQ(gpu_share(0.25), 250'000);
  EXPECT_EQ(gpu_share(1.0 / 3), 333'333);  // three fit in one GPU
  EXPECT_EQ(gpu_share(1e-9), 1);           // never nothing
}

TEST(PlacementTest, HalfAGpuPerTrialRunsTwoTrialsOnEachOfFourGpus) {
  PlacementInput input{.executors = {executor(/*credit=*/16, /*cpu_slots=*/16, 0, {0, 1, 2, 3})},
                       .studies = {sharing_study(0.5)}};
  const std::vector<Assignment> round = plan(input, {20});
  ASSERT_EQ(round.size(), 8u);  // 8 at once, though 16 slots and 20 trials
  EXPECT_EQ(trials_per_gpu(round), (std::map<int, int>{{0, 2}, {1, 2}, {2, 2}, {3, 2}}));
  // Spread first: the first four trials go to four GPUs, one each.
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(round[i].gpus[0], std::vector<int>{static_cast<int>(i)});
  for (const Assignment& a : round) EXPECT_EQ(a.gpus[0].size(), 1u);
}

TEST(PlacementTest, ASharedGpuTakesNoMoreTrialsThanItsSharesAllow) {
  // GPU 0 holds one share of 1/2 already, GPU 1 two (full): one more trial fits, on GPU 0.
  PlacementInput input{.executors = {executor(8, 8, /*held=*/3, {})},
                       .studies = {sharing_study(0.5)}};
  input.executors[0].gpus = 2;
  input.executors[0].shared_gpus = {SharedGpu{.index = 0, .used = kWholeGpu / 2},
                                    SharedGpu{.index = 1, .used = kWholeGpu}};
  std::vector<Assignment> round = plan(input, {5});
  ASSERT_EQ(round.size(), 1u);
  EXPECT_EQ(round[0].gpus[0], std::vector<int>{0});

  // Thirds: 3 per GPU, never a 4th.
  input = PlacementInput{.executors = {executor(10, 10, 0, {0, 1})},
                         .studies = {sharing_study(1.0 / 3)}};
  round = plan(input, {10});
  EXPECT_EQ(trials_per_gpu(round), (std::map<int, int>{{0, 3}, {1, 3}}));
  // 0.4: 2 per GPU (1/0.4 = 2.5).
  input.studies = {sharing_study(0.4)};
  EXPECT_EQ(trials_per_gpu(plan(input, {10})), (std::map<int, int>{{0, 2}, {1, 2}}));
}

TEST(PlacementTest, WholeGpusAreNeverGivenToOneTrialAndSharedWithAnother) {
  // A study of whole GPUs and one of halves on 3 GPUs: each GPU goes whole or in halves.
  PlacementInput input{.executors = {executor(10, 10, 0, {0, 1, 2})},
                       .studies = {study(0, /*gpus_per_trial=*/1), sharing_study(0.5)}};
  const std::vector<Assignment> round = plan(input, {5, 5});
  std::map<int, int> whole;
  std::map<int, int> halves;
  for (const Assignment& a : round) (a.study == 0 ? whole : halves)[a.gpus[0].at(0)]++;
  for (const auto& [gpu, n] : whole) {
    EXPECT_EQ(n, 1);
    EXPECT_EQ(halves.count(gpu), 0u) << "GPU " << gpu;
  }
  for (const auto& [gpu, n] : halves) EXPECT_LE(n, 2);
  EXPECT_FALSE(whole.empty());
  EXPECT_FALSE(halves.empty());
  // And apply() kept the books: no GPU left free or with room for a half.
  PlacementInput after = input;
  for (const Assignment& a : round) apply(after, a);
  after.studies = {study(0, 1), sharing_study(0.5)};
  EXPECT_FALSE(next_single(after, {false}));

  // A shared GPU is not free: a whole-GPU trial waits for one nobody shares.
  input = PlacementInput{.executors = {executor(4, 4, 1, {1})}, .studies = {study(0, 2)}};
  input.executors[0].gpus = 2;
  input.executors[0].shared_gpus = {SharedGpu{.index = 0, .used = kWholeGpu / 4}};
  EXPECT_TRUE(plan(input, {1}).empty());
}

TEST(PlacementTest, MixedFractionsShareAGpuWhileTheySumToAtMostOne) {
  // Studies of 0.5 and 0.25 on one GPU: shares are placed while they fit in it.
  PlacementInput input{.executors = {executor(10, 10, 0, {0})},
                       .studies = {sharing_study(0.5), sharing_study(0.25)}};
  std::vector<Assignment> round = plan(input, {5, 5});
  int used = 0;
  for (const Assignment& a : round) {
    used += input.studies[a.study].gpu_share;
    EXPECT_EQ(a.gpus[0], std::vector<int>{0});
  }
  EXPECT_LE(used, kWholeGpu);
  // Fair share: study 0 (0.5), study 1 (0.25), study 1 (0.25): the GPU is full.
  EXPECT_EQ(studies_of(round), (std::vector<size_t>{0, 1, 1}));
  EXPECT_EQ(used, kWholeGpu);

  // 0.75 and 0.5 never share: the 0.5 goes to the other GPU.
  input = PlacementInput{.executors = {executor(10, 10, 0, {0, 1})},
                         .studies = {sharing_study(0.75), sharing_study(0.5)}};
  round = plan(input, {1, 5});
  ASSERT_EQ(round.size(), 3u);  // 0.75 on GPU 0; 0.5 and 0.5 on GPU 1
  EXPECT_EQ(round[0].gpus[0], std::vector<int>{0});
  EXPECT_EQ(round[1].gpus[0], std::vector<int>{1});
  EXPECT_EQ(round[2].gpus[0], std::vector<int>{1});
}

TEST(PlacementTest, GpuMemoryBoundsHowManySharesAGpuTakes) {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  // Quarters of two 80 GiB GPUs, 30 GiB each: 2 per GPU by memory, though the shares allow 4.
  PlacementInput input{.executors = {executor(16, 16, 0, {0, 1})},
                       .studies = {sharing_study(0.25)}};
  input.executors[0].gpu_memory = {GpuMemory{0, 80 * kGiB}, GpuMemory{1, 80 * kGiB}};
  input.studies[0].gpu_memory = 30 * kGiB;
  EXPECT_EQ(trials_per_gpu(plan(input, {10})), (std::map<int, int>{{0, 2}, {1, 2}}));
  // Without the memory stated, the shares alone bound it.
  input.studies[0].gpu_memory = 0;
  EXPECT_EQ(trials_per_gpu(plan(input, {10})), (std::map<int, int>{{0, 4}, {1, 4}}));
  // A GPU of unknown memory (declared with --gpus) is bounded by the shares alone.
  input.studies[0].gpu_memory = 30 * kGiB;
  input.executors[0].gpu_memory = {GpuMemory{0, 80 * kGiB}};
  EXPECT_EQ(trials_per_gpu(plan(input, {10})), (std::map<int, int>{{0, 2}, {1, 4}}));

  // Memory already held on a shared GPU counts: 50 of 80 GiB held leaves room for one 30 GiB.
  input = PlacementInput{.executors = {executor(8, 8, /*held=*/2, {})},
                         .studies = {sharing_study(0.25)}};
  input.executors[0].gpus = 1;
  input.executors[0].shared_gpus = {
      SharedGpu{.index = 0, .used = kWholeGpu / 2, .memory = 50 * kGiB}};
  input.executors[0].gpu_memory = {GpuMemory{0, 80 * kGiB}};
  input.studies[0].gpu_memory = 30 * kGiB;
  EXPECT_EQ(plan(input, {5}).size(), 1u);
  input.studies[0].gpu_memory = 31 * kGiB;
  EXPECT_TRUE(plan(input, {5}).empty());
}

TEST(PlacementTest, AWholeGpuTrialGoesOnlyToGpusWithTheMemoryItStates) {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  // GPUs 0 and 2 have 24 GiB, GPU 1 has 80: a trial of 40 GiB gets GPU 1 only.
  PlacementInput input{.executors = {executor(8, 8, 0, {0, 1, 2})},
                       .studies = {study(0, /*gpus_per_trial=*/1)}};
  input.executors[0].gpu_memory = {GpuMemory{0, 24 * kGiB}, GpuMemory{1, 80 * kGiB},
                                   GpuMemory{2, 24 * kGiB}};
  input.studies[0].gpu_memory = 40 * kGiB;
  const std::vector<Assignment> round = plan(input, {3});
  ASSERT_EQ(round.size(), 1u);
  EXPECT_EQ(round[0].gpus[0], std::vector<int>{1});
  // Two GPUs each: no executor has two that fit.
  input.studies[0].gpus_per_trial = 2;
  EXPECT_TRUE(plan(input, {3}).empty());
}

TEST(PlacementTest, AnExecutorWithoutGpusGetsNoGpuTrial) {
  // Executor 0 is a CPU executor with plenty of slots; executor 1 has two GPUs.
  PlacementInput input{.executors = {executor(8, 8), executor(8, 8, 0, {0, 1})},
                       .studies = {sharing_study(0.5)}};
  std::vector<Assignment> round = plan(input, {10});
  ASSERT_EQ(round.size(), 4u);
  for (const Assignment& a : round) EXPECT_EQ(a.executors, std::vector<size_t>{1});
  // Whole GPUs likewise; a study without GPUs takes the CPU executor's slots.
  input.studies = {study(0, 1), study()};
  round = plan(input, {10, 3});
  for (const Assignment& a : round) {
    if (a.study == 0) EXPECT_EQ(a.executors, std::vector<size_t>{1});
  }
  EXPECT_EQ(
      std::count_if(round.begin(), round.end(), [](const Assignment& a) { return a.study == 0; }),
      2);
  // Only CPU executors: nothing.
  input.executors = {executor(8, 8)};
  input.studies = {sharing_study(0.5)};
  EXPECT_TRUE(plan(input, {10}).empty());
}

TEST(PlacementTest, AMultiNodeTrialGoesToAsManyExecutorsWithAFreeSlotAtOnce) {
  PlacementInput input{
      .executors = {executor(2, 1, /*held=*/1), executor(2, 1), executor(0, 1), executor(1, 2)},
      .studies = {study(0, 0, /*nodes_per_trial=*/2)}};
  // Executor 0's slot is taken (a trial taken ahead does not count), executor 2 has no credit.
  std::optional<Assignment> group = next_group(input);
  ASSERT_TRUE(group);
  EXPECT_EQ(group->study, 0u);
  EXPECT_EQ(group->executors, (std::vector<size_t>{1, 3}));
  apply(input, *group);
  EXPECT_EQ(input.executors[1].held, 1);
  EXPECT_EQ(input.executors[3].credit, 0);
  EXPECT_EQ(input.studies[0].leased, 1);
  EXPECT_FALSE(next_group(input));  // only executor 3 has a free slot (and no credit) now
}

TEST(PlacementTest, CudaNodesEachGetTheGpusOfTheirRanks) {
  PlacementInput input{.executors = {executor(1, 1, 0, {0}), executor(1, 1, 0, {0, 1}),
                                     executor(1, 1, 0, {4, 5, 6})},
                       .studies = {study(0, /*gpus_per_trial=*/2, /*nodes_per_trial=*/2)}};
  std::optional<Assignment> group = next_group(input);
  ASSERT_TRUE(group);
  EXPECT_EQ(group->executors, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(group->gpus, (std::vector<std::vector<int>>{{0, 1}, {4, 5}}));
}

// Without the reservation, the single-node study would take each slot as it frees, and the
// multi-node trial, which needs both executors free at once, would wait for ever.
TEST(PlacementTest, SingleNodeStudiesCannotStarveAMultiNodeOne) {
  // Executor 1 is busy; executor 0 has a free slot. The multi-node study's turn has come (it
  // has no more trials leased than the single-node one): both executors are kept for it.
  PlacementInput input{.executors = {executor(1, 1), executor(1, 1, /*held=*/1)},
                       .studies = {study(0, 0, 2), study(0)}};
  EXPECT_FALSE(next_group(input));
  EXPECT_EQ(reserve_for_groups(input), (std::vector<bool>{true, true}));
  EXPECT_TRUE(plan(input, {1, 5}).empty());

  // With more trials leased than the single-node study, its turn has not come: nothing is kept,
  // and the single-node study takes executor 0's slot and one ahead on executor 1.
  input.studies[0].leased = 1;
  EXPECT_EQ(reserve_for_groups(input), (std::vector<bool>{false, false}));
  EXPECT_EQ(studies_of(plan(input, {1, 5})), (std::vector<size_t>{1, 1}));

  // The executors it keeps are those with enough GPUs that hold the fewest leases.
  input = PlacementInput{.executors = {executor(0, 2, 2, {0}), executor(0, 2, 1, {0}),
                                       executor(0, 2, 0), executor(0, 2, 0, {0})},
                         .studies = {study(0, 1, 2), study(0)}};
  EXPECT_EQ(reserve_for_groups(input), (std::vector<bool>{false, true, false, true}));
  // Too few executors with GPUs: none kept.
  input.studies[0].nodes_per_trial = 4;
  EXPECT_EQ(reserve_for_groups(input), (std::vector<bool>(4, false)));
}

TEST(PlacementTest, ARoundLeasesMultiNodeTrialsFirst) {
  PlacementInput input{.executors = {executor(2, 1), executor(2, 1)},
                       .studies = {study(5), study(0, 0, 2)}};
  const std::vector<Assignment> round = plan(input, {10, 1});
  // The group takes one slot of each executor; then study 0 fills what is left ahead.
  ASSERT_EQ(round.size(), 3u);
  EXPECT_EQ(round[0].study, 1u);
  EXPECT_EQ(round[0].executors, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(round[1].executors, std::vector<size_t>{0});
  EXPECT_EQ(round[2].executors, std::vector<size_t>{1});
}

TEST(PlacementTest, AnExecutorThatIsGoneGetsNoMoreAndTheTrialGoesToAnother) {
  PlacementInput input{.executors = {executor(2, 2), executor(2, 2)}, .studies = {study()}};
  std::optional<Assignment> first = next_single(input, {false, false});
  ASSERT_TRUE(first);
  EXPECT_EQ(first->executors, std::vector<size_t>{0});
  // Its TRIAL could not be sent: dispatch takes the executor's credit (and the lease) back.
  input.executors[0].credit = 0;
  std::optional<Assignment> next = next_single(input, {false, false});
  ASSERT_TRUE(next);
  EXPECT_EQ(next->executors, std::vector<size_t>{1});
  // Forgotten (not in the snapshot at all), the other takes everything.
  input.executors.erase(input.executors.begin());
  EXPECT_EQ(plan(input, {10}).size(), 2u);
}

}  // namespace
}  // namespace tuner
