// Checkpoint files: round trip, atomic replacement, and clear refusals of damaged files.
#include "training/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace tuner::training {
namespace {

Checkpoint sample() {
  Checkpoint c;
  c.model_spec = R"({"input":[2],"layers":[{"out":2,"type":"linear"}]})";
  c.parameters = {1.0f, -2.5f, 3.25f, 0.0f};
  c.buffers = {0.5f};
  c.optimizer_state = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f};
  c.optimizer_steps = 42;
  c.lr_step = 42;
  c.data_rng = {1, 2, 3, 0xffffffffffffffffull};
  c.dropout_seeds = {11, 13};
  c.dropout_calls = {7, 9};
  c.epoch = 3;
  c.best_value = 0.125;
  c.best_epoch = 2;
  c.epochs_without_improvement = 1;
  return c;
}

class CheckpointFile : public ::testing::Test {
 protected:
  std::string path_ = "/tmp/tuner_checkpoint_test_" + std::to_string(::getpid()) + ".ckpt";
  void TearDown() override { std::remove(path_.c_str()); }

  std::string bytes() const {
    std::ifstream in(path_, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  void write(const std::string& b) const { std::ofstream(path_, std::ios::binary) << b; }
  std::string error() const {
    try {
      load_checkpoint(path_);
    } catch (const CheckpointError& e) {
      return e.what();
    }
    return "(no error)";
  }
};

TEST_F(CheckpointFile, RoundTripsEveryField) {
  save_checkpoint(path_, sample());
  const Checkpoint c = load_checkpoint(path_);
  const Checkpoint s = sample();
  EXPECT_EQ(c.model_spec, s.model_spec);
  EXPECT_EQ(c.parameters, s.parameters);
  EXPECT_EQ(c.buffers, s.buffers);
  EXPECT_EQ(c.optimizer_state, s.optimizer_state);
  EXPECT_EQ(c.optimizer_steps, 42);
  EXPECT_EQ(c.lr_step, 42);
  EXPECT_EQ(c.data_rng, s.data_rng);
  EXPECT_EQ(c.dropout_seeds, s.dropout_seeds);
  EXPECT_EQ(c.dropout_calls, s.dropout_calls);
  EXPECT_EQ(c.epoch, 3);
  EXPECT_EQ(c.best_value, 0.125);
  EXPECT_EQ(c.best_epoch, 2);
  EXPECT_EQ(c.epochs_without_improvement, 1);
  // Saving again replaces the file and leaves no temporary behind.
  Checkpoint next = s;
  next.epoch = 4;
  save_checkpoint(path_, next);
  EXPECT_EQ(load_checkpoint(path_).epoch, 4);
  for (const auto& e : std::filesystem::directory_iterator("/tmp")) {
    EXPECT_EQ(e.path().string().find(path_ + ".tmp"), std::string::npos);
  }
}

// Regression: reading an empty array (an MLP has no buffers) gave memcpy a null destination,
// undefined behaviour that UndefinedBehaviorSanitizer reported on every MLP checkpoint.
TEST_F(CheckpointFile, EmptyArraysRoundTrip) {
  Checkpoint c = sample();
  c.buffers.clear();
  c.optimizer_state.clear();
  c.dropout_seeds.clear();
  c.dropout_calls.clear();
  save_checkpoint(path_, c);
  const Checkpoint loaded = load_checkpoint(path_);
  EXPECT_TRUE(loaded.buffers.empty());
  EXPECT_TRUE(loaded.optimizer_state.empty());
  EXPECT_TRUE(loaded.dropout_seeds.empty());
  EXPECT_EQ(loaded.parameters, c.parameters);
}

TEST_F(CheckpointFile, RefusesDamagedFilesWithAClearError) {
  save_checkpoint(path_, sample());
  const std::string good = bytes();

  std::string flipped = good;
  flipped[40] ^= 0x10;
  write(flipped);
  EXPECT_EQ(error(), path_ + ": corrupt: checksum mismatch");

  write(good.substr(0, good.size() - 9));
  EXPECT_EQ(error().rfind(path_ + ": truncated or padded: the header promises a body of ", 0), 0u);

  write(good.substr(0, 10));
  EXPECT_EQ(error(), path_ + ": truncated inside the header");

  std::string other = good;
  other[8] = 2;  // format version 2
  write(other);
  EXPECT_EQ(error(), path_ + ": checkpoint format version 2, this build reads version 1");

  write("PK\x03\x04 not a checkpoint at all");
  EXPECT_EQ(error(), path_ + ": not a tuner checkpoint (bad magic)");

  std::remove(path_.c_str());
  EXPECT_EQ(error(), path_ + ": cannot open the checkpoint");
}

TEST_F(CheckpointFile, ReportsAnUnwritableDirectory) {
  EXPECT_THROW(save_checkpoint("/nonexistent-dir/x.ckpt", sample()), CheckpointError);
}

}  // namespace
}  // namespace tuner::training
