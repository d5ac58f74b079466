// data.augment, data.normalize and data.prefetch of engine jobs: validated at parse naming the
// member, placeholders resolved per trial, trials deterministic for a seed and the same with the
// background batch thread on or off; and the decoded-image cache (data_cache.h): a second load of
// the same folder decodes nothing, a changed file decodes again, the byte budget is kept.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "executor/engine/data_cache.h"
#include "executor/engine/datasets.h"
#include "executor/engine/engine_data_test_fixture.h"
#include "executor/engine_job.h"
#include "training/checkpoint.h"
#include "training/data/image_test_files.h"
#include "training/rng.h"
#include "trials/error.h"

namespace tuner::engine {
namespace {

namespace fs = std::filesystem;
using training::testing::encode_png;
using training::testing::TestPixels;
using training::testing::write_bytes;

class AugmentJobTest : public testing::EngineDataTest {
 protected:
  // Three classes told apart by their dominant color, `per_class` noisy 8x8 PNGs each, under
  // dir_/`name`.
  void draw(const std::string& name, int per_class) {
    training::Rng rng(3);
    const char* classes[] = {"blue", "green", "red"};
    for (int k = 0; k < 3; ++k) {
      fs::create_directories(dir_ / name / classes[k]);
      for (int i = 0; i < per_class; ++i) {
        TestPixels p = TestPixels::solid(8, 8, 3, 0, 0, 0);
        for (int y = 0; y < 8; ++y) {
          for (int x = 0; x < 8; ++x) {
            for (int c = 0; c < 3; ++c) {
              const double v = (c == 2 - k ? 160 : 60) + 30 * rng.normal();
              p.at(y, x)[c] = static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
            }
          }
        }
        write_bytes((dir_ / name / classes[k] / (std::to_string(i) + ".png")).string(),
                    encode_png(p));
      }
    }
  }

  nlohmann::json job(nlohmann::json data) {
    data["dir"] = dir_.string();
    return {{"kind", "engine"},
            {"model", nlohmann::json::parse(R"({"layers": [
                {"type": "conv2d", "out": 4, "kernel": 3, "padding": 1}, {"type": "relu"},
                {"type": "flatten"}, {"type": "linear", "out": "classes"}]})")},
            {"data", data},
            {"training", {{"epochs", 2}, {"batch_size", 6}, {"lr", 0.01}, {"seed", 4}}},
            {"objective_metric", "val_accuracy"}};
  }
  nlohmann::json folder_job(const nlohmann::json& extra = nlohmann::json::object()) {
    nlohmann::json data = {{"format", "image_folder"},
                           {"path", "colors"},
                           {"size", {8, 8}},
                           {"validation_fraction", 0.25}};
    if (!extra.is_null()) data.update(extra);
    return job(data);
  }

