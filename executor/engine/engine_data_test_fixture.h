// For tests only: the fixture of the engine's data tests. Each test gets an empty folder of its
// own, `dir_` (<temp>/<suite>_<pid>_<test>, removed after the test), and the data cache in
// `dir_`/cache: TUNER_DATA_CACHE_DIR points there, TUNER_DATA_CACHE_BYTES and
// TUNER_DATA_CACHE_WAIT_SECONDS are unset (their defaults). Every variable of the cache's
// (XDG_CACHE_HOME included) is put back after the test as it was before it, whatever the test set.
//
// Thread safety: as the environment's: a test changes it only while none of its threads load data.
#ifndef TUNER_EXECUTOR_ENGINE_ENGINE_DATA_TEST_FIXTURE_H_
#define TUNER_EXECUTOR_ENGINE_ENGINE_DATA_TEST_FIXTURE_H_

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace tuner::engine::testing {

class EngineDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (size_t k = 0; k < kVariables.size(); ++k) {
      const char* v = std::getenv(kVariables[k]);
      saved_[k] = v != nullptr ? std::optional<std::string>(v) : std::nullopt;
    }
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ =
        std::filesystem::temp_directory_path() / (std::string(test->test_suite_name()) + "_" +
                                                  std::to_string(::getpid()) + "_" + test->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ::unsetenv("TUNER_DATA_CACHE_BYTES");
    ::unsetenv("TUNER_DATA_CACHE_WAIT_SECONDS");
    ::setenv("TUNER_DATA_CACHE_DIR", (dir_ / "cache").c_str(), 1);
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    for (size_t k = 0; k < kVariables.size(); ++k) {
      if (saved_[k]) {
        ::setenv(kVariables[k], saved_[k]->c_str(), 1);
      } else {
        ::unsetenv(kVariables[k]);
      }
    }
  }

  std::filesystem::path dir_;

 private:
  static constexpr std::array<const char*, 4> kVariables = {
      "TUNER_DATA_CACHE_DIR", "TUNER_DATA_CACHE_BYTES", "TUNER_DATA_CACHE_WAIT_SECONDS",
      "XDG_CACHE_HOME"};
  std::array<std::optional<std::string>, kVariables.size()> saved_;
};

}  // namespace tuner::engine::testing

#endif  // TUNER_EXECUTOR_ENGINE_ENGINE_DATA_TEST_FIXTURE_H_
