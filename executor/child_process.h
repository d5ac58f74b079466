// ChildProcess: a program started in its own process group, its stdout and stderr piped back.
//
// The child's stdin is /dev/null; it inherits no descriptor of the parent but the pipes; its
// signal mask is empty and every signal has its default action. Destroying a ChildProcess that
// has not been reaped kills its whole process group with SIGKILL and reaps it, so no child
// outlives its owner and no zombie is left.
//
// REQUIRES: the process does not set SIGCHLD to SIG_IGN (children would be reaped by the kernel
// and their exit status lost).
// Thread safety: one thread uses an instance at a time; distinct instances are independent
// (every descriptor is opened close-on-exec, so concurrent spawns do not leak pipes to each
// other's children).
#ifndef TUNER_EXECUTOR_CHILD_PROCESS_H_
#define TUNER_EXECUTOR_CHILD_PROCESS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "executor/unique_fd.h"

namespace tuner {

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is looked up in the parent's PATH unless it has a '/'
  std::vector<std::string> env;   // the complete environment, "NAME=value" each
  std::string working_dir;        // empty: the parent's; a relative argv[0] is relative to this
};

// How a process ended: exactly one of the two is set.
struct ExitStatus {
  std::optional<int> exit_code;    // exited normally with this code
  std::optional<int> term_signal;  // killed by this signal
  // "exited with code 3", "killed by signal 9 (SIGKILL)".
  std::string describe() const;
};

class ChildProcess {
 public:
  // Starts the program. Throws Error(kNotFound) when the program (argv[0]) or the working
  // directory does not exist, Error(kInvalidArgument) when it cannot be executed (naming it and
  // the reason), Error(kUnavailable) when the system refuses a process or a pipe.
  static ChildProcess spawn(const SpawnOptions& options);

  ChildProcess(ChildProcess&& other) noexcept
      : pid_(std::exchange(other.pid_, -1)),
        stdout_(std::move(other.stdout_)),
        stderr_(std::move(other.stderr_)),
        exit_fd_(std::move(other.exit_fd_)),
        status_(std::move(other.status_)) {}
  ChildProcess& operator=(ChildProcess&&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }  // also the process group id
  // Read ends of the child's stdout and stderr: non-blocking, close-on-exec. The caller may
  // close them (reset()) once they reach end of file.
  UniqueFd& stdout_fd() { return stdout_; }
  UniqueFd& stderr_fd() { return stderr_; }
  // Readable once the child has exited (a pidfd); invalid on kernels without pidfd_open, where
  // the caller polls try_wait() instead.
  const UniqueFd& exit_fd() const { return exit_fd_; }

  // Sends `signal` to the child's whole process group. No effect once reaped.
  void signal_group(int signal);

  // Non-blocking: when the child has exited, kills what is left of its process group (SIGKILL),
  // reaps the child and returns how it ended; nullopt while it runs. After it returned a status,
  // returns that status again.
  std::optional<ExitStatus> try_wait();

  bool reaped() const { return status_.has_value(); }

 private:
  ChildProcess() = default;
  void kill_and_reap();

  pid_t pid_ = -1;  // -1 once moved from
  UniqueFd stdout_;
  UniqueFd stderr_;
  UniqueFd exit_fd_;
  std::optional<ExitStatus> status_;
};

}  // namespace tuner

#endif  // TUNER_EXECUTOR_CHILD_PROCESS_H_
