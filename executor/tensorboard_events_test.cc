#include "executor/tensorboard_events.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "trials/error.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;

uint32_t masked(std::string_view data) {
  const uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

// The records of a TFRecord file, their checksums checked.
std::vector<std::string> read_records(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const std::string bytes = text.str();
  std::vector<std::string> records;
  size_t at = 0;
  while (at < bytes.size()) {
    uint64_t length = 0;
    uint32_t length_crc = 0, data_crc = 0;
    std::memcpy(&length, bytes.data() + at, 8);
    std::memcpy(&length_crc, bytes.data() + at + 8, 4);
    EXPECT_EQ(length_crc, masked(std::string_view(bytes).substr(at, 8)));
    const std::string data = bytes.substr(at + 12, length);
    std::memcpy(&data_crc, bytes.data() + at + 12 + length, 4);
    EXPECT_EQ(data_crc, masked(data));
    records.push_back(data);
    at += 12 + length + 4;
  }
  EXPECT_EQ(at, bytes.size());
  return records;
}

// A protobuf message's fields: (field number, raw bytes of a length-delimited or fixed value,
// or the varint).
struct Field {
  uint32_t number;
  uint64_t varint = 0;
  std::string bytes;
};
std::vector<Field> fields_of(const std::string& m) {
  std::vector<Field> out;
  size_t at = 0;
  auto varint = [&] {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      const auto b = static_cast<unsigned char>(m[at++]);
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
  };
  while (at < m.size()) {
    const uint64_t key = varint();
    Field f{static_cast<uint32_t>(key >> 3)};
    switch (key & 7) {
      case 0:
        f.varint = varint();
        break;
      case 1:
        f.bytes = m.substr(at, 8);
        at += 8;
        break;
      case 2: {
        const uint64_t n = varint();
        f.bytes = m.substr(at, n);
        at += n;
        break;
      }
      case 5:
        f.bytes = m.substr(at, 4);
        at += 4;
        break;
      default:
        ADD_FAILURE() << "wire type " << (key & 7);
        return out;
    }
    out.push_back(f);
  }
  return out;
}

TEST(TensorBoardEvents, Crc32cIsCastagnolis) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the check value of CRC-32C
  EXPECT_EQ(crc32c(""), 0u);
}

TEST(TensorBoardEvents, AFileOfTheVersionThenOneEventPerStep) {
  const fs::path dir = fs::temp_directory_path() / ("tb-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::path path;
  {
    TensorBoardWriter writer(dir / "trial-3");
    path = writer.path();
    writer.add_scalars(1, Metrics{{"val_accuracy", 0.5}, {"train_loss", 1.25}}, 100.0);
    writer.add_scalars(2, Metrics{{"val_accuracy", std::nan("")}},
                       101.0);  // nothing to plot: no event
    writer.add_scalars(3, Metrics{{"val_accuracy", 0.75}}, 102.0);
  }
  EXPECT_EQ(path.parent_path(), dir / "trial-3");
  EXPECT_EQ(path.filename().string().rfind("events.out.tfevents.", 0), 0u);
  const std::vector<std::string> records = read_records(path);
  ASSERT_EQ(records.size(), 3u);
  const std::vector<Field> version = fields_of(records[0]);
  ASSERT_EQ(version.size(), 3u);
  EXPECT_EQ(version[2].number, 3u);
  EXPECT_EQ(version[2].bytes, "brain.Event:2");

  const std::vector<Field> first = fields_of(records[1]);
  ASSERT_EQ(first.size(), 3u);
  double wall = 0;
  std::memcpy(&wall, first[0].bytes.data(), 8);
  EXPECT_EQ(wall, 100.0);
  EXPECT_EQ(first[1].number, 2u);
  EXPECT_EQ(first[1].varint, 1u);  // the step
  EXPECT_EQ(first[2].number, 5u);  // the summary
  const std::vector<Field> values = fields_of(first[2].bytes);
  ASSERT_EQ(values.size(), 2u);
  std::map<std::string, float> scalars;
  for (const Field& v : values) {
    const std::vector<Field> value = fields_of(v.bytes);
    ASSERT_EQ(value.size(), 2u);
    float x = 0;
    std::memcpy(&x, value[1].bytes.data(), 4);
    scalars[value[0].bytes] = x;
  }
  EXPECT_EQ(scalars, (std::map<std::string, float>{{"train_loss", 1.25f}, {"val_accuracy", 0.5f}}));
  EXPECT_EQ(fields_of(records[2])[1].varint, 3u);
  fs::remove_all(dir);
}

TEST(TensorBoardEvents, ADirectoryThatCannotBeMadeNamesTheFile) {
  EXPECT_THROW(TensorBoardWriter("/proc/no-such-dir/trial-0"), Error);
}

}  // namespace
}  // namespace tuner
