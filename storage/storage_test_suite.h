// The storage test suite every Storage backend must pass. Its tests are in storage_suite_test.cc;
// a backend's test file (in storage_tests) instantiates them:
//
//   INSTANTIATE_TEST_SUITE_P(InMemory, StorageSuite,
//                            testing::Values(StorageFactory{[] { return std::make_shared<...>();
//                            }}));
#ifndef TUNER_STORAGE_STORAGE_TEST_SUITE_H_
#define TUNER_STORAGE_STORAGE_TEST_SUITE_H_

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <thread>

#include "storage/storage.h"
#include "trials/error.h"

namespace tuner {

struct StorageFactory {
  std::function<std::shared_ptr<Storage>()> make;
};

class StorageSuite : public testing::TestWithParam<StorageFactory> {
 protected:
  void SetUp() override { storage_ = GetParam().make(); }

  ErrorCode code_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.code();
    }
    ADD_FAILURE() << "no error";
    return ErrorCode::kInternal;
  }

  std::shared_ptr<Storage> storage_;
};

}  // namespace tuner

#endif  // TUNER_STORAGE_STORAGE_TEST_SUITE_H_
