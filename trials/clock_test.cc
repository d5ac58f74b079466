#include "trials/clock.h"

#include <gtest/gtest.h>

#include <thread>

namespace tuner {
namespace {

using namespace std::chrono_literals;

TEST(FakeClock, StandsStillUntilAdvanced) {
  FakeClock clock;
  auto steady = clock.steady_now();
  auto system = clock.system_now();
  EXPECT_EQ(clock.steady_now(), steady);
  clock.advance(90s);
  EXPECT_EQ(clock.steady_now() - steady, 90s);
  EXPECT_EQ(clock.system_now() - system, 90s);
}

TEST(FakeClock, SleepersWakeWhenTheirDeadlineIsReached) {
  FakeClock clock;
  const auto deadline = clock.steady_now() + 60s;
  std::atomic<int> woke{0};
  std::jthread sleeper([&](std::stop_token stop) {
    if (clock.sleep_until(deadline, stop)) ++woke;
  });
  while (clock.sleepers() == 0) std::this_thread::yield();
  clock.advance(59s);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(woke, 0);
  clock.advance(1s);
  sleeper.join();
  EXPECT_EQ(woke, 1);
}

TEST(FakeClock, AStopRequestEndsASleep) {
  FakeClock clock;
  bool result = true;
  std::jthread sleeper(
      [&](std::stop_token stop) { result = clock.sleep_until(clock.steady_now() + 1h, stop); });
  while (clock.sleepers() == 0) std::this_thread::yield();
  sleeper.request_stop();
  sleeper.join();
  EXPECT_FALSE(result);
}

TEST(SystemClock, SleepsAndStops) {
  SystemClock clock;
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(clock.sleep_until(clock.steady_now() + 20ms, std::stop_token{}));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
  std::stop_source source;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(20ms);
    source.request_stop();
  });
  start = std::chrono::steady_clock::now();
  EXPECT_FALSE(clock.sleep_until(clock.steady_now() + 1h, source.get_token()));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

}  // namespace
}  // namespace tuner
