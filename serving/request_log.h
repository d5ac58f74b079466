// RequestLog: the model server's log of requests and predictions, the files `tuner drift
// --current` reads (docs/drift.md, "The request log"): a directory of files
// requests-<UTC yyyymmddTHHMMSS>-<seq>.jsonl, one JSON line per logged request:
//   {"time": "2026-12-02T11:00:00.123Z", "model": "fmnist", "version": 3,
//    "inputs": [[raw input values of sample 0, flattened], ...],
//    "outputs": [[outputs of sample 0], ...], "predicted": [argmax of sample 0, ...]}
//
// Sampled: a fraction of the requests, spread evenly (a fraction of 0.1 logs every tenth).
// Rotated: a file past max_file_bytes is closed and the next line starts a new one; beyond
// max_files of this server's files the oldest is deleted. Off the request path: a thread of its
// own writes; when it falls max_queued requests behind, further ones are dropped and counted,
// never waited for. A file that cannot be opened or written ends the logging with one message on
// stderr; requests are served on.
//
// Thread safety: sampled() and log() from any thread.
#ifndef TUNER_SERVING_REQUEST_LOG_H_
#define TUNER_SERVING_REQUEST_LOG_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace tuner::serving {

struct RequestLogOptions {
  std::filesystem::path dir;  // created when missing
  double sample = 1.0;        // the fraction of requests logged, in (0, 1]
  uint64_t max_file_bytes = uint64_t{64} << 20;
  int max_files = 10;        // this server's files kept (the newest); 0: all
  size_t max_queued = 4096;  // requests waiting for the writer before new ones are dropped
};

// What became of a sampled request: written to the file; dropped because the writer was
// max_queued requests behind; or failed, not written because a file could not be opened or
// written (a full disk, a directory removed): logging stopped there, and every later request
// fails too.
enum class LogOutcome { kWritten, kDropped, kFailed };

struct LoggedRequest {
  std::chrono::system_clock::time_point time;
  std::string model;
  std::optional<int> version;
  int64_t rows = 0;
  std::vector<float> inputs;   // [rows, input numel]: the raw values the client sent
  std::vector<float> outputs;  // [rows, output numel]
};

// One logged request's line, without the newline.
std::string request_log_line(const LoggedRequest& request);
// "requests-20261202T110000-1.jsonl" for a file opened at `time` with sequence number `seq`.
std::string request_log_file_name(std::chrono::system_clock::time_point time, int64_t seq);

class RequestLog {
 public:
  // Called once per request given to log(), with its outcome: kDropped from log()'s thread,
  // kWritten and kFailed from the writer's once the line is on disk or could not be put there.
  using Observer = std::function<void(LogOutcome outcome)>;

  // Throws Error(kInvalidArgument) for a sample outside (0, 1] or a max_file_bytes of 0, and
  // Error(kUnavailable) naming the directory when it cannot be created.
  explicit RequestLog(RequestLogOptions options, Observer observer = {});
  // Writes what is queued, then closes the file.
  ~RequestLog();
  RequestLog(const RequestLog&) = delete;
  RequestLog& operator=(const RequestLog&) = delete;

  // Whether the request now arriving is to be logged.
  bool sampled();
  void log(LoggedRequest request);

 private:
  void run();
  // Whether the line reached the file.
  bool write(const LoggedRequest& request);
  void open_next(std::chrono::system_clock::time_point time);

  // Constant after construction.
  const RequestLogOptions options_;
  const Observer observer_;

  // Protected by mutex_.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<LoggedRequest> queue_;
  bool stopping_ = false;
  double credit_ = 0;  // the sampler's: a request is logged each time it reaches 1

  // The writer thread's own.
  std::ofstream file_;
  std::filesystem::path file_path_;
  uint64_t file_bytes_ = 0;
  int64_t seq_ = 0;
  bool failed_ = false;                        // a file failed: nothing more is logged
  std::deque<std::filesystem::path> written_;  // this server's files, oldest first

  std::thread thread_;  // last: starts after the state above exists
};

}  // namespace tuner::serving

#endif  // TUNER_SERVING_REQUEST_LOG_H_
