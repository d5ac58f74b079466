// Test helpers of registry/: a tiny model's checkpoint and a scratch directory.
#ifndef TUNER_REGISTRY_TEST_UTIL_H_
#define TUNER_REGISTRY_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <random>
#include <string>

#include "training/backends/cpu/cpu_backend.h"
#include "training/checkpoint.h"
#include "training/model_spec.h"
#include "trials/error.h"

namespace tuner::registry::testing {

// The code of the Error `f` throws (and its message in `message`); a test failure when it
// throws none.
inline ErrorCode code_of(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  ADD_FAILURE() << "expected an Error";
  return ErrorCode::kInternal;
}

inline constexpr char kTinySpec[] =
    R"({"input": [4], "layers": [{"type": "linear", "out": 6}, {"type": "relu"},
                                 {"type": "batch_norm"}, {"type": "linear", "out": 3}]})";

// A checkpoint of kTinySpec with the parameters drawn from `seed`.
inline training::Checkpoint tiny_checkpoint(uint64_t seed = 1) {
  const training::ModelSpec spec = training::parse_model_spec(kTinySpec);
  auto backend = training::make_cpu_backend(1);
  auto model = training::build_model(spec, 2, *backend, seed);
  training::Checkpoint c;
  c.model_spec = spec.json;
  c.parameters = model->parameters().values_to_host();
  c.buffers = model->parameters().buffer_values_to_host();
  return c;
}

// A fresh directory under the test temp dir, removed when destroyed.
class ScratchDir {
 public:
  ScratchDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("tuner_registry_test_" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace tuner::registry::testing

#endif  // TUNER_REGISTRY_TEST_UTIL_H_
