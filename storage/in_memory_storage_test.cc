#include "storage/in_memory_storage.h"

#include "storage/storage_test_suite.h"

namespace tuner {
namespace {

INSTANTIATE_TEST_SUITE_P(InMemory, StorageSuite, testing::Values(StorageFactory{[] {
                           return std::make_shared<InMemoryStorage>();
                         }}));

}  // namespace
}  // namespace tuner
