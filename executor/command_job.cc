#include "executor/command_job.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <utility>

#include "executor/argv_template.h"
#include "executor/child_process.h"
#include "executor/job_log.h"
#include "executor/metrics_line.h"
#include "trials/error.h"
#include "trials/params_json.h"

extern char** environ;

namespace tuner {

namespace {

using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// After the program exits, how long its output pipes may stay open (held by a process that left
// its process group) before the run stops waiting for them.
constexpr milliseconds kDrainAfterExit{1000};
// Without a pidfd to wake poll() on exit, how often the child is checked.
constexpr milliseconds kExitPollInterval{10};
constexpr size_t kReadChunk = 64 * 1024;
constexpr int kMaxReadsPerWake = 16;  // per pipe, so that a chatty program cannot starve timers

// Splits a byte stream into lines. A line longer than `max` bytes is delivered cut at `max`
// (flagged), and the rest of it, up to its newline, is dropped.
class LineSplitter {
 public:
  explicit LineSplitter(size_t max) : max_(max) {}

  template <typename OnLine>  // void(std::string_view line, bool cut)
  void feed(std::string_view data, OnLine&& on_line) {
    while (!data.empty()) {
      size_t newline = data.find('\n');
      std::string_view piece = data.substr(0, newline);
      data = newline == std::string_view::npos ? std::string_view() : data.substr(newline + 1);
      if (!discarding_) {
        buffer_.append(piece.substr(0, max_ + 1 - std::min(buffer_.size(), max_ + 1)));
        if (buffer_.size() > max_) {
          buffer_.resize(max_);
          on_line(std::string_view(buffer_), true);
          buffer_.clear();
          discarding_ = true;
        }
      }
      if (newline == std::string_view::npos) break;
      if (discarding_) {
        discarding_ = false;
        continue;
      }
      if (!buffer_.empty() && buffer_.back() == '\r') buffer_.pop_back();
      on_line(std::string_view(buffer_), false);
      buffer_.clear();
    }
  }

  // End of stream: delivers a last line that had no newline.
  template <typename OnLine>
  void finish(OnLine&& on_line) {
    if (!buffer_.empty()) on_line(std::string_view(buffer_), false);
    buffer_.clear();
    discarding_ = false;
  }

