// libFuzzer target for load_checkpoint() (training/checkpoint.h), which reads checkpoint files
// that may be truncated, corrupt or another program's.
//
// When the input's first byte is odd, the rest is taken as a body and framed as a valid file
// would be (magic, version, length, CRC-32), so that the fuzzer reaches the body's parser past
// the checksum; otherwise the rest is the file as is. Properties checked on every input:
//   1. loading returns or throws CheckpointError, nothing else (ASan/UBSan catch memory errors);
//   2. a loaded checkpoint saves, loads and saves again to the same bytes.
// Build and run: scripts/fuzz (docs/testing.md).
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "training/checkpoint.h"

namespace {

void append(std::string& out, const void* value, size_t size) {
  out.append(static_cast<const char*>(value), size);
}

// `body` framed as save_checkpoint frames it (checkpoint.h's file layout).
std::string framed(std::string_view body) {
  std::string file = "TUNERCKP";
  const uint32_t version = tuner::training::kCheckpointFormatVersion;
  const uint64_t length = body.size();
  append(file, &version, sizeof version);
  append(file, &length, sizeof length);
  file.append(body);
  const uint32_t crc = static_cast<uint32_t>(
      ::crc32(0, reinterpret_cast<const Bytef*>(file.data()), static_cast<uInt>(file.size())));
  append(file, &crc, sizeof crc);
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string path =
      tuner::fuzz::write_file("input.ckpt", (data[0] & 1) ? framed(rest) : std::string(rest));
  tuner::training::Checkpoint loaded;
  try {
    loaded = tuner::training::load_checkpoint(path);
  } catch (const tuner::training::CheckpointError&) {
    return 0;
  }
  // Saved once and once more after loading that: the same bytes (saving is a fixed point).
  const std::string once = tuner::fuzz::write_file("once.ckpt", "");
  tuner::training::save_checkpoint(once, loaded);
  const std::string twice = tuner::fuzz::write_file("twice.ckpt", "");
  tuner::training::save_checkpoint(twice, tuner::training::load_checkpoint(once));
  if (tuner::fuzz::read_file(once) != tuner::fuzz::read_file(twice)) {
    std::fprintf(stderr, "a loaded checkpoint does not save and load to the same bytes\n");
    std::abort();
  }
  return 0;
}
