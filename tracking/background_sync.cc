#include "tracking/background_sync.h"

#include <algorithm>

#include "trials/error.h"

namespace tuner::tracking {

namespace {

std::string seconds_text(std::chrono::milliseconds d) {
  const double s = d.count() / 1000.0;
  const std::string text = std::to_string(s);
  return text.substr(0, text.find('.') + (s < 10 ? 2 : 0)) + " s";
}

BackgroundSyncOptions with_defaults(BackgroundSyncOptions options) {
  if (!options.clock) options.clock = system_clock();
  if (options.interval <= std::chrono::milliseconds(0))
    options.interval = std::chrono::milliseconds(1);
  options.max_backoff = std::max(options.max_backoff, options.interval);
  return options;
}

}  // namespace

BackgroundSync::BackgroundSync(MlflowSync& sync, BackgroundSyncOptions options)
    : sync_(sync), options_(with_defaults(std::move(options))) {
  thread_ = std::jthread([this](std::stop_token stop) { loop(stop); });
}

BackgroundSync::~BackgroundSync() {
  thread_.request_stop();
  {
    std::lock_guard lock(mutex_);
    wake_.notify_all();
  }
}

void BackgroundSync::nudge() {
  std::lock_guard lock(mutex_);
  if (down_) return;  // backed off: the outage decides when to try again
  nudged_ = true;
  wake_.notify_all();
}

int BackgroundSync::passes() const {
  std::lock_guard lock(mutex_);
  return passes_;
}

int BackgroundSync::failures() const {
  std::lock_guard lock(mutex_);
  return failures_;
}

bool BackgroundSync::pass(const SyncPass& p) {
  std::string failure;
  try {
    sync_.sync(p);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  std::lock_guard lock(mutex_);
  if (failure.empty()) {
    ++passes_;
    if (down_ && options_.warn) {
      options_.warn("MLflow tracking at " + sync_.client().url() + " answers again; caught up");
    }
    down_ = false;
    return true;
  }
  ++failures_;
  if (!down_ && options_.warn) {
    options_.warn(
        "MLflow tracking: " + failure +
        "; the study goes on, and tracking catches up when the server answers" +
        (options_.catch_up_hint.empty() ? "" : " (or later: " + options_.catch_up_hint + ")"));
  }
  down_ = true;
  return false;
}

void BackgroundSync::loop(std::stop_token stop) {
  std::chrono::milliseconds wait = options_.interval;
  while (!stop.stop_requested()) {
    const bool ok = pass({.parent_status = RunStatus::kRunning, .stop = stop});
    wait = ok ? options_.interval : std::min(wait * 2, options_.max_backoff);
    if (!ok && wait < options_.interval * 2) wait = options_.interval * 2;
    // Sleeps until the wait is over, a nudge, or the stop; the clock's own sleep, woken by a
    // stop source that either of the other two requests.
    std::stop_source wake;
    std::stop_callback on_stop(stop, [&] { wake.request_stop(); });
    std::jthread waker([&](std::stop_token done) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, done, [&] { return nudged_; });
      nudged_ = false;
      wake.request_stop();
    });
    options_.clock->sleep_until(options_.clock->steady_now() + wait, wake.get_token());
    waker.request_stop();
  }
}

bool BackgroundSync::finish(std::optional<RunStatus> parent_status) {
  {
    std::lock_guard lock(mutex_);
    if (finished_) return *finished_;
  }
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
  // The last pass, stopped at its next call once the limit has passed.
  std::stop_source limit;
  std::jthread watchdog([&](std::stop_token done) {
    if (options_.clock->sleep_until(options_.clock->steady_now() + options_.final_pass_limit,
                                    done)) {
      limit.request_stop();
    }
  });
  bool complete = false;
  std::string failure;
  try {
    const SyncReport report =
        sync_.sync({.parent_status = parent_status, .stop = limit.get_token()});
    complete = report.pending == 0 && !report.stopped;
    if (report.stopped)
      failure = "the last pass ran past its limit of " + seconds_text(options_.final_pass_limit);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  watchdog.request_stop();
  watchdog.join();
  std::lock_guard lock(mutex_);
  if (!failure.empty()) {
    ++failures_;
    if (options_.warn) {
      options_.warn(
          "MLflow tracking is behind: " + failure +
          (options_.catch_up_hint.empty() ? "" : "; to catch up: " + options_.catch_up_hint));
    }
  } else {
    ++passes_;
    if (down_ && options_.warn) {
      options_.warn("MLflow tracking at " + sync_.client().url() + " answers again; caught up");
    }
    down_ = false;
  }
  finished_ = failure.empty() && complete;
  return *finished_;
}

}  // namespace tuner::tracking
