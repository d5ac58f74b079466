// The data cache of engine jobs (data_cache.h): a trial's normalized splits mapped from the cache
// are, bit for bit, the ones a load without the cache gives (image_folder, csv, npy, and
// fashion-mnist's IDX files); a changed file is read again; a trial waiting on a build that hangs
// loads its own copy once it has waited TUNER_DATA_CACHE_WAIT_SECONDS.
#include "executor/engine/data_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "executor/engine/datasets.h"
#include "executor/engine/engine_data_test_fixture.h"
#include "executor/engine_job.h"
#include "training/data/image_test_files.h"
#include "training/rng.h"

namespace tuner::engine {
namespace {

namespace fs = std::filesystem;

class DataCacheTest : public testing::EngineDataTest {
 protected:
  void write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary | std::ios::trunc) << bytes;
  }
  // A csv of `rows` rows: two numeric columns, a categorical one, 3 classes.
  std::string csv(int rows, uint64_t seed) {
    training::Rng rng(seed);
    std::string text = "a,b,color,label\n";
    const char* colors[] = {"red", "green", "blue"};
    for (int i = 0; i < rows; ++i) {
      text += std::to_string(rng.normal()) + "," + std::to_string(10 * rng.normal() + 3) + "," +
              colors[rng.next_u64() % 3] + "," + std::to_string(rng.next_u64() % 3) + "\n";
    }
    return text;
  }
  void draw_images() {
    training::Rng rng(5);
    for (const char* c : {"cat", "dog"}) {
      fs::create_directories(dir_ / "pets" / c);
      for (int i = 0; i < 5; ++i) {
        training::testing::TestPixels p = training::testing::TestPixels::solid(6, 7, 3, 0, 0, 0);
        for (int y = 0; y < 6; ++y) {
          for (int x = 0; x < 7; ++x) {
            for (int k = 0; k < 3; ++k) p.at(y, x)[k] = static_cast<uint8_t>(rng.next_u64());
          }
        }
        training::testing::write_bytes((dir_ / "pets" / c / (std::to_string(i) + ".png")).string(),
                                       training::testing::encode_png(p));
      }
    }
  }
  static std::string npy(const std::string& descr, const std::string& shape,
                         const std::string& data) {
    std::string header =
        "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string out("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    return out + header + data;
  }

