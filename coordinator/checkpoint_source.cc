#include "coordinator/checkpoint_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "coordinator/study_run.h"
#include "executor/checkpoint_writer.h"
#include "executor/unique_fd.h"

namespace tuner {

std::optional<std::string> lease_checkpoint_path(const Lease& lease, CheckpointOf of) {
  const Prepared& work = lease.work;
  if (of == CheckpointOf::kStart) {
    if (!work.start_from) return std::nullopt;
    return lease.run->needs.checkpoint_path(*work.start_from);
  }
  return lease.run->needs.checkpoint_path(work.history.empty() ? lease.trial_number
                                                               : work.history.front());
}

CheckpointDataMessage read_checkpoint_chunk(const CheckpointGetMessage& get,
                                            const std::string& checkpoint) {
  CheckpointDataMessage answer{
      .lease_id = get.lease_id, .of = get.of, .file = get.file, .offset = get.offset};
  const std::string path = (std::filesystem::path(checkpoint).parent_path() / get.file).string();
  auto missing = [&](const std::string& why) {
    answer.found = false;
    answer.reason = path + ": " + why;
    return answer;
  };
  if (std::string problem = checkpoint_file_problem(get.file); !problem.empty()) {
    return missing(problem);
  }
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) {
    return missing(errno == ENOENT ? "not on the coordinator's host" : std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return missing(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return missing("not a regular file");
  answer.size = static_cast<uint64_t>(st.st_size);
  answer.written_by_lease = read_checkpoint_writer(path);
  if (get.stat) return answer;
  if (get.offset > answer.size) {
    return missing("byte " + std::to_string(get.offset) + " is past its end (" +
                   std::to_string(answer.size) + " bytes)");
  }
  answer.data.resize(std::min<uint64_t>(kMaxFileChunkBytes, answer.size - get.offset));
  size_t done = 0;
  while (done < answer.data.size()) {
    const ssize_t n = ::pread(fd.get(), answer.data.data() + done, answer.data.size() - done,
                              static_cast<off_t>(get.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      answer.data.clear();
      answer.size = 0;
      return missing(n < 0 ? std::strerror(errno) : "shorter than its size (changed while read)");
    }
    done += static_cast<size_t>(n);
  }
  return answer;
}

}  // namespace tuner
