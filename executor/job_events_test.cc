#include "executor/job_events.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <thread>

namespace tuner {
namespace {

bool readable(int fd) {
  pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
  return ::poll(&p, 1, 0) == 1;
}

TEST(JobEventsTest, EventsPostedFromAnotherThreadAreTakenInOrderAndWakeTheLoop) {
  JobEvents events;
  EXPECT_FALSE(readable(events.fd()));
  std::thread([&] {
    events.post(JobEvent{.lease_id = 1, .note = "first"});
    events.post(JobEvent{.lease_id = 2, .outcome = Message(ResultMessage{.lease_id = 2})});
  }).join();
  EXPECT_TRUE(readable(events.fd()));
  events.drain();
  EXPECT_FALSE(readable(events.fd()));
  std::deque<JobEvent> batch = events.take();
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0].note, "first");
  EXPECT_EQ(batch[1].lease_id, 2u);
  EXPECT_TRUE(events.take().empty());
}

TEST(JobEventsTest, ClearDropsWhatWasNotTaken) {
  JobEvents events;
  events.post(JobEvent{.note = "dropped"});
  events.clear();
  EXPECT_TRUE(events.take().empty());
  events.wake();
  EXPECT_TRUE(readable(events.fd()));
}

}  // namespace
}  // namespace tuner
