#include "executor/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "trials/error.h"

namespace tuner {

namespace {

std::string errno_text(int error) { return std::strerror(error); }

// RAII for the posix_spawn attribute and file-action objects.
struct SpawnAttr {
  posix_spawnattr_t attr;
  SpawnAttr() { posix_spawnattr_init(&attr); }
  ~SpawnAttr() { posix_spawnattr_destroy(&attr); }
};
struct SpawnFileActions {
  posix_spawn_file_actions_t actions;
  SpawnFileActions() { posix_spawn_file_actions_init(&actions); }
  ~SpawnFileActions() { posix_spawn_file_actions_destroy(&actions); }
};

// A close-on-exec pipe: {read end, write end}.
std::pair<UniqueFd, UniqueFd> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw Error(ErrorCode::kUnavailable, "cannot create a pipe: " + errno_text(errno));
  }
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

void set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  long fd = ::syscall(SYS_pidfd_open, pid, 0);
  return fd >= 0 ? static_cast<int>(fd) : -1;
#else
  (void)pid;
  return -1;
#endif
}

void check(int rc, const char* what) {
  if (rc != 0) {
    throw Error(ErrorCode::kInternal, std::string(what) + " failed: " + errno_text(rc));
  }
}

}  // namespace

std::string ExitStatus::describe() const {
  if (exit_code) return "exited with code " + std::to_string(*exit_code);
  if (term_signal) {
    const char* name = sigabbrev_np(*term_signal);
    return "killed by signal " + std::to_string(*term_signal) +
           (name ? std::string(" (SIG") + name + ")" : std::string());
  }
  return "ended in an unknown way";
}

ChildProcess ChildProcess::spawn(const SpawnOptions& options) {
  if (options.argv.empty() || options.argv[0].empty()) {
    throw Error(ErrorCode::kInvalidArgument, "no program to run: argv is empty");
  }
  const std::string& program = options.argv[0];
  if (!options.working_dir.empty()) {
    struct stat st;
    if (::stat(options.working_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      throw Error(ErrorCode::kNotFound, "cannot run '" + program + "': working directory '" +
                                            options.working_dir + "' does not exist");
    }
  }

  auto [out_read, out_write] = make_pipe();
  auto [err_read, err_write] = make_pipe();

  SpawnFileActions fa;
  check(posix_spawn_file_actions_addopen(&fa.actions, 0, "/dev/null", O_RDONLY, 0),
        "posix_spawn_file_actions_addopen");
  check(posix_spawn_file_actions_adddup2(&fa.actions, out_write.get(), 1),
        "posix_spawn_file_actions_adddup2");
  check(posix_spawn_file_actions_adddup2(&fa.actions, err_write.get(), 2),
        "posix_spawn_file_actions_adddup2");
  if (!options.working_dir.empty()) {
    check(posix_spawn_file_actions_addchdir_np(&fa.actions, options.working_dir.c_str()),
          "posix_spawn_file_actions_addchdir_np");
  }
  check(posix_spawn_file_actions_addclosefrom_np(&fa.actions, 3),
        "posix_spawn_file_actions_addclosefrom_np");

  SpawnAttr sa;
  sigset_t empty, all;
  sigemptyset(&empty);
  sigfillset(&all);
  check(posix_spawnattr_setflags(
            &sa.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF),
        "posix_spawnattr_setflags");
  check(posix_spawnattr_setpgroup(&sa.attr, 0), "posix_spawnattr_setpgroup");
  check(posix_spawnattr_setsigmask(&sa.attr, &empty), "posix_spawnattr_setsigmask");
  check(posix_spawnattr_setsigdefault(&sa.attr, &all), "posix_spawnattr_setsigdefault");

  std::vector<char*> argv;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : options.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, program.c_str(), &fa.actions, &sa.attr, argv.data(), envp.data());
  if (rc != 0) {
    bool has_slash = program.find('/') != std::string::npos;
    if (rc == ENOENT) {
      throw Error(ErrorCode::kNotFound,
                  "cannot run '" + program +
                      "': " + (has_slash ? "no such file" : "program not found in PATH"));
    }
    if (rc == EACCES || rc == ENOEXEC || rc == ENOTDIR || rc == EISDIR) {
      throw Error(ErrorCode::kInvalidArgument, "cannot run '" + program + "': " + errno_text(rc) +
                                                   (rc == EACCES ? " (is it executable?)" : ""));
    }
    throw Error(ErrorCode::kUnavailable, "cannot run '" + program + "': " + errno_text(rc));
  }

  ChildProcess child;
  child.pid_ = pid;
  set_nonblocking(out_read.get());
  set_nonblocking(err_read.get());
  child.stdout_ = std::move(out_read);
  child.stderr_ = std::move(err_read);
  child.exit_fd_.reset(open_pidfd(pid));
  return child;  // the write ends close here: the child holds the only copies
}

ChildProcess::~ChildProcess() { kill_and_reap(); }

void ChildProcess::kill_and_reap() {
  if (pid_ <= 0 || status_) return;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  status_ = ExitStatus{};
}

void ChildProcess::signal_group(int signal) {
  // Until reaped, the child's pid (a zombie at worst) names its group: no other process can
  // have taken it.
  if (pid_ > 0 && !status_) ::kill(-pid_, signal);
}

std::optional<ExitStatus> ChildProcess::try_wait() {
  if (status_) return status_;
  if (pid_ <= 0) return std::nullopt;
  siginfo_t info;
  std::memset(&info, 0, sizeof(info));
  // WNOWAIT: look without reaping, so that the group can still be signalled by its id.
  int rc;
  while ((rc = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT)) < 0 &&
         errno == EINTR) {
  }
  if (rc < 0) {
    throw Error(ErrorCode::kInternal, "waitid for process " + std::to_string(pid_) + " failed: " +
                                          errno_text(errno) + " (is SIGCHLD ignored?)");
  }
  if (info.si_pid == 0) return std::nullopt;
  ::kill(-pid_, SIGKILL);  // what the program left behind in its group
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  ExitStatus exit;
  if (WIFEXITED(status)) exit.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) exit.term_signal = WTERMSIG(status);
  status_ = exit;
  exit_fd_.reset();
  return status_;
}

}  // namespace tuner
