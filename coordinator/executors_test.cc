#include "coordinator/executors.h"

#include <gtest/gtest.h>

namespace tuner {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kLeaseTimeout{400};

HelloMessage hello(const std::string& id, const std::string& host = "h", int64_t pid = 1,
                   int slots = 2) {
  return HelloMessage{
      .executor_id = id, .hostname = host, .pid = pid, .resources = {.cpu_slots = slots}};
}

TEST(ExecutorRegistryTest, HelloRegistersAnExecutorAndRenewsItsEntry) {
  ExecutorRegistry registry(kLeaseTimeout);
  const Clock::SteadyTime now{};
  ExecutorRegistry::Admission a = registry.admit("a#1", hello("a"), now);
  ASSERT_NE(a.entry, nullptr);
  EXPECT_TRUE(a.joined);
  EXPECT_EQ(a.entry->resources.cpu_slots, 2);
  a.entry->credit = 2;
  // The same connection says HELLO again: renewed, not joined, its credit reset.
  ExecutorRegistry::Admission again = registry.admit("a#1", hello("a", "h", 1, 4), now);
  EXPECT_FALSE(again.joined);
  EXPECT_EQ(again.entry->credit, 0);
  EXPECT_EQ(again.entry->resources.cpu_slots, 4);
  // The same process on a new connection replaces the old one.
  ExecutorRegistry::Admission moved = registry.admit("a#2", hello("a"), now);
  EXPECT_TRUE(moved.joined);
  EXPECT_FALSE(registry.contains("a#1"));
  EXPECT_EQ(registry.size(), 1u);
}

TEST(ExecutorRegistryTest, ACoordinatorThatDidNotRunForgetsNoExecutorForItsSilence) {
  ExecutorRegistry registry(kLeaseTimeout);
  const Clock::SteadyTime heard{};
  ASSERT_NE(registry.admit("a#1", hello("a"), heard).entry, nullptr);
  registry.postpone_silence(milliseconds(8000));
  EXPECT_TRUE(registry.forget_silent(heard + milliseconds(8000)).empty());
  EXPECT_EQ(registry.forget_silent(heard + milliseconds(8000) + kLeaseTimeout).size(), 1u);
}

TEST(ExecutorRegistryTest, AReconnectKeepsSinceWhenTheExecutorHasHeldNoLease) {
  ExecutorRegistry registry(kLeaseTimeout);
  const Clock::SteadyTime idle{milliseconds(5)};
  ExecutorRegistry::Admission first = registry.admit("a#1", hello("a"), Clock::SteadyTime{});
  ASSERT_NE(first.entry, nullptr);
  EXPECT_FALSE(first.entry->idle_since);  // the coordinator's loop notes it
  first.entry->idle_since = idle;
  ExecutorRegistry::Admission again = registry.admit("a#1", hello("a"), idle + kLeaseTimeout);
  EXPECT_EQ(again.entry->idle_since, idle);
  ExecutorRegistry::Admission moved = registry.admit("a#2", hello("a"), idle + kLeaseTimeout);
  ASSERT_NE(moved.entry, nullptr);
  EXPECT_EQ(moved.entry->idle_since, idle);
  // Another executor starts with nothing noted.
  EXPECT_FALSE(registry.admit("b#1", hello("b"), idle).entry->idle_since);
}

TEST(ExecutorRegistryTest, RefusesABadHelloAndASecondLiveExecutorWithTheSameId) {
  ExecutorRegistry registry(kLeaseTimeout);
  const Clock::SteadyTime now{};
  ExecutorRegistry::Admission bad = registry.admit("x#1", hello(""), now);
  EXPECT_EQ(bad.entry, nullptr);
  ASSERT_TRUE(bad.refusal);
  EXPECT_FALSE(bad.refusal_log);
  EXPECT_EQ(bad.refusal->message,
            "HELLO: executor_id must not be empty and cpu_slots must be >= 0");
  EXPECT_TRUE(registry.admit("y#1", hello("y", "h", 1, -1), now).refusal);

  registry.admit("a#1", hello("a", "h", 1), now);
  ExecutorRegistry::Admission twin = registry.admit("a#2", hello("a", "h", 2), now);
  EXPECT_EQ(twin.entry, nullptr);
  ASSERT_TRUE(twin.refusal);
  EXPECT_TRUE(twin.refusal->refused);
  EXPECT_EQ(twin.refusal->message,
            "executor id 'a' is in use by a live executor (h, pid 1): give each executor its "
            "own --id");
  ASSERT_TRUE(twin.refusal_log);
  EXPECT_EQ(*twin.refusal_log, "refused a second executor a (h, pid 2): that id is in use");
  // Once the first is silent past the lease timeout (dead), the newcomer takes the id.
  ExecutorRegistry::Admission later =
      registry.admit("a#2", hello("a", "h", 2), now + kLeaseTimeout);
  ASSERT_NE(later.entry, nullptr);
  EXPECT_EQ(later.entry->pid, 2);
  EXPECT_FALSE(registry.contains("a#1"));
}

TEST(ExecutorRegistryTest, ForgetsExecutorsSilentForTheLeaseTimeout) {
  ExecutorRegistry registry(kLeaseTimeout);
  const Clock::SteadyTime start{};
  registry.admit("a#1", hello("a"), start);
  registry.admit("b#1", hello("b"), start);
  registry.find("b#1")->last_heard = start + milliseconds(300);
  EXPECT_TRUE(registry.forget_silent(start + milliseconds(399)).empty());
  EXPECT_EQ(registry.forget_silent(start + kLeaseTimeout),
            std::vector<std::string>{"executor a is silent for 400 ms: forgotten"});
  EXPECT_FALSE(registry.contains("a#1"));
  EXPECT_TRUE(registry.contains("b#1"));
}

TEST(ExecutorRegistryTest, APeerWithoutHelloIsToldToSayHelloOncePerInterval) {
  ExecutorRegistry registry(kLeaseTimeout);
  const Clock::SteadyTime start{};
  const milliseconds interval{100};
  EXPECT_EQ(registry.unknown("p", start, interval), ExecutorRegistry::Unknown::kFirstTime);
  EXPECT_EQ(registry.unknown("p", start + milliseconds(50), interval),
            ExecutorRegistry::Unknown::kToldAlready);
  EXPECT_EQ(registry.unknown("p", start + interval, interval), ExecutorRegistry::Unknown::kAgain);
  // Its HELLO makes it known; after it is forgotten it is told afresh.
  registry.admit("p", hello("p"), start + interval);
  EXPECT_EQ(registry.unknown("p", start + interval, interval),
            ExecutorRegistry::Unknown::kFirstTime);
}

}  // namespace
}  // namespace tuner
