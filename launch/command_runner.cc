#include "launch/command_runner.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "launch/pipe_read.h"
#include "launch/shell_quote.h"
#include "trials/error.h"

extern char** environ;

namespace tuner {
namespace {

using SteadyClock = std::chrono::steady_clock;

class SystemCommandRunner final : public CommandRunner {
 public:
  explicit SystemCommandRunner(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  CommandOutput run(const std::vector<std::string>& argv) override {
    SpawnOptions spawn;
    spawn.argv = argv;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) spawn.env.emplace_back(*e);
    ChildProcess child = ChildProcess::spawn(spawn);
    CommandOutput output;
    const SteadyClock::time_point deadline = SteadyClock::now() + timeout_;
    while (child.stdout_fd().valid() || child.stderr_fd().valid()) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
      if (left.count() <= 0) timed_out(child, argv);
      pollfd fds[2] = {{child.stdout_fd().get(), POLLIN, 0}, {child.stderr_fd().get(), POLLIN, 0}};
      ::poll(fds, 2, static_cast<int>(left.count()));
      read_available(child.stdout_fd(), output.out);
      read_available(child.stderr_fd(), output.err);
    }
    while (true) {
      if (std::optional<ExitStatus> status = child.try_wait()) {
        output.status = *status;
        return output;
      }
      if (SteadyClock::now() >= deadline) timed_out(child, argv);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

 private:
  [[noreturn]] void timed_out(ChildProcess& child, const std::vector<std::string>& argv) {
    child.signal_group(SIGKILL);
    throw Error(ErrorCode::kUnavailable, "'" + command_text(argv) + "' did not finish in " +
                                             std::to_string(timeout_.count() / 1000) +
                                             " s; it was killed");
  }

  const std::chrono::milliseconds timeout_;
};

}  // namespace

std::shared_ptr<CommandRunner> system_command_runner(std::chrono::milliseconds timeout) {
  return std::make_shared<SystemCommandRunner>(timeout);
}

std::string command_text(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& word : argv) {
    text += (text.empty() ? "" : " ") + shell_quote_if_needed(word);
  }
  return text;
}

}  // namespace tuner
