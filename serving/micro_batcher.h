// MicroBatcher: the one thread that runs the model. Requests of concurrent clients that wait
// together are run as one forward pass (up to max_batch samples), which is where a server on a
// CPU gains throughput: one GEMM of B rows costs far less than B GEMMs of one row.
//
// A batch takes the requests queued when the thread is free (in arrival order, of one model
// snapshot, until max_batch samples), then waits up to max_wait for more while it is short. With
// max_wait 0 (the default) it never waits: under load, requests queue while a batch runs, so the
// batches grow by themselves; a lone client is answered at once.
//
// When the model is idle and nothing is queued (and max_wait is 0), submit() runs the request
// on the caller's thread at once: a lone client pays no hand-off between threads.
//
// Thread safety: submit() from any thread; a request's callback runs on the thread that ran its
// forward pass (the batcher's, or the submitter's). One forward pass at a time.
#ifndef TUNER_SERVING_MICRO_BATCHER_H_
#define TUNER_SERVING_MICRO_BATCHER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "serving/loaded_model.h"

namespace tuner::serving {

struct MicroBatcherOptions {
  // The most samples one forward pass takes (a request of more runs alone). Default 64; >= 1.
  int64_t max_batch = 64;
  // How long a short batch waits for more requests. Default 0: never.
  std::chrono::microseconds max_wait{0};
};

// A request's answer: its rows of outputs, the model that computed them and the batch it ran in.
struct Prediction {
  std::vector<float> outputs;  // [rows, output numel]
  std::shared_ptr<const LoadedModel> model;
  int64_t batch_rows = 0;  // samples in the forward pass that answered it
};

class MicroBatcher {
 public:
  // Exactly one of `error` (the forward pass failed) and the prediction is meaningful.
  using Done = std::function<void(std::exception_ptr error, Prediction prediction)>;
  // Called once per forward pass with its sample count and request count.
  using BatchObserver = std::function<void(int64_t rows, int64_t requests)>;

  explicit MicroBatcher(MicroBatcherOptions options, BatchObserver observer = {});
  // Finishes what is queued, then joins the thread.
  ~MicroBatcher();
  MicroBatcher(const MicroBatcher&) = delete;
  MicroBatcher& operator=(const MicroBatcher&) = delete;

  // Queues `rows` samples of preprocessed `inputs` for `model`. REQUIRES: inputs.size() ==
  // rows * model's input numel; rows >= 1.
  void submit(std::shared_ptr<LoadedModel> model, std::vector<float> inputs, int64_t rows,
              Done done);

 private:
  struct Request {
    std::shared_ptr<LoadedModel> model;
    std::vector<float> inputs;
    int64_t rows = 0;
    Done done;
    std::chrono::steady_clock::time_point arrived;
  };
  void run();
  void answer(std::vector<Request>& batch);

  // Constant after construction.
  const MicroBatcherOptions options_;
  const BatchObserver observer_;

  // State below is protected by mutex_.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Request> queue_;
  bool busy_ = false;  // a forward pass runs (on the batcher's thread or a submitter's)
  bool stopping_ = false;

  std::thread thread_;  // last: starts after the state above exists
};

}  // namespace tuner::serving

#endif  // TUNER_SERVING_MICRO_BATCHER_H_