 private:
  const size_t max_;
  std::string buffer_;
  bool discarding_ = false;
};

std::vector<std::string> build_env(const CommandSpec& spec, const CommandTrial& trial) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    env[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  }
  for (const auto& [name, value] : spec.env) {
    if (name.empty() || name.find('=') != std::string::npos) {
      throw Error(ErrorCode::kInvalidArgument,
                  "command env: '" + name + "' is not a valid variable name");
    }
    env[name] = value;
  }
  env["TUNER_PARAMS"] = params_to_json(trial.params);
  env["TUNER_TRIAL_ID"] = std::to_string(trial.trial_id);
  env["TUNER_TRIAL_NUMBER"] = std::to_string(trial.number);
  if (trial.checkpoint_path) env["TUNER_CHECKPOINT_PATH"] = *trial.checkpoint_path;
  if (trial.pause_at_step) env["TUNER_PAUSE_AT_STEP"] = std::to_string(*trial.pause_at_step);
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

std::string shell_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    if (!a.empty() && a.find_first_of(" \t\n'\"\\$`;&|<>(){}*?") == std::string::npos) {
      out += a;
      continue;
    }
    out += '\'';  // quoted as a shell would need it, so the line can be pasted to rerun
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::string ms_text(milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

}  // namespace

bool CommandOutcome::succeeded() const { return exit_code == 0 && !stopped_by && !timed_out; }

Metrics CommandOutcome::result_metrics() const {
  if (final_metrics) return *final_metrics;
  if (last_report) return last_report->metrics;
  return {};
}

std::vector<std::string> CommandOutcome::result_integer_metrics() const {
  if (final_metrics) return final_integers;
  if (last_report) return last_report_integers;
  return {};
}

std::string CommandOutcome::describe() const {
  std::string out;
  if (timed_out) out += "timed out after " + ms_text(elapsed) + "; ";
  if (stopped_by) out += "stopped (" + std::string(to_string(*stopped_by)) + "); ";
  return out + ExitStatus{exit_code, term_signal}.describe();
}

CommandJob::CommandJob(CommandSpec spec, CommandJobOptions options)
    : spec_(std::move(spec)), options_(std::move(options)) {}

CommandOutcome CommandJob::run(const CommandTrial& trial, const ReportCallback& on_report,
                               std::stop_token stop) const {
  const auto start = SteadyClock::now();
  SpawnOptions spawn{.argv = expand_argv(spec_.argv, {trial.trial_id, trial.number, &trial.params}),
                     .env = build_env(spec_, trial),
                     .working_dir = spec_.working_dir};
  JobLog log(options_.log_path, std::max<size_t>(1, options_.log_tail_lines),
             std::max<size_t>(1, options_.log_tail_bytes));
  log.add_line("[tuner] trial " + std::to_string(trial.number) + " (id " +
               std::to_string(trial.trial_id) + "): running " + shell_line(spawn.argv));

  // A stop request wakes poll() through this pipe.
  UniqueFd wake_read, wake_write;
  auto wake = [&wake_write] {
    char byte = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_write.get(), &byte, 1);
  };
  std::optional<std::stop_callback<decltype(wake)>> on_stop;
  if (stop.stop_possible()) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw Error(ErrorCode::kUnavailable, "cannot create a pipe for the stop token");
    }
    wake_read.reset(fds[0]);
    wake_write.reset(fds[1]);
    on_stop.emplace(stop, wake);
  }

  ChildProcess child = ChildProcess::spawn(spawn);

  CommandOutcome out;
  const size_t max_line = std::max<size_t>(1, options_.max_line_bytes);
  LineSplitter stdout_lines(max_line), stderr_lines(max_line);
  bool terminating = false;
  std::optional<SteadyClock::time_point> kill_at;  // SIGKILL then, once terminating
  std::optional<SteadyClock::time_point> time_deadline;
  if (options_.time_limit > milliseconds::zero()) time_deadline = start + options_.time_limit;
  std::optional<SteadyClock::time_point> drain_deadline;  // once exited
  std::optional<ExitStatus> status;
  std::optional<SteadyClock::time_point> next_gpu_sample;
  if (options_.gpu_memory) next_gpu_sample = start;

  auto terminate = [&](const std::string& why) {
    if (terminating) return;
    terminating = true;
    log.add_line("[tuner] " + why + ": SIGTERM to process group " + std::to_string(child.pid()) +
                 ", SIGKILL in " + ms_text(options_.stop_grace) + " if still running");
    child.signal_group(SIGTERM);
    kill_at = SteadyClock::now() + options_.stop_grace;
  };

  auto on_stdout_line = [&](std::string_view line, bool cut) {
    if (cut) {
      log.add_line(line);
      log.add_line("[tuner] the line above was cut at " + std::to_string(max_line) + " bytes");
      return;
    }
    MetricsLine parsed = parse_metrics_line(line);
    switch (parsed.kind) {
      case MetricsLine::Kind::kText:
        log.add_line(line);
        break;
      case MetricsLine::Kind::kMalformed:
        log.add_line(line);
        log.add_line("[tuner] the line above is not a metrics line: " + parsed.problem);
        break;
      case MetricsLine::Kind::kFinal:
        out.final_metrics = std::move(parsed.metrics);
        out.final_integers = std::move(parsed.integers);
        break;
      case MetricsLine::Kind::kReport: {
        CommandReport report{parsed.step, std::move(parsed.metrics)};
        ++out.reports;
        if (!terminating && on_report) {
          JobDecision decision = on_report(report);
          if (decision != JobDecision::kContinue) {
            out.stopped_by = decision;
            terminate("told to " + std::string(to_string(decision)) + " at step " +
                      std::to_string(report.step));
          }
        }
        out.last_report = std::move(report);
        out.last_report_integers = std::move(parsed.integers);
        break;
      }
    }
  };
  auto on_stderr_line = [&](std::string_view line, bool cut) {
    log.add_line(line);
    if (cut) {
      log.add_line("[tuner] the line above was cut at " + std::to_string(max_line) + " bytes");
    }
  };

  // Reads what `fd` has; at end of file flushes the splitter and closes the fd.
  char buffer[kReadChunk];
  auto drain = [&](UniqueFd& fd, LineSplitter& lines, auto& on_line) {
    for (int i = 0; i < kMaxReadsPerWake && fd.valid(); ++i) {
      ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
      if (n > 0) {
        lines.feed(std::string_view(buffer, static_cast<size_t>(n)), on_line);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      lines.finish(on_line);  // end of file, or an error that ends the stream
      fd.reset();
    }
  };

  while (true) {
    if (!status) status = child.try_wait();
    auto now = SteadyClock::now();
    if (status && !drain_deadline) drain_deadline = now + kDrainAfterExit;
    bool pipes_open = child.stdout_fd().valid() || child.stderr_fd().valid();
    if (status && !pipes_open) break;
    if (status && now >= *drain_deadline) {
      log.add_line("[tuner] output still open " + ms_text(kDrainAfterExit) +
                   " after the program exited (held by a process outside its group); "
                   "not waiting for it");
      break;
    }
    if (!status) {
      if (time_deadline && now >= *time_deadline && !terminating) {
        out.timed_out = true;
        terminate("time limit of " + ms_text(options_.time_limit) + " reached");
      }
      if (stop.stop_requested() && !terminating) {
        out.stopped_by = JobDecision::kStop;
        terminate("stop requested");
      }
      if (next_gpu_sample && now >= *next_gpu_sample) {
        if (std::optional<uint64_t> bytes = options_.gpu_memory->process_group_bytes(child.pid())) {
          out.gpu_memory_peak_bytes = std::max(out.gpu_memory_peak_bytes.value_or(0), *bytes);
        }
        next_gpu_sample = now + options_.gpu_memory_interval;
      }
      if (kill_at && now >= *kill_at) {
        log.add_line("[tuner] still running " + ms_text(options_.stop_grace) +
                     " after SIGTERM: SIGKILL to process group " + std::to_string(child.pid()));
        child.signal_group(SIGKILL);
        kill_at.reset();
      }
    }

    // Sleep until output, exit, a stop request or the next deadline.
    std::optional<SteadyClock::time_point> wake_at;
    auto earliest = [&](const std::optional<SteadyClock::time_point>& t) {
      if (t && (!wake_at || *t < *wake_at)) wake_at = t;
    };
    if (status) {
      earliest(drain_deadline);
    } else {
      if (!terminating) earliest(time_deadline);
      earliest(kill_at);
      earliest(next_gpu_sample);
      if (!child.exit_fd().valid()) earliest(now + kExitPollInterval);
    }
    int timeout_ms = -1;
    if (wake_at) {
      auto left = std::chrono::ceil<milliseconds>(*wake_at - now).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
    }
    pollfd fds[4];
    nfds_t count = 0;
    int out_index = -1, err_index = -1, wake_index = -1;
    if (child.stdout_fd().valid()) {
      out_index = static_cast<int>(count);
      fds[count++] = {child.stdout_fd().get(), POLLIN, 0};
    }
    if (child.stderr_fd().valid()) {
      err_index = static_cast<int>(count);
      fds[count++] = {child.stderr_fd().get(), POLLIN, 0};
    }
    if (!status && child.exit_fd().valid()) fds[count++] = {child.exit_fd().get(), POLLIN, 0};
    if (wake_read.valid() && !terminating) {
      wake_index = static_cast<int>(count);
      fds[count++] = {wake_read.get(), POLLIN, 0};
    }
    int ready = ::poll(fds, count, timeout_ms);
    if (ready < 0 && errno != EINTR) {
      throw Error(ErrorCode::kInternal,
                  "poll failed while running trial " + std::to_string(trial.number));
    }
    if (ready <= 0) continue;
    if (out_index >= 0 && fds[out_index].revents) {
      drain(child.stdout_fd(), stdout_lines, on_stdout_line);
    }
    if (err_index >= 0 && fds[err_index].revents) {
      drain(child.stderr_fd(), stderr_lines, on_stderr_line);
    }
    if (wake_index >= 0 && fds[wake_index].revents) {
      char sink[16];
      while (::read(wake_read.get(), sink, sizeof(sink)) > 0) {
      }
    }
  }
  stdout_lines.finish(on_stdout_line);
  stderr_lines.finish(on_stderr_line);

  out.exit_code = status->exit_code;
  out.term_signal = status->term_signal;
  out.elapsed = std::chrono::duration_cast<milliseconds>(SteadyClock::now() - start);
  log.add_line("[tuner] trial " + std::to_string(trial.number) + ": " + out.describe() + " after " +
               ms_text(out.elapsed));
  out.log_tail = log.tail();
  return out;
}

}  // namespace tuner
