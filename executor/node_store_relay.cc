#include "executor/node_store_relay.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "trials/error.h"

namespace tuner {

std::vector<std::pair<std::string, std::string>> NodeStoreRelay::take_new_keys() {
  std::vector<std::pair<std::string, std::string>> fresh;
  for (auto& [key, value] : read_node_store(path())) {
    if (!seen_.insert(key).second) continue;
    published_.emplace(key, value);
    fresh.emplace_back(key, std::move(value));
  }
  return fresh;
}

std::vector<std::string> NodeStoreRelay::write_keys(
    const std::map<std::string, std::string>& entries) {
  std::vector<std::string> problems;
  for (const auto& [key, value] : entries) {
    if (seen_.contains(key)) continue;
    try {
      write_node_store_key(path(), key, value);
      seen_.insert(key);
    } catch (const Error& e) {
      problems.emplace_back(e.what());
    }
  }
  return problems;
}

std::string NodeStoreWatch::watch(const std::filesystem::path& dir) {
  if (polling_) return "";
  if (!fd_.valid()) fd_.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  // A rank's key appears by a rename into the directory (node_store.h).
  if (fd_.valid() &&
      ::inotify_add_watch(fd_.get(), dir.c_str(), IN_MOVED_TO | IN_CLOSE_WRITE) >= 0) {
    return "";
  }
  const int error = errno;
  polling_ = true;
  return "cannot watch " + dir.string() + " with inotify (" + std::strerror(error) +
         "): looking at node stores every " + std::to_string(kNodeStorePoll.count()) + " ms";
}

void NodeStoreWatch::drain() {
  if (!fd_.valid()) return;
  char buffer[4096];
  while (::read(fd_.get(), buffer, sizeof buffer) > 0) {
  }
}

}  // namespace tuner
