#include "serving/request_log.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iostream>

#include "serving/json_text.h"
#include "trials/error.h"

namespace tuner::serving {

namespace fs = std::filesystem;

namespace {

std::tm utc(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  return tm;
}

// [[row 0], [row 1], ...] of `values`, `rows` rows.
void append_rows(std::string& out, const std::vector<float>& values, int64_t rows) {
  const size_t width = rows > 0 ? values.size() / static_cast<size_t>(rows) : 0;
  out += '[';
  for (int64_t r = 0; r < rows; ++r) {
    if (r > 0) out += ", ";
    append_row(out, std::span<const float>(values).subspan(static_cast<size_t>(r) * width, width));
  }
  out += ']';
}

}  // namespace

std::string request_log_line(const LoggedRequest& request) {
  const std::tm tm = utc(request.time);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(request.time.time_since_epoch())
          .count() %
      1000;
  char time[96];
  std::snprintf(time, sizeof time, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(millis));
  std::string out;
  out.reserve(request.inputs.size() * 4 + request.outputs.size() * 12 + 128);
  out += "{\"time\": \"";
  out += time;
  out += "\", \"model\": ";
  append_json_string(out, request.model);
  out += ", \"version\": ";
  out += request.version ? std::to_string(*request.version) : "null";
  out += ", \"inputs\": ";
  append_rows(out, request.inputs, request.rows);
  out += ", \"outputs\": ";
  append_rows(out, request.outputs, request.rows);
  out += ", \"predicted\": [";
  const size_t width =
      request.rows > 0 ? request.outputs.size() / static_cast<size_t>(request.rows) : 0;
  for (int64_t r = 0; r < request.rows; ++r) {
    if (r > 0) out += ", ";
    const auto row =
        request.outputs.begin() + static_cast<std::ptrdiff_t>(r * static_cast<int64_t>(width));
    out += std::to_string(
        width == 0 ? 0 : std::max_element(row, row + static_cast<std::ptrdiff_t>(width)) - row);
  }
  out += "]}";
  return out;
}

std::string request_log_file_name(std::chrono::system_clock::time_point time, int64_t seq) {
  const std::tm tm = utc(time);
  char name[128];
  std::snprintf(name, sizeof name, "requests-%04d%02d%02dT%02d%02d%02d-%lld.jsonl",
                tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(seq));
  return name;
}

RequestLog::RequestLog(RequestLogOptions options, Observer observer)
    : options_(std::move(options)), observer_(std::move(observer)) {
  if (!(options_.sample > 0 && options_.sample <= 1)) {
    throw Error(ErrorCode::kInvalidArgument,
                "the request log's sample fraction must be in (0, 1], got " +
                    std::to_string(options_.sample));
  }
  if (options_.max_file_bytes == 0) {
    throw Error(ErrorCode::kInvalidArgument, "the request log's file size limit must be > 0");
  }
  std::error_code ec;
  fs::create_directories(options_.dir, ec);
  if (ec || !fs::is_directory(options_.dir)) {
    throw Error(ErrorCode::kUnavailable, "cannot create the request log directory " +
                                             options_.dir.string() + ": " +
                                             (ec ? ec.message() : "not a directory"));
  }
  thread_ = std::thread([this] { run(); });
}

RequestLog::~RequestLog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

bool RequestLog::sampled() {
  std::lock_guard<std::mutex> lock(mutex_);
  credit_ += options_.sample;
  if (credit_ < 1 - 1e-9) return false;
  credit_ -= 1;
  return true;
}

void RequestLog::log(LoggedRequest request) {
  bool queued = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queue_.size() < options_.max_queued) {
      queue_.push_back(std::move(request));
      queued = true;
    }
  }
  if (queued) wake_.notify_one();
  if (!queued && observer_) observer_(LogOutcome::kDropped);
}

void RequestLog::run() {
  for (;;) {
    LoggedRequest request;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) break;
      request = std::move(queue_.front());
      queue_.pop_front();
    }
    const bool written = write(request);
    if (observer_) observer_(written ? LogOutcome::kWritten : LogOutcome::kFailed);
  }
  if (file_.is_open()) file_.close();
}

void RequestLog::open_next(std::chrono::system_clock::time_point time) {
  if (file_.is_open()) file_.close();
  fs::path path;
  do {
    path = options_.dir / request_log_file_name(time, ++seq_);
  } while (fs::exists(path));
  file_.clear();
  file_.open(path, std::ios::out | std::ios::binary);
  file_path_ = path;
  file_bytes_ = 0;
  failed_ = !file_.is_open();
  if (failed_) {
    std::cerr << "tuner serve-model: cannot write the request log " << path.string()
              << "; requests are no longer logged\n";
    return;
  }
  written_.push_back(path);
  while (options_.max_files > 0 && static_cast<int>(written_.size()) > options_.max_files) {
    std::error_code ignored;
    fs::remove(written_.front(), ignored);
    written_.pop_front();
  }
}

bool RequestLog::write(const LoggedRequest& request) {
  if (failed_) return false;
  if (!file_.is_open() || file_bytes_ >= options_.max_file_bytes) open_next(request.time);
  if (failed_) return false;
  const std::string line = request_log_line(request) + "\n";
  file_.write(line.data(), static_cast<std::streamsize>(line.size()));
  file_.flush();  // whole lines on disk, for a drift check reading the live log
  if (!file_) {
    std::cerr << "tuner serve-model: writing the request log " << file_path_.string()
              << " failed; requests are no longer logged\n";
    failed_ = true;
    return false;
  }
  file_bytes_ += line.size();
  return true;
}

}  // namespace tuner::serving
