#include "sweep/storage_watch.h"

#include <ctime>
#include <filesystem>

#include "trials/error.h"

namespace tuner {

std::optional<StorageStop> storage_stop(const Coordinator& coordinator,
                                        const SqliteStorage& storage, bool stop_asked) {
  // Writes to a deleted file are lost when it is closed: stop before anything more goes there.
  if (std::optional<std::string> replaced = storage.file_replaced()) {
    return StorageStop{.kind = StorageStop::Kind::kFileReplaced, .reason = *replaced};
  }
  if (std::optional<std::string> failed = coordinator.storage_failure()) {
    return StorageStop{.kind = StorageStop::Kind::kWritesFail, .reason = *failed};
  }
  if (stop_asked && coordinator.storage_failing()) {
    return StorageStop{
        .kind = StorageStop::Kind::kWritesFail,
        .reason = "stopped while the study's writes fail: " + coordinator.last_storage_error()};
  }
  return std::nullopt;
}

StoppedTrials stop_running(Coordinator& coordinator, const std::string& why,
                           std::optional<std::chrono::milliseconds> heartbeat_interval) {
  const CoordinatorStats before = coordinator.stats();
  coordinator.abandon(why);
  StoppedTrials stopped;
  stopped.not_stored = static_cast<int>(coordinator.stats().not_abandoned - before.not_abandoned);
  stopped.stored = before.active_leases - stopped.not_stored;
  if (heartbeat_interval) {
    // HEARTBEAT without the leases tells executors elsewhere to stop those jobs.
    const auto until =
        std::chrono::steady_clock::now() + *heartbeat_interval + std::chrono::milliseconds(100);
    while (std::chrono::steady_clock::now() < until) {
      coordinator.poll_once(std::chrono::milliseconds(50));
    }
  }
  return stopped;
}

std::string save_open_copy(SqliteStorage& storage, std::string& reason) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  const std::string base = storage.path() + ".recovered-" + stamp;
  std::string copy = base;
  for (int n = 2; std::filesystem::exists(copy); ++n) copy = base + "-" + std::to_string(n);
  try {
    storage.backup_to(copy);
  } catch (const Error& e) {
    reason += std::string("; copying the open database failed too: ") + e.what();
    return "";
  }
  return copy;
}

}  // namespace tuner