  nlohmann::json job(nlohmann::json data) {
    data["dir"] = dir_.string();
    return {{"kind", "engine"},
            {"model", nlohmann::json::parse(R"({"layers": [{"type": "flatten"},
                {"type": "linear", "out": "classes"}]})")},
            {"data", data},
            {"training", {{"epochs", 1}, {"batch_size", 2}}},
            {"objective_metric", "val_accuracy"}};
  }
  // load_data of `j`; its log (standard error) in *log.
  Splits load(const nlohmann::json& j, std::string* log = nullptr) {
    const EngineJobSpec spec = parse_engine_job(j.dump());
    EngineTrialConfig config = resolve_engine_job(spec, {});
    ::testing::internal::CaptureStderr();
    Splits s = load_data(spec, config, "job");
    const std::string err = ::testing::internal::GetCapturedStderr();
    if (log) *log = err;
    return s;
  }
  // Loads `data` without the cache, then twice with it (a build, then a read, whose log says
  // `read` and the file): the three give the same splits, bit for bit.
  void expect_cached_as_uncached(const nlohmann::json& data, const std::string& read) {
    ::setenv("TUNER_DATA_CACHE_BYTES", "0", 1);
    const Splits direct = load(job(data));
    EXPECT_FALSE(direct.train.is_view());
    ::unsetenv("TUNER_DATA_CACHE_BYTES");
    std::string log;
    const Splits first = load(job(data), &log);  // builds and writes the file
    EXPECT_EQ(log.find(read), std::string::npos) << log;
    const Splits mapped = load(job(data), &log);
    EXPECT_NE(log.find(read + (dir_ / "cache").string()), std::string::npos) << log;
    EXPECT_TRUE(first.train.is_view());  // the builder maps the file it wrote
    EXPECT_TRUE(mapped.train.is_view());
    for (const Splits* s : {&first, &mapped}) {
      expect_same(s->train, direct.train);
      expect_same(s->validation, direct.validation);
      expect_same(s->test, direct.test);
      EXPECT_EQ(s->name, direct.name);
      EXPECT_EQ(s->class_names, direct.class_names);
      EXPECT_EQ(s->features, direct.features);
      ASSERT_EQ(s->columns.size(), direct.columns.size());
      for (size_t k = 0; k < s->columns.size(); ++k) {
        EXPECT_EQ(s->columns[k].name, direct.columns[k].name);
        EXPECT_EQ(s->columns[k].fill, direct.columns[k].fill);
        EXPECT_EQ(s->columns[k].categories, direct.columns[k].categories);
        EXPECT_EQ(s->columns[k].missing_slot, direct.columns[k].missing_slot);
      }
    }
  }
  // An IDX file, gzip-compressed as Fashion-MNIST's: big-endian magic and dims, then `bytes`.
  void write_idx(const std::string& name, uint32_t magic, const std::vector<uint32_t>& dims,
                 const std::vector<uint8_t>& bytes) {
    std::string raw;
    const auto u32 = [&](uint32_t v) {
      for (int shift = 24; shift >= 0; shift -= 8) raw += static_cast<char>((v >> shift) & 0xff);
    };
    u32(magic);
    for (const uint32_t d : dims) u32(d);
    raw.append(bytes.begin(), bytes.end());
    const gzFile f = gzopen((dir_ / name).c_str(), "wb");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(gzwrite(f, raw.data(), static_cast<unsigned>(raw.size())),
              static_cast<int>(raw.size()));
    EXPECT_EQ(gzclose(f), Z_OK);
  }
  // Fashion-MNIST's four files, `train` and `test` images of 28 x 28 seeded pixels.
  void write_fashion_mnist(uint32_t train, uint32_t test) {
    training::Rng rng(7);
    for (const auto& [prefix, n] :
         {std::pair<std::string, uint32_t>{"train", train}, {"t10k", test}}) {
      std::vector<uint8_t> pixels(static_cast<size_t>(n) * 28 * 28), labels(n);
      for (uint8_t& p : pixels) p = static_cast<uint8_t>(rng.next_u64());
      for (uint32_t i = 0; i < n; ++i) labels[i] = static_cast<uint8_t>(i % 10);
      write_idx(prefix + "-images-idx3-ubyte.gz", 0x803, {n, 28, 28}, pixels);
      write_idx(prefix + "-labels-idx1-ubyte.gz", 0x801, {n}, labels);
    }
  }
  static void expect_same(const training::Dataset& a, const training::Dataset& b) {
    EXPECT_EQ(a.size(), b.size());
    EXPECT_TRUE(a.sample_shape() == b.sample_shape());
    EXPECT_EQ(a.num_classes(), b.num_classes());
    EXPECT_TRUE(std::ranges::equal(a.features(), b.features()));  // bit for bit
    EXPECT_TRUE(std::ranges::equal(a.labels(), b.labels()));
    EXPECT_TRUE(std::ranges::equal(a.targets(), b.targets()));
  }
};

TEST_F(DataCacheTest, MappedSplitsAreTheValuesOfALoadWithoutTheCache) {
  write("t.csv", csv(40, 1));
  std::vector<float> x(30 * 4);
  training::Rng rng(2);
  for (float& v : x) v = static_cast<float>(rng.normal() * 3 + 1);
  std::vector<int32_t> y(30);
  for (int32_t& v : y) v = static_cast<int32_t>(rng.next_u64() % 4);
  write("x.npy", npy("<f4", "(30, 4)", std::string(reinterpret_cast<const char*>(x.data()), 480)));
  write("y.npy", npy("<i4", "(30,)", std::string(reinterpret_cast<const char*>(y.data()), 120)));
  draw_images();
  const struct {
    nlohmann::json data;
    std::string read;  // what the log says of a read
  } cases[] = {{{{"format", "csv"}, {"path", "t.csv"}, {"label", "label"}, {"test_fraction", 0.2}},
                "job.data: parsed table read from "},
               {{{"format", "npy"}, {"x", "x.npy"}, {"y", "y.npy"}}, "job.data: arrays read from "},
               {{{"format", "image_folder"}, {"path", "pets"}, {"size", {4, 4}}},
                "job.data: decoded images read from "}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.data.dump());
    expect_cached_as_uncached(c.data, c.read);
  }
  // The normalization is part of the key: "all" is another file, another result.
  nlohmann::json all = cases[0].data;
  all["normalize"] = "all";
  std::string log;
  const Splits other = load(job(all), &log);
  EXPECT_EQ(log.find("read from"), std::string::npos) << log;
  ::setenv("TUNER_DATA_CACHE_BYTES", "0", 1);
  expect_same(other.train, load(job(all)).train);
}

