#include "executor/checkpoint_fetch.h"

#include <fstream>
#include <optional>
#include <system_error>

namespace tuner {

namespace {

// The answer to `get`, asked `asks` times at most, `wait` each; nullopt when none came or the job
// was stopped. An answer to an earlier ask of another chunk or file is dropped.
std::optional<CheckpointDataMessage> ask(HeldJob& job, JobEvents& events,
                                         const CheckpointGetMessage& get,
                                         std::chrono::milliseconds wait, int asks) {
  std::optional<CheckpointDataMessage> data;
  for (int i = 0; i < asks && !data; ++i) {
    events.post(JobEvent{.lease_id = get.lease_id, .checkpoint_get = get});
    while ((data = job.take_checkpoint_data(wait)) &&
           (data->of != get.of || data->file != get.file || data->offset != get.offset)) {
    }
    if (job.stop_source.stop_requested()) return std::nullopt;
  }
  return data;
}

}  // namespace

std::optional<CheckpointDataMessage> stat_checkpoint_file(HeldJob& job, JobEvents& events,
                                                          CheckpointOf of, const std::string& file,
                                                          std::chrono::milliseconds wait,
                                                          int asks) {
  std::optional<CheckpointDataMessage> data = ask(
      job, events,
      CheckpointGetMessage{.lease_id = job.trial.lease_id, .of = of, .file = file, .stat = true},
      wait, asks);
  if (data) data->data.clear();  // a coordinator that does not know `stat` sends bytes
  return data;
}

std::string fetch_checkpoint_file(HeldJob& job, JobEvents& events, CheckpointOf of,
                                  const std::string& file, const std::filesystem::path& target,
                                  std::chrono::milliseconds wait, int asks) {
  namespace fs = std::filesystem;
  const fs::path partial = target.string() + ".partial";
  std::ofstream out;
  auto give_up = [&](const std::string& why) {
    out.close();
    std::error_code ignored;
    fs::remove(partial, ignored);
    return why;
  };
  const uint64_t lease = job.trial.lease_id;
  uint64_t offset = 0;
  for (;;) {
    std::optional<CheckpointDataMessage> data =
        ask(job, events,
            CheckpointGetMessage{.lease_id = lease, .of = of, .file = file, .offset = offset}, wait,
            asks);
    if (job.stop_source.stop_requested()) return give_up("the job was stopped");
    if (!data) {
      return give_up("the coordinator did not answer " + std::to_string(asks) + " asks in " +
                     std::to_string(wait.count()) + " ms each");
    }
    if (!data->found) return give_up(data->reason);
    if (offset == 0) {
      out.open(partial, std::ios::binary | std::ios::trunc);
      if (!out) return give_up("cannot create " + partial.string());
    }
    out.write(data->data.data(), static_cast<std::streamsize>(data->data.size()));
    if (!out) return give_up("cannot write " + partial.string());
    offset += data->data.size();
    if (offset >= data->size) break;
    if (data->data.empty()) {
      return give_up("the coordinator sent no bytes at byte " + std::to_string(offset) + " of " +
                     std::to_string(data->size));
    }
  }
  out.close();
  if (!out) return give_up("cannot write " + partial.string());
  std::error_code ec;
  fs::rename(partial, target, ec);
  if (ec) return give_up("cannot rename " + partial.string() + ": " + ec.message());
  return "";
}

}  // namespace tuner
