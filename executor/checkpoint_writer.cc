#include "executor/checkpoint_writer.h"

#include <charconv>
#include <fstream>
#include <system_error>

namespace tuner {

std::filesystem::path checkpoint_writer_path(const std::filesystem::path& file) {
  return file.string() + ".lease";
}

uint64_t read_checkpoint_writer(const std::filesystem::path& file) {
  std::ifstream in(checkpoint_writer_path(file));
  std::string text;
  if (!in || !std::getline(in, text)) return 0;
  uint64_t lease = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), lease);
  return ec == std::errc() && end == text.data() + text.size() ? lease : 0;
}

std::string write_checkpoint_writer(const std::filesystem::path& file, uint64_t lease) {
  const std::filesystem::path sidecar = checkpoint_writer_path(file);
  const std::filesystem::path temp = sidecar.string() + ".partial";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << lease << '\n';
    out.close();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temp, ignored);
      return "cannot write " + temp.string();
    }
  }
  std::error_code ec;
  std::filesystem::rename(temp, sidecar, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    return "cannot rename " + temp.string() + " to " + sidecar.string() + ": " + ec.message();
  }
  return "";
}

}  // namespace tuner
