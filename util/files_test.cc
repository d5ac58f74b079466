#include "util/files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "trials/error.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;

TEST(ReadFile, ReturnsTheBytesAndNamesAMissingFile) {
  const fs::path dir =
      fs::temp_directory_path() / ("util_files_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string bytes("a\0b\nc", 5);
  std::ofstream(dir / "f", std::ios::binary) << bytes;
  EXPECT_EQ(read_file(dir / "f"), bytes);
  try {
    read_file(dir / "missing");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_EQ(std::string(e.what()), (dir / "missing").string() + ": does not exist");
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tuner
