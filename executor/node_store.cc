#include "executor/node_store.h"

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "trials/error.h"
#include "trials/hex.h"

namespace tuner {

namespace fs = std::filesystem;

namespace {

// How often a wait looks for its key.
constexpr std::chrono::milliseconds kPollInterval{5};

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

std::string node_store_file(std::string_view key) { return "k" + to_hex(key); }

std::optional<std::string> node_store_key(std::string_view file_name) {
  if (file_name.size() < 3 || file_name[0] != 'k') return std::nullopt;
  return from_hex(file_name.substr(1));
}

void write_node_store_key(const fs::path& dir, std::string_view key, std::string_view value) {
  static std::atomic<uint64_t> counter{0};
  const fs::path final_path = dir / node_store_file(key);
  const fs::path temporary = dir / (".tmp-" + std::to_string(::getpid()) + "-" +
                                    std::to_string(counter++) + "-" + node_store_file(key));
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(value.data(), static_cast<std::streamsize>(value.size()));
    out.close();
    if (!out) {
      throw Error(ErrorCode::kUnavailable,
                  "node store: cannot write " + temporary.string() + ": " + std::strerror(errno));
    }
  }
  std::error_code ec;
  fs::rename(temporary, final_path, ec);
  if (ec) {
    fs::remove(temporary, ec);
    throw Error(ErrorCode::kUnavailable, "node store: cannot rename a key into " +
                                             final_path.string() + ": " + ec.message());
  }
}

std::map<std::string, std::string> read_node_store(const fs::path& dir) {
  std::map<std::string, std::string> entries;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::optional<std::string> key = node_store_key(e.path().filename().string());
    if (!key) continue;
    if (std::optional<std::string> value = read_file(e.path())) entries[*key] = std::move(*value);
  }
  return entries;
}

std::optional<std::string> wait_node_store_key(const fs::path& dir, std::string_view key,
                                               std::chrono::milliseconds timeout) {
  const fs::path path = dir / node_store_file(key);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    // The rename makes the file whole before it has this name.
    if (std::optional<std::string> value = read_file(path)) return value;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(kPollInterval);
  }
}

NodeStoreDir::NodeStoreDir(const fs::path& parent) {
  const fs::path base = parent.empty() ? fs::temp_directory_path() : parent;
  std::string pattern = (base / "tuner-node-store-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw Error(ErrorCode::kUnavailable, "node store: cannot make a directory in " + base.string() +
                                             ": " + std::strerror(errno));
  }
  path_ = pattern;
}

NodeStoreDir::~NodeStoreDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void NodeStore::set(const std::string& key, const std::vector<char>& value) {
  write_node_store_key(dir_, key, std::string_view(value.data(), value.size()));
}

std::optional<std::vector<char>> NodeStore::get(const std::string& key,
                                                std::chrono::milliseconds timeout) {
  std::optional<std::string> value = wait_node_store_key(dir_, key, timeout);
  if (!value) return std::nullopt;
  return std::vector<char>(value->begin(), value->end());
}

}  // namespace tuner
