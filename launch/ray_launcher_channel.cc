#include "launch/ray_launcher_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <thread>

#include "executor/child_process.h"
#include "executor/unique_fd.h"
#include "launch/command_runner.h"
#include "launch/pipe_read.h"
#include "trials/error.h"

extern char** environ;

namespace tuner {
namespace {

using SteadyClock = std::chrono::steady_clock;

// The lines of the other side's stderr that ended() shows.
constexpr size_t kErrLines = 20;

// A pipe whose ends are close-on-exec; [0] reads, [1] writes.
std::array<UniqueFd, 2> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw Error(ErrorCode::kUnavailable,
                std::string("cannot make a pipe: ") + std::strerror(errno));
  }
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Writes all of `text` to the pipe `fd` with SIGPIPE blocked on this thread, so that a reader
// that has gone is an error (EPIPE) rather than a signal that ends this process. False when the
// reader has gone or does not read.
bool write_all(int fd, const std::string& text) {
  sigset_t pipe_signal, old;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_signal, &old);
  size_t done = 0;
  bool ok = true;
  const SteadyClock::time_point deadline = SteadyClock::now() + std::chrono::seconds(10);
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN && SteadyClock::now() < deadline) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 100);
    } else {
      ok = false;
      break;
    }
  }
  if (!ok && errno == EPIPE) {
    // Takes the SIGPIPE this write raised, if it is still pending, before the mask is restored.
    const timespec zero{0, 0};
    ::sigtimedwait(&pipe_signal, nullptr, &zero);
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

class ProcessLineChannel final : public LineChannel {
 public:
  explicit ProcessLineChannel(const std::vector<std::string>& argv) : program_(argv.at(0)) {
    auto in = make_pipe();
    auto out = make_pipe();
    auto err = make_pipe();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0].get(), 0);
    posix_spawn_file_actions_adddup2(&actions, out[1].get(), 1);
    posix_spawn_file_actions_adddup2(&actions, err[1].get(), 2);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    // A process group of its own: a Ctrl-C at the terminal is the sweep's to handle, not the
    // launcher's. Signals as a fresh program has them.
    sigset_t none, defaults;
    sigemptyset(&none);
    sigfillset(&defaults);
    sigdelset(&defaults, SIGKILL);
    sigdelset(&defaults, SIGSTOP);
    posix_spawnattr_setpgroup(&attributes, 0);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setflags(
        &attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int error = ::posix_spawnp(&pid_, args[0], &actions, &attributes, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (error != 0) {
      pid_ = -1;
      throw Error(error == ENOENT ? ErrorCode::kNotFound : ErrorCode::kUnavailable,
                  "cannot run '" + command_text(argv) + "': " + std::strerror(error));
    }
    in_ = std::move(in[1]);
    out_ = std::move(out[0]);
    err_ = std::move(err[0]);
    set_nonblocking(in_.get());
    set_nonblocking(out_.get());
    set_nonblocking(err_.get());
  }

  ~ProcessLineChannel() override { close(std::chrono::milliseconds(0)); }

  void send(const std::string& line) override {
    if (!in_.valid() || !write_all(in_.get(), line + "\n")) {
      throw Error(ErrorCode::kUnavailable, "'" + program_ + "' reads no more input");
    }
  }

  std::vector<std::string> receive() override {
    drain();
    std::vector<std::string> lines;
    size_t start = 0;
    for (size_t end; (end = out_buffer_.find('\n', start)) != std::string::npos; start = end + 1) {
      lines.push_back(out_buffer_.substr(start, end - start));
    }
    out_buffer_.erase(0, start);
    return lines;
  }

  std::optional<std::string> ended() override {
    drain();
    if (out_.valid() || out_buffer_.find('\n') != std::string::npos) return std::nullopt;
    if (!reap(false)) return std::nullopt;
    std::string said = status_->describe();
    if (!err_partial_.empty()) push_err_line(std::exchange(err_partial_, ""));
    for (const std::string& line : err_lines_) said += "\n    | " + line;
    return said;
  }

  void close(std::chrono::milliseconds grace) override {
    in_.reset();
    if (pid_ < 0) return;
    const SteadyClock::time_point deadline = SteadyClock::now() + grace;
    while (!reap(false) && SteadyClock::now() < deadline) {
      pollfd fds[2] = {{out_.get(), POLLIN, 0}, {err_.get(), POLLIN, 0}};
      ::poll(fds, 2, 20);
      drain();
    }
    drain();
    if (!status_) {
      ::kill(-pid_, SIGKILL);
      reap(true);
      drain();
    }
  }

 private:
  void push_err_line(std::string line) {
    err_lines_.push_back(std::move(line));
    if (err_lines_.size() > kErrLines) err_lines_.pop_front();
  }

  void drain() {
    read_available(out_, out_buffer_);
    read_available(err_, err_partial_);
    size_t start = 0;
    for (size_t end; (end = err_partial_.find('\n', start)) != std::string::npos; start = end + 1) {
      push_err_line(err_partial_.substr(start, end - start));
    }
    err_partial_.erase(0, start);
  }

  // Reaps the process once it has exited (or waits for it with `block`), killing what it left
  // in its process group first, while the group's id is still its own; true once reaped.
  bool reap(bool block) {
    if (status_) return true;
    if (pid_ < 0) return false;
    siginfo_t info{};
    int got;
    do {
      got = ::waitid(P_PID, static_cast<id_t>(pid_), &info,
                     WEXITED | WNOWAIT | (block ? 0 : WNOHANG));
    } while (got < 0 && errno == EINTR);
    if (got != 0 || info.si_pid != pid_) return false;
    ::kill(-pid_, SIGKILL);
    int raw = 0;
    while (::waitpid(pid_, &raw, 0) < 0 && errno == EINTR) {
    }
    ExitStatus status;
    if (WIFEXITED(raw)) status.exit_code = WEXITSTATUS(raw);
    if (WIFSIGNALED(raw)) status.term_signal = WTERMSIG(raw);
    status_ = status;
    return true;
  }

  const std::string program_;
  pid_t pid_ = -1;  // also its process group's id
  UniqueFd in_;
  UniqueFd out_;
  UniqueFd err_;
  std::string out_buffer_;  // received, not yet a whole line or not yet taken
  std::string err_partial_;
  std::deque<std::string> err_lines_;  // the last kErrLines
  std::optional<ExitStatus> status_;
};

}  // namespace

std::unique_ptr<LineChannel> spawn_line_channel(const std::vector<std::string>& argv) {
  return std::make_unique<ProcessLineChannel>(argv);
}

}  // namespace tuner
