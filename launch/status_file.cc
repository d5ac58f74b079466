#include "launch/status_file.h"

#include <signal.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>

#include "trials/error.h"

namespace tuner {

namespace fs = std::filesystem;

void write_status_file(const fs::path& path, const nlohmann::json& doc) {
  std::error_code error;
  fs::create_directories(path.parent_path(), error);
  if (error) {
    throw Error(ErrorCode::kUnavailable,
                "cannot make the folder of " + path.string() + ": " + error.message());
  }
  const fs::path next = path.string() + ".next";
  {
    std::ofstream out(next, std::ios::trunc);
    out << doc.dump() << "\n";
    if (!out) throw Error(ErrorCode::kUnavailable, "cannot write " + next.string());
  }
  fs::rename(next, path, error);
  if (error) {
    throw Error(ErrorCode::kUnavailable, "cannot write " + path.string() + ": " + error.message());
  }
}

std::optional<nlohmann::json> read_status_file(const fs::path& path, int version) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  try {
    nlohmann::json doc = nlohmann::json::parse(text.str());
    if (doc.at("version").get<int>() != version) return std::nullopt;
    const int64_t pid = doc.at("pid").get<int64_t>();
    if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)) {
      return std::nullopt;
    }
    return doc;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace tuner
