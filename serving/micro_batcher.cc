#include "serving/micro_batcher.h"

#include <algorithm>

namespace tuner::serving {

MicroBatcher::MicroBatcher(MicroBatcherOptions options, BatchObserver observer)
    : options_(options), observer_(std::move(observer)), thread_([this] { run(); }) {}

MicroBatcher::~MicroBatcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void MicroBatcher::submit(std::shared_ptr<LoadedModel> model, std::vector<float> inputs,
                          int64_t rows, Done done) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (options_.max_wait.count() <= 0 && !busy_ && queue_.empty() && !stopping_) {
    // The model is idle and nobody waits: run it here, without two hand-offs between threads.
    busy_ = true;
    lock.unlock();
    // The model is freed however answer() ends (a callback that throws included).
    struct Release {
      MicroBatcher& self;
      ~Release() {
        bool waiting;
        {
          std::lock_guard<std::mutex> relock(self.mutex_);
          self.busy_ = false;
          waiting = !self.queue_.empty();
        }
        if (waiting) self.wake_.notify_all();  // else the batcher's thread sleeps on
      }
    } release{*this};
    std::vector<Request> batch;
    batch.push_back({std::move(model), std::move(inputs), rows, std::move(done),
                     std::chrono::steady_clock::now()});
    answer(batch);
    return;
  }
  queue_.push_back({std::move(model), std::move(inputs), rows, std::move(done),
                    std::chrono::steady_clock::now()});
  lock.unlock();
  wake_.notify_all();
}

void MicroBatcher::run() {
  const int64_t max_batch = std::max<int64_t>(1, options_.max_batch);
  std::vector<Request> batch;
  for (;;) {
    batch.clear();
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return !busy_ && (stopping_ || !queue_.empty()); });
      if (queue_.empty()) return;  // stopping, nothing left
      busy_ = true;
      int64_t rows = 0;
      const auto deadline = queue_.front().arrived + options_.max_wait;
      for (;;) {
        // Take what is queued: the same model as the batch's first, while it fits.
        while (!queue_.empty() && (batch.empty() || (queue_.front().model == batch.front().model &&
                                                     rows + queue_.front().rows <= max_batch))) {
          rows += queue_.front().rows;
          batch.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
        if (rows >= max_batch || !queue_.empty() || stopping_ || options_.max_wait.count() <= 0) {
          break;
        }
        if (!wake_.wait_until(lock, deadline, [&] { return stopping_ || !queue_.empty(); })) break;
      }
    }
    answer(batch);
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = false;
  }
}

void MicroBatcher::answer(std::vector<Request>& batch) {
  LoadedModel& model = *batch.front().model;
  int64_t rows = 0;
  for (const Request& r : batch) rows += r.rows;
  std::vector<float> outputs;
  std::exception_ptr error;
  try {
    if (batch.size() == 1) {
      outputs = model.model.forward(batch.front().inputs);
    } else {
      std::vector<float> inputs;
      inputs.reserve(batch.front().inputs.size() / static_cast<size_t>(batch.front().rows) *
                     static_cast<size_t>(rows));
      for (const Request& r : batch) inputs.insert(inputs.end(), r.inputs.begin(), r.inputs.end());
      outputs = model.model.forward(inputs);
    }
  } catch (...) {
    error = std::current_exception();
  }
  if (observer_) observer_(rows, static_cast<int64_t>(batch.size()));
  const size_t per_row = error ? 0 : outputs.size() / static_cast<size_t>(rows);
  size_t offset = 0;
  for (Request& r : batch) {
    Prediction p;
    p.model = r.model;
    p.batch_rows = rows;
    if (!error) {
      const size_t n = per_row * static_cast<size_t>(r.rows);
      p.outputs.assign(outputs.begin() + static_cast<std::ptrdiff_t>(offset),
                       outputs.begin() + static_cast<std::ptrdiff_t>(offset + n));
      offset += n;
    }
    r.done(error, std::move(p));
  }
}

}  // namespace tuner::serving
