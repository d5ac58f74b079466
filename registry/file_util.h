// Internal to registry/: small file helpers whose failures are tuner::Errors naming the file.
#ifndef TUNER_REGISTRY_FILE_UTIL_H_
#define TUNER_REGISTRY_FILE_UTIL_H_

#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace tuner::registry {

// A hidden temporary directory beside a target path (".NAME.tmp-XXXXXX" in its parent), removed
// with its contents when destroyed unless publish() renamed it to the target.
// Thread safety: one owner.
class TempDir {
 public:
  // REQUIRES: target's parent directory exists (else Error(kUnavailable) naming it).
  static TempDir beside(const std::filesystem::path& target);
  TempDir(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir();

  const std::filesystem::path& path() const { return path_; }
  // Renames the directory to `target` (which must not exist: Error(kAlreadyExists)).
  void publish(const std::filesystem::path& target);

 private:
  explicit TempDir(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;  // empty once published or moved from
};

// Writes `content` to `path` (created or truncated), flushed. Error(kUnavailable) naming it.
void write_file(const std::filesystem::path& path, std::string_view content);
// Writes to a temporary file beside `path`, fsync'ed, then renamed over it.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);
// Creates one directory (its parent must exist). Error(kUnavailable) naming it.
void make_directory(const std::filesystem::path& path);

// The integer member `key` of `object`, a JSON object read from `where`; `fallback` when it has
// none. Error(kDataLoss) naming `where` and `key` when it is not an integer an int holds.
int int_member(const nlohmann::json& object, const char* key, int fallback,
               const std::string& where);

}  // namespace tuner::registry

#endif  // TUNER_REGISTRY_FILE_UTIL_H_
