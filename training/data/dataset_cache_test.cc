// Dataset files (dataset_file.h) and the cache folder of them (dataset_cache.h): values read
// through the mapping are the written ones; a truncated, damaged or other key's file is never
// mapped; processes asking at once build once; a builder that dies blocks no one, one that hangs
// blocks no one for longer than the cache's max_wait; the builder maps what it wrote.
#include "training/data/dataset_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "training/data/dataset_file.h"
#include "training/rng.h"

namespace tuner::training {
namespace {

namespace fs = std::filesystem;

class DatasetCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dataset_cache_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `n` samples [3, 4, 4] of seeded values, labels in [0, 5).
  static Dataset images(int64_t n, uint64_t seed) {
    Rng rng(seed);
    std::vector<float> x(static_cast<size_t>(n * 48));
    for (float& v : x) v = static_cast<float>(rng.normal());
    std::vector<int32_t> y(static_cast<size_t>(n));
    for (int32_t& v : y) v = static_cast<int32_t>(rng.next_u64() % 5);
    return Dataset(Shape{3, 4, 4}, std::move(x), std::move(y), 5);
  }
  static Dataset table(int64_t n, uint64_t seed) {  // regression: [7] features, 2 targets
    Rng rng(seed);
    std::vector<float> x(static_cast<size_t>(n * 7)), t(static_cast<size_t>(n * 2));
    for (float& v : x) v = static_cast<float>(rng.normal());
    for (float& v : t) v = static_cast<float>(rng.normal());
    return Dataset::regression(Shape{7}, std::move(x), std::move(t), 2);
  }
  static bool same(const Dataset& a, const Dataset& b) {
    return a.size() == b.size() && a.sample_shape() == b.sample_shape() &&
           a.num_classes() == b.num_classes() && a.num_targets() == b.num_targets() &&
           std::ranges::equal(a.features(), b.features()) &&
           std::ranges::equal(a.labels(), b.labels()) &&
           std::ranges::equal(a.targets(), b.targets());
  }
  std::string write(const std::string& name, const std::string& key) {
    const Dataset a = images(37, 1), b, c = table(11, 2);
    const Dataset* parts[] = {&a, &b, &c};
    const std::string file = (dir_ / name).string();
    write_dataset_file(file, key, "{\"name\": \"m\"}", parts);
    return file;
  }
  static void damage(const std::string& file, int64_t at) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(at);
    char c = 0;
    f.get(c);
    f.seekp(at);
    f.put(static_cast<char>(c ^ 0x10));
  }
  // A build of two splits that counts its calls in the file `counter` (one byte a call), so that
  // builds of other processes count too.
  BuiltDatasets counted_build(const fs::path& counter) const {
    const int fd = ::open(counter.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    EXPECT_EQ(::write(fd, "b", 1), 1);
    ::close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // long enough to overlap
    BuiltDatasets b;
    b.datasets.push_back(images(20, 3));
    b.datasets.push_back(images(6, 4));
    b.metadata = "meta";
    return b;
  }
  static int64_t builds(const fs::path& counter) {
    std::error_code ec;
    const auto n = fs::file_size(counter, ec);
    return ec ? 0 : static_cast<int64_t>(n);
  }

  fs::path dir_;
};

TEST_F(DatasetCacheTest, ValuesReadThroughTheMappingAreTheWrittenOnes) {
  const std::string file = write("a.data", "key one");
  std::string why;
  const std::optional<MappedDatasetFile> m = map_dataset_file(file, "key one", &why);
  ASSERT_TRUE(m) << why;
  EXPECT_EQ(m->metadata, "{\"name\": \"m\"}");
  EXPECT_EQ(m->file_bytes, static_cast<int64_t>(fs::file_size(file)));
  ASSERT_EQ(m->datasets.size(), 3u);
  EXPECT_TRUE(same(m->datasets[0], images(37, 1)));
  EXPECT_TRUE(m->datasets[0].is_view());
  EXPECT_TRUE(m->datasets[1].empty());
  EXPECT_TRUE(same(m->datasets[2], table(11, 2)));
  EXPECT_TRUE(m->datasets[2].is_regression());
  // Arrays are aligned for direct use.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m->datasets[0].features().data()) % 64, 0u);
  // Another key's file is not taken.
  EXPECT_FALSE(map_dataset_file(file, "key two", &why));
  EXPECT_EQ(why, "another key");
  EXPECT_FALSE(map_dataset_file((dir_ / "none.data").string(), "key one", &why));
  EXPECT_EQ(why, "missing");
}

TEST_F(DatasetCacheTest, AViewCopiesItsValuesBeforeTheyAreWritten) {
  const std::string file = write("a.data", "k");
  std::optional<MappedDatasetFile> m = map_dataset_file(file, "k");
  ASSERT_TRUE(m);
  Dataset copy = m->datasets[0];  // shares the mapping
  EXPECT_TRUE(copy.is_view());
  copy.features()[0] += 1.0f;  // the mutable access: its own values from now on
  EXPECT_FALSE(copy.is_view());
  EXPECT_NE(copy.features()[0], m->datasets[0].features()[0]);
  EXPECT_TRUE(std::ranges::equal(copy.labels(), m->datasets[0].labels()));
  EXPECT_TRUE(same(m->datasets[0], images(37, 1)));  // the file's values unchanged
  m.reset();                                         // the mapping goes with the last view
  EXPECT_EQ(copy.size(), 37);
  // select() of a view: owned copies.
  const std::optional<MappedDatasetFile> again = map_dataset_file(file, "k");
  const int64_t picks[] = {3, 0};
  const Dataset picked = again->datasets[0].select(picks);
  EXPECT_FALSE(picked.is_view());
  EXPECT_TRUE(std::ranges::equal(picked.sample(1), images(37, 1).sample(0)));
}

TEST_F(DatasetCacheTest, ATruncatedFileIsNotMapped) {
  const std::string file = write("a.data", "k");
  const auto full = static_cast<int64_t>(fs::file_size(file));
  for (const int64_t keep : {full - 1, full / 2, int64_t{70}, int64_t{10}, int64_t{0}}) {
    const std::string cut = (dir_ / ("cut" + std::to_string(keep))).string();
    fs::copy_file(file, cut);
    fs::resize_file(cut, static_cast<uintmax_t>(keep));
    std::string why;
    EXPECT_FALSE(map_dataset_file(cut, "k", &why)) << keep;
    EXPECT_TRUE(why.starts_with("truncated")) << keep << ": " << why;
  }
}

TEST_F(DatasetCacheTest, ADamagedFileIsNotMapped) {
  const std::string file = write("a.data", "k");
  const auto full = static_cast<int64_t>(fs::file_size(file));
  // A flipped bit in the header, the key, the table and the last array.
  for (const int64_t at : {int64_t{20}, int64_t{64}, int64_t{130}, full - 3}) {
    const std::string bad = (dir_ / ("bad" + std::to_string(at))).string();
    fs::copy_file(file, bad);
    damage(bad, at);
    std::string why;
    EXPECT_FALSE(map_dataset_file(bad, "k", &why)) << at;
    EXPECT_TRUE(why.starts_with("damaged") || why == "another key") << at << ": " << why;
  }
}

TEST_F(DatasetCacheTest, TwoProcessesAskingAtOnceBuildOnce) {
  const DatasetCache cache(dir_.string() + "/cache", int64_t{1} << 30);
  const fs::path counter = dir_ / "builds";
  std::vector<pid_t> children;
  for (int k = 0; k < 2; ++k) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const CachedDatasets c = cache.get("same key", [&] { return counted_build(counter); });
      const bool ok = c.datasets.size() == 2 && same(c.datasets[0], images(20, 3)) &&
                      c.metadata == "meta" && !c.file.empty();
      ::_exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(builds(counter), 1);
  // A later asker maps the file.
  const CachedDatasets later = cache.get("same key", [&] { return counted_build(counter); });
  EXPECT_FALSE(later.built);
  EXPECT_EQ(builds(counter), 1);
  EXPECT_EQ(later.file, cache.file_of("same key"));
  EXPECT_TRUE(later.datasets[1].is_view());
  EXPECT_TRUE(same(later.datasets[1], images(6, 4)));
}

TEST_F(DatasetCacheTest, ADamagedOrTruncatedCacheFileIsBuiltAgainNotRead) {
  const DatasetCache cache(dir_.string(), int64_t{1} << 30);
  const fs::path counter = dir_ / "builds";
  const auto get = [&] { return cache.get("k", [&] { return counted_build(counter); }); };
  const CachedDatasets first = get();
  ASSERT_TRUE(first.built);
  const std::string file = first.file;
  ASSERT_FALSE(file.empty());
  damage(file, static_cast<int64_t>(fs::file_size(file)) - 100);
  const CachedDatasets second = get();
  EXPECT_TRUE(second.built);
  EXPECT_EQ(builds(counter), 2);
  EXPECT_TRUE(second.rebuilt_because.starts_with("damaged")) << second.rebuilt_because;
  EXPECT_TRUE(same(second.datasets[0], images(20, 3)));
  fs::resize_file(file, fs::file_size(file) - 1);
  const CachedDatasets third = get();
  EXPECT_EQ(builds(counter), 3);
  EXPECT_TRUE(third.rebuilt_because.starts_with("truncated")) << third.rebuilt_because;
  EXPECT_FALSE(get().built);  // the rebuilt file is used
  EXPECT_EQ(builds(counter), 3);
}

// The lock is the kernel's (flock): it goes with the process that held it.
TEST_F(DatasetCacheTest, ABuilderThatDiesWhileBuildingBlocksNoOne) {
  const DatasetCache cache(dir_.string(), int64_t{1} << 30);
  const fs::path counter = dir_ / "builds";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    cache.get("k", [&]() -> BuiltDatasets {
      // Holding the lock, with a half-written file beside the cache file.
      std::ofstream(cache.file_of("k") + ".tmp" + std::to_string(::getpid()) + ".0") << "half";
      EXPECT_EQ(::write(ready[1], "x", 1), 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      ::_exit(9);  // dies mid-build
    });
    ::_exit(0);
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);  // the child holds the lock now
  ::close(ready[0]);
  std::string waited_for;  // the waiter is told before it waits
  const DatasetCache waiter(dir_.string(), int64_t{1} << 30,
                            [&](const std::string& file) { waited_for = file; });
  const CachedDatasets got = waiter.get("k", [&] { return counted_build(counter); });
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(WEXITSTATUS(status), 9);
  EXPECT_EQ(waited_for, cache.file_of("k"));
  EXPECT_TRUE(got.built);  // it waited for the dead builder's lock, then built
  EXPECT_EQ(builds(counter), 1);
  EXPECT_TRUE(same(got.datasets[0], images(20, 3)));
}

// A builder that is alive but makes no progress keeps its lock: a waiter stops waiting after
// max_wait and builds its own copy, in memory, without writing the file.
TEST_F(DatasetCacheTest, AWaiterOnAHungBuilderBuildsItsOwnCopyAfterMaxWait) {
  const DatasetCache cache(dir_.string(), int64_t{1} << 30);
  const fs::path counter = dir_ / "builds";
  std::promise<void> building, release;
  std::future<void> released = release.get_future();
  CachedDatasets hung_result;
  std::thread hung([&] {
    hung_result = cache.get("k", [&] {
      building.set_value();
      // Hangs until the waiter is done; bounded, so that a waiter that never returns fails the
      // test below (it would map this build's file) instead of hanging it.
      released.wait_for(std::chrono::seconds(30));
      return counted_build(counter);
    });
  });
  building.get_future().wait();  // the hung builder holds the lock now
  std::string waited_for;
  const DatasetCache waiter(
      dir_.string(), int64_t{1} << 30, [&](const std::string& file) { waited_for = file; },
      std::chrono::milliseconds(50));
  const CachedDatasets got = waiter.get("k", [&] { return counted_build(counter); });
  release.set_value();
  hung.join();
  EXPECT_EQ(waited_for, cache.file_of("k"));
  EXPECT_TRUE(got.waited_out);
  EXPECT_TRUE(got.built);
  EXPECT_TRUE(got.file.empty());  // not cached: the builder still held the lock
  ASSERT_EQ(got.datasets.size(), 2u);
  EXPECT_FALSE(got.datasets[0].is_view());
  EXPECT_TRUE(same(got.datasets[0], images(20, 3)));
  EXPECT_EQ(builds(counter), 2);
  // The hung builder, once it went on, wrote the file; later askers map it.
  EXPECT_FALSE(hung_result.waited_out);
  EXPECT_EQ(hung_result.file, cache.file_of("k"));
  const CachedDatasets later = waiter.get("k", [&] { return counted_build(counter); });
  EXPECT_FALSE(later.built);
  EXPECT_FALSE(later.waited_out);
  EXPECT_EQ(builds(counter), 2);
}

// The builder's datasets are views of the file it wrote, through its own descriptor: not of
// whatever the path holds by the time it maps (another process may have replaced or removed it).
TEST_F(DatasetCacheTest, TheBuilderMapsTheFileItWroteNotWhatThePathHoldsLater) {
  const Dataset a = images(37, 1), b, c = table(11, 2);
  const Dataset* parts[] = {&a, &b, &c};
  const std::string file = (dir_ / "a.data").string();
  const MappedDatasetFile mine = write_and_map_dataset_file(file, "k", "meta", parts);
  EXPECT_EQ(mine.metadata, "meta");
  EXPECT_EQ(mine.file_bytes, static_cast<int64_t>(fs::file_size(file)));
  ASSERT_EQ(mine.datasets.size(), 3u);
  EXPECT_TRUE(mine.datasets[0].is_view());
  // What it wrote is a complete file for every other reader, which checks it.
  std::string why;
  const std::optional<MappedDatasetFile> theirs = map_dataset_file(file, "k", &why);
  ASSERT_TRUE(theirs) << why;
  EXPECT_TRUE(same(theirs->datasets[0], a));
  // The path replaced by another file (an eviction and another build): the builder's views keep
  // the values it wrote.
  const Dataset other = images(37, 9);
  const Dataset* others[] = {&other, &b, &c};
  write_dataset_file((dir_ / "other.data").string(), "k", "meta", others);
  fs::rename(dir_ / "other.data", file);
  ASSERT_TRUE(map_dataset_file(file, "k"));
  EXPECT_FALSE(same(map_dataset_file(file, "k")->datasets[0], a));
  EXPECT_TRUE(same(mine.datasets[0], a));
  EXPECT_TRUE(mine.datasets[1].empty());
  EXPECT_TRUE(same(mine.datasets[2], c));
  // A damaged file at the path is still refused to readers.
  damage(file, static_cast<int64_t>(fs::file_size(file)) - 3);
  EXPECT_FALSE(map_dataset_file(file, "k", &why));
  EXPECT_TRUE(why.starts_with("damaged")) << why;
}

TEST_F(DatasetCacheTest, ABuildErrorReleasesTheLockAndIsTheCallersError) {
  const DatasetCache cache(dir_.string(), int64_t{1} << 30);
  const fs::path counter = dir_ / "builds";
  EXPECT_THROW(cache.get("k", []() -> BuiltDatasets { throw std::runtime_error("no file"); }),
               std::runtime_error);
  const CachedDatasets got = cache.get("k", [&] { return counted_build(counter); });
  EXPECT_TRUE(got.built);
  EXPECT_FALSE(got.file.empty());
}

TEST_F(DatasetCacheTest, ABuildLargerThanTheBudgetIsNotWritten) {
  const DatasetCache small(dir_.string(), 1000);
  const fs::path counter = dir_ / "builds";
  const CachedDatasets got = small.get("k", [&] { return counted_build(counter); });
  EXPECT_TRUE(got.file.empty());
  EXPECT_FALSE(got.datasets[0].is_view());
  EXPECT_TRUE(same(got.datasets[0], images(20, 3)));
  EXPECT_FALSE(fs::exists(small.file_of("k")));
  const DatasetCache off(dir_.string(), 0);  // a budget of 0: no cache
  EXPECT_TRUE(off.get("k", [&] { return counted_build(counter); }).file.empty());
  EXPECT_EQ(builds(counter), 2);
}

}  // namespace
}  // namespace tuner::training
