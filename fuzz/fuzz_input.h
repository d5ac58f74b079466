// What the fuzz targets share: an input as a file (for readers that take a path) and an input
// cut into parts.
//
// Thread safety: a fuzz target runs one input at a time; these are not thread-safe.
#ifndef TUNER_FUZZ_FUZZ_INPUT_H_
#define TUNER_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace tuner::fuzz {

// A directory of this process's own, made on first use and removed at exit.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tuner-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// `bytes` written to the file `name` in the scratch directory; returns its path. Aborts when the
// file cannot be written.
inline std::string write_file(const std::string& name, std::string_view bytes) {
  static const ScratchDir dir;
  const std::filesystem::path path = dir.path() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) std::abort();
  return path.string();
}

// The bytes of the file at `path`; aborts when it cannot be read.
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) std::abort();
  return bytes;
}

// The input cut at each "\xff\xfe" pair (a separator a fuzzer finds quickly and text inputs never
// hold), so that a target reading several files or frames explores their counts too.
inline std::vector<std::string> split_parts(const uint8_t* data, size_t size) {
  std::vector<std::string> parts(1);
  for (size_t i = 0; i < size; ++i) {
    if (i + 1 < size && data[i] == 0xff && data[i + 1] == 0xfe) {
      parts.emplace_back();
      ++i;
    } else {
      parts.back().push_back(static_cast<char>(data[i]));
    }
  }
  return parts;
}

}  // namespace tuner::fuzz

#endif  // TUNER_FUZZ_FUZZ_INPUT_H_
