#include "executor/tensorboard_events.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <system_error>

#include "trials/error.h"

namespace tuner {

namespace {

constexpr std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0x82F63B78u ^ (c >> 1) : c >> 1;  // reflected
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kCrc32cTable = make_crc32c_table();

// TFRecord's masking, so that a CRC of data that holds CRCs is not a CRC of them.
uint32_t masked_crc(std::string_view data) {
  const uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

// --- The protobuf wire format, the few parts an Event needs
// ---------------------------------------

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

template <typename T>
void put_fixed(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));  // little-endian hosts (x86-64, the engine's targets)
  out.append(bytes, sizeof(T));
}

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void put_key(std::string& out, uint32_t field, WireType type) {
  put_varint(out, field << 3 | type);
}

void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}

// tensorflow.Event: wall_time = 1 (double), step = 2 (int64), file_version = 3 (string),
// summary = 5 (Summary).
std::string event(double wall_time, int64_t step) {
  std::string e;
  put_key(e, 1, kFixed64);
  put_fixed(e, wall_time);
  put_key(e, 2, kVarint);
  put_varint(e, static_cast<uint64_t>(step));
  return e;
}

// tensorflow.Summary: value = 1 (repeated Value); Value: tag = 1 (string), simple_value = 2
// (float).
std::string scalar_value(const std::string& tag, float value) {
  std::string v;
  put_bytes(v, 1, tag);
  put_key(v, 2, kFixed32);
  put_fixed(v, value);
  return v;
}

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace

uint32_t crc32c(std::string_view data) {
  uint32_t crc = 0xffffffffu;
  for (unsigned char byte : data) crc = kCrc32cTable[(crc ^ byte) & 0xff] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

TensorBoardWriter::TensorBoardWriter(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const double now = now_seconds();
  // The name TensorBoard looks for; its own writers put the seconds and the host in it.
  path_ = dir / ("events.out.tfevents." + std::to_string(static_cast<int64_t>(now)) + "." +
                 host_name() + "." + std::to_string(::getpid()));
  file_ = std::fopen(path_.c_str(), "wb");
  if (file_ == nullptr) {
    throw Error(ErrorCode::kUnavailable,
                path_.string() + ": cannot create the TensorBoard event file: " +
                    std::error_code(errno, std::generic_category()).message());
  }
  std::string first = event(now, 0);
  put_bytes(first, 3, "brain.Event:2");
  write_record(first);
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void TensorBoardWriter::add_scalars(int64_t step, const Metrics& scalars,
                                    double wall_time_seconds) {
  std::string summary;
  for (const auto& [name, value] : scalars) {
    if (std::isfinite(value)) put_bytes(summary, 1, scalar_value(name, static_cast<float>(value)));
  }
  if (summary.empty()) return;
  std::string e = event(wall_time_seconds, step);
  put_bytes(e, 5, summary);
  write_record(e);
}

void TensorBoardWriter::write_record(const std::string& data) {
  std::string record;
  std::string length;
  put_fixed(length, static_cast<uint64_t>(data.size()));
  record += length;
  put_fixed(record, masked_crc(length));
  record += data;
  put_fixed(record, masked_crc(data));
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() ||
      std::fflush(file_) != 0) {
    throw Error(ErrorCode::kUnavailable,
                path_.string() + ": cannot write the TensorBoard event file: " +
                    std::error_code(errno, std::generic_category()).message());
  }
}

}  // namespace tuner