// Fashion-MNIST's IDX files were decompressed and normalized by every trial: now once a machine,
// the values the same as the uncached load's.
TEST_F(DataCacheTest, FashionMnistIdxSplitsMappedAreTheValuesOfALoadWithoutTheCache) {
  write_fashion_mnist(40, 12);
  expect_cached_as_uncached(
      {{"dataset", "fashion-mnist"}, {"train", 24}, {"validation", 16}, {"test", 12}},
      "job.data: decompressed images read from ");
  // Other counts are another key: built, not read.
  std::string log;
  const Splits fewer =
      load(job({{"dataset", "fashion-mnist"}, {"train", 20}, {"validation", 10}}), &log);
  EXPECT_EQ(log.find("read from"), std::string::npos) << log;
  EXPECT_EQ(fewer.train.size(), 20);
  EXPECT_TRUE(fewer.test.empty());
}

// A trial that builds the splits and hangs holds the key's lock until its timeout: the others
// waited as long. Now a waiter loads its own copy after TUNER_DATA_CACHE_WAIT_SECONDS.
TEST_F(DataCacheTest, ATrialWaitingOnAHungBuildLoadsItsOwnCopyAfterTheBound) {
  write("t.csv", csv(30, 4));
  const nlohmann::json j = job({{"format", "csv"}, {"path", "t.csv"}, {"label", "label"}});
  const Splits cached = load(j);  // makes the key's lock file
  std::vector<fs::path> locks;
  for (const auto& e : fs::directory_iterator(dir_ / "cache")) {
    if (e.path().extension() == ".data") fs::remove(e.path());
    if (e.path().extension() == ".lock") locks.push_back(e.path());
  }
  ASSERT_EQ(locks.size(), 1u);
  // The hung builder: holds the lock, never writes the file.
  const int held = ::open(locks[0].c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX | LOCK_NB), 0);
  ::setenv("TUNER_DATA_CACHE_WAIT_SECONDS", "0.05", 1);
  std::string log;
  const Splits own = load(j, &log);
  ::close(held);
  EXPECT_NE(log.find("waiting for another trial of this machine, which is building it (at most "
                     "0.05 s, TUNER_DATA_CACHE_WAIT_SECONDS)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("job.data: another trial of this machine has been building " +
                     (dir_ / "cache").string()),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("for more than 0.05 s (TUNER_DATA_CACHE_WAIT_SECONDS): loaded without the "
                     "cache"),
            std::string::npos)
      << log;
  EXPECT_FALSE(own.train.is_view());
  expect_same(own.train, cached.train);
  expect_same(own.validation, cached.validation);
  int files = 0;  // nothing written while another held the lock
  for (const auto& e : fs::directory_iterator(dir_ / "cache"))
    files += e.path().extension() == ".data";
  EXPECT_EQ(files, 0);
}

// Keyed by the contents: a file rewritten with other values of the same size, its modification
// time put back, is parsed again.
TEST_F(DataCacheTest, AChangedCsvFileIsReadAgainEvenWithItsSizeAndTimeKept) {
  std::string text = csv(30, 3);
  write("t.csv", text);
  const nlohmann::json j = job({{"format", "csv"}, {"path", "t.csv"}, {"label", "label"}});
  const Splits before = load(j);
  const fs::file_time_type mtime = fs::last_write_time(dir_ / "t.csv");
  const size_t digit = text.find_first_of("123456789", text.find('\n'));
  text[digit] = text[digit] == '9' ? '8' : static_cast<char>(text[digit] + 1);
  write("t.csv", text);
  fs::last_write_time(dir_ / "t.csv", mtime);
  std::string log;
  const Splits after = load(j, &log);
  EXPECT_EQ(log.find("read from"), std::string::npos) << log;
  EXPECT_FALSE(std::ranges::equal(after.train.features(), before.train.features()) &&
               std::ranges::equal(after.validation.features(), before.validation.features()));
  // Unchanged again: read from the cache.
  load(j, &log);
  EXPECT_NE(log.find("parsed table read from"), std::string::npos) << log;
}

}  // namespace
}  // namespace tuner::engine