  std::string parse_error(const nlohmann::json& j) {
    try {
      parse_engine_job(j.dump());
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }

  Splits load(const nlohmann::json& j) {
    const EngineJobSpec spec = parse_engine_job(j.dump());
    return load_raw_data(spec, resolve_engine_job(spec, {}), "job");
  }
};

TEST_F(AugmentJobTest, RefusesBadAugmentationNamingTheMember) {
  EXPECT_EQ(parse_error(folder_job({{"augment", {{"random_crop", {{"padding", -1}}}}}})),
            "job.data.augment.random_crop.padding: expected an integer >= 0, got -1");
  EXPECT_EQ(parse_error(folder_job({{"augment", {{"flip", 1.5}}}})),
            "job.data.augment.flip: expected a number in [0, 1], got 1.5");
  EXPECT_EQ(parse_error(folder_job({{"augment", {{"rotate", 10}}}})),
            "job.data.augment.rotate: unknown member (data.augment has random_crop, flip)");
  EXPECT_EQ(parse_error(folder_job({{"augment", {{"random_crop", nlohmann::json::object()}}}})),
            "job.data.augment.random_crop.padding: missing (pixels, >= 0)");
  EXPECT_EQ(parse_error(folder_job({{"prefetch", 17}})),
            "job.data.prefetch: expected an integer in [0, 16], got 17");
  EXPECT_EQ(parse_error(folder_job({{"normalize", "pixel"}})),
            "job.data.normalize: expected \"all\" or \"channel\", got \"pixel\"");
  nlohmann::json csv =
      job({{"format", "csv"}, {"path", "t.csv"}, {"label", "y"}, {"augment", {{"flip", 0.5}}}});
  EXPECT_EQ(parse_error(csv),
            "job.data.augment: not for data of format csv: augmentation transforms images "
            "[C, H, W]");
}

TEST_F(AugmentJobTest, PlaceholdersAreTheTrialsValues) {
  const EngineJobSpec spec = parse_engine_job(
      folder_job({{"augment", {{"random_crop", {{"padding", "{pad}"}}}, {"flip", "{flip}"}}}})
          .dump());
  const EngineTrialConfig c =
      resolve_engine_job(spec, {{"pad", int64_t{2}}, {"flip", 0.25}}, "trial 1: job");
  EXPECT_EQ(c.crop_padding, 2);
  EXPECT_EQ(c.flip, 0.25);
  try {
    resolve_engine_job(spec, {{"pad", int64_t{-3}}, {"flip", 0.25}}, "trial 1: job");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "trial 1: job.data.augment.random_crop.padding: expected an integer >= 0, got -3");
  }
}

TEST_F(AugmentJobTest, RefusesAugmentingSamplesThatAreNotImages) {
  // x.npy: 8 samples of 4 features.
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (8, 4), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string x("\x93NUMPY\x01\x00", 8);
  x += static_cast<char>(header.size());
  x += '\0';
  x += header + std::string(8 * 4 * 4, '\0');
  std::string yh = "{'descr': '<i8', 'fortran_order': False, 'shape': (8,), }";
  while ((10 + yh.size() + 1) % 64 != 0) yh += ' ';
  yh += '\n';
  std::string y("\x93NUMPY\x01\x00", 8);
  y += static_cast<char>(yh.size());
  y += '\0';
  y += yh + std::string(8 * 8, '\0');
  std::ofstream(dir_ / "x.npy", std::ios::binary) << x;
  std::ofstream(dir_ / "y.npy", std::ios::binary) << y;
  nlohmann::json j =
      job({{"format", "npy"}, {"x", "x.npy"}, {"y", "y.npy"}, {"augment", {{"flip", 0.5}}}});
  j["model"] = nlohmann::json::parse(R"({"layers": [{"type": "linear", "out": "classes"}]})");
  const EngineJobSpec spec = parse_engine_job(j.dump());
  EngineTrialConfig c = resolve_engine_job(spec, {});
  try {
    load_data(spec, c, "trial 2: job");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "trial 2: job.data.augment: needs image samples [C, H, W], but x.npy's are [4]");
  }
}

TEST_F(AugmentJobTest, TrialsAreDeterministicAndTheSameWithOrWithoutPrefetch) {
  draw("colors", 8);
  const nlohmann::json augment = {{"random_crop", {{"padding", 2}}}, {"flip", 0.5}};
  // The metrics that training gives (not the measured latencies).
  const auto run = [&](nlohmann::json extra) {
    const EngineJobSpec spec = parse_engine_job(folder_job(std::move(extra)).dump());
    const Metrics m = run_engine_trial(spec, {.number = 0}).final_metrics;
    return std::vector<double>{m.at("train_loss"), m.at("val_loss"), m.at("val_accuracy")};
  };
  const std::vector<double> a = run({{"augment", augment}});
  EXPECT_EQ(a, run({{"augment", augment}}));
  EXPECT_EQ(a, run({{"augment", augment}, {"prefetch", 0}}));
  EXPECT_EQ(a, run({{"augment", augment}, {"prefetch", 5}}));
  EXPECT_NE(a[0], run({})[0]);
}

TEST_F(AugmentJobTest, AResumedTrialAugmentsAsAnUninterruptedOne) {
  draw("colors", 8);
  nlohmann::json j = folder_job({{"augment", {{"random_crop", {{"padding", 2}}}, {"flip", 0.5}}}});
  j["training"]["epochs"] = 3;
  const EngineJobSpec spec = parse_engine_job(j.dump());
  const std::string whole = (dir_ / "whole.ckpt").string();
  const std::string resumed = (dir_ / "resumed.ckpt").string();
  run_engine_trial(spec, {.number = 0, .checkpoint_path = whole});
  const EngineOutcome first =
      run_engine_trial(spec, {.number = 0, .checkpoint_path = resumed},
                       [](const EngineReport&) { return JobDecision::kPause; });
  ASSERT_EQ(first.epochs_completed, 1);
  const EngineOutcome second = run_engine_trial(spec, {.number = 0, .checkpoint_path = resumed});
  EXPECT_EQ(second.resumed_from, 1);
  EXPECT_EQ(training::load_checkpoint(resumed).parameters,
            training::load_checkpoint(whole).parameters);
}

TEST_F(AugmentJobTest, NormalizeChannelGivesEachChannelItsStatistics) {
  draw("colors", 4);
  const auto stats = [&](const char* by) {
    const EngineJobSpec spec = parse_engine_job(folder_job({{"normalize", by}}).dump());
    const Splits s = load_raw_data(spec, resolve_engine_job(spec, {}), "job");
    return fit_normalizer(spec, s.train).mean().size();
  };
  EXPECT_EQ(stats("channel"), 3u);
  EXPECT_EQ(stats("all"), 1u);
}

// Overwrites every image of `folder` with bytes that are no image, keeping sizes and mtimes.
void spoil(const fs::path& folder) {
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(folder)) {
    if (!e.is_regular_file() || e.path().extension() != ".png") continue;
    const auto size = fs::file_size(e.path());
    const auto mtime = fs::last_write_time(e.path());
    std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << std::string(size, 'x');
    fs::last_write_time(e.path(), mtime);
  }
}

TEST_F(AugmentJobTest, ASecondTrialReadsTheDecodedImagesFromTheCache) {
  draw("colors", 4);
  const nlohmann::json j = folder_job();
  const Splits first = load(j);
  spoil(dir_ / "colors");  // decoding again would fail
  const Splits second = load(j);
  EXPECT_EQ(second.class_names, first.class_names);
  EXPECT_EQ(second.name, first.name);
  ASSERT_EQ(second.train.size(), first.train.size());
  EXPECT_TRUE(std::ranges::equal(second.train.features(), first.train.features()));
  EXPECT_TRUE(std::ranges::equal(second.train.labels(), first.train.labels()));
  EXPECT_TRUE(std::ranges::equal(second.validation.features(), first.validation.features()));
  EXPECT_TRUE(second.test.empty());
  // Another split of the same files is another key: decoded (and refused, the files spoiled).
  nlohmann::json other = folder_job({{"split_seed", 1}});
  EXPECT_THROW(load(other), Error);
  // A file changed since (its mtime) is decoded again.
  const fs::path one = dir_ / "colors" / "red" / "0.png";
  fs::last_write_time(one, fs::last_write_time(one) + std::chrono::seconds(5));
  try {
    load(j);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
  }
}

// The cache was a hidden folder inside the training folder, which torchvision's ImageFolder (and
// other tools reading the same data) took for a class.
TEST_F(AugmentJobTest, TheCacheWritesNothingIntoTheDataFolder) {
  draw("colors", 4);
  load(folder_job());
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(dir_ / "colors")) {
    entries.push_back(e.path().filename().string());
  }
  std::ranges::sort(entries);
  EXPECT_EQ(entries, (std::vector<std::string>{"blue", "green", "red"}));
  EXPECT_FALSE(fs::is_empty(dir_ / "cache"));
  // Where the cache goes when TUNER_DATA_CACHE_DIR is not set.
  ::unsetenv("TUNER_DATA_CACHE_DIR");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const std::string kept_xdg = xdg ? xdg : "";
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(data_cache_dir(), "/xdg/tuner/data");
  ::unsetenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') {
    EXPECT_EQ(data_cache_dir(), (fs::path(home) / ".cache" / "tuner" / "data").string());
  }
  if (!kept_xdg.empty()) ::setenv("XDG_CACHE_HOME", kept_xdg.c_str(), 1);
}

TEST_F(AugmentJobTest, TwoTrialsAskingAtOnceDecodeOnce) {
  draw("colors", 6);
  const nlohmann::json j = folder_job();
  ::testing::internal::CaptureStderr();
  std::vector<Splits> got(2);
  {
    std::jthread a([&] { got[0] = load(j); });
    std::jthread b([&] { got[1] = load(j); });
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  size_t reads = 0;
  for (size_t at = log.find("decoded images read from"); at != std::string::npos;
       at = log.find("decoded images read from", at + 1)) {
    ++reads;
  }
  EXPECT_EQ(reads, 1u) << log;  // one decoded and wrote, the other waited and read
  EXPECT_TRUE(std::ranges::equal(got[0].train.features(), got[1].train.features()));
}

TEST_F(AugmentJobTest, TheCacheKeepsItsBudgetAndCanBeTurnedOff) {
  draw("colors", 4);
  const fs::path cache = dir_ / "cache";
  const auto entries = [&] {
    int n = 0;
    for (const auto& e : fs::directory_iterator(cache)) n += e.path().extension() == ".data";
    return n;
  };
  // 12 images of [3, 8, 8]: 9 KiB a key; room for one.
  ::setenv("TUNER_DATA_CACHE_BYTES", "12000", 1);
  load(folder_job());
  EXPECT_EQ(entries(), 1);
  load(folder_job({{"split_seed", 1}}));
  EXPECT_EQ(entries(), 1);  // the older one removed, with its lock file
  int locks = 0;
  for (const auto& e : fs::directory_iterator(cache)) locks += e.path().extension() == ".lock";
  EXPECT_EQ(locks, 1);
  ::setenv("TUNER_DATA_CACHE_BYTES", "0", 1);
  fs::remove_all(cache);
  load(folder_job());
  EXPECT_FALSE(fs::exists(cache));
}

}  // namespace
}  // namespace tuner::engine
