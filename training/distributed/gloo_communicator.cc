// GlooCommunicator: every Gloo object lives on the communicator's worker thread. It creates the TCP
// device (whose event-loop thread inherits its signal mask), runs the rendezvous, then the queued
// collectives in issue order, and finally tears Gloo down. SIGPIPE is blocked on both threads:
// writing to a dead peer's socket must become an error (EPIPE) that Gloo reports, not a signal
// that kills the process.
#include "training/distributed/gloo_communicator.h"

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

namespace tuner::training {
namespace {

// Gloo's connectFullMesh waits for keys without a timeout (the store's default, 30 s): this
// wrapper bounds every wait by the communicator's timeout.
class BoundedStore final : public gloo::rendezvous::Store {
 public:
  BoundedStore(std::unique_ptr<gloo::rendezvous::Store> inner, std::chrono::milliseconds timeout)
      : inner_(std::move(inner)), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    inner_->set(key, data);
  }
  std::vector<char> get(const std::string& key) override {
    inner_->wait({key}, timeout_);
    return inner_->get(key);
  }
  void wait(const std::vector<std::string>& keys) override { inner_->wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    inner_->wait(keys, std::min(timeout, timeout_));
  }

 private:
  std::unique_ptr<gloo::rendezvous::Store> inner_;
  std::chrono::milliseconds timeout_;
};

// Gloo's Store on top of the caller's RendezvousStore. Values are cached: Gloo waits for a key,
// then gets it.
class StoreAdapter final : public gloo::rendezvous::Store {
 public:
  explicit StoreAdapter(std::shared_ptr<RendezvousStore> store) : store_(std::move(store)) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set(key, data);
  }

  std::vector<char> get(const std::string& key) override {
    wait({key}, kDefaultTimeout);
    return cache_.at(key);
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, kDefaultTimeout); }

  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (const std::string& key : keys) {
      if (cache_.contains(key)) continue;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      std::optional<std::vector<char>> value =
          store_->get(key, std::max(left, std::chrono::milliseconds(0)));
      if (!value) {
        throw std::runtime_error("rendezvous key '" + key + "' was not set within " +
                                 std::to_string(timeout.count()) + " ms");
      }
      cache_.emplace(key, std::move(*value));
    }
  }

 private:
  std::shared_ptr<RendezvousStore> store_;
  std::map<std::string, std::vector<char>> cache_;
};

class GlooPending final : public PendingCollective {
 public:
  explicit GlooPending(std::future<void> done) : done_(std::move(done)) {}
  ~GlooPending() override {
    if (done_.valid()) done_.wait();
  }
  void wait() override {
    if (done_.valid()) done_.get();
  }

 private:
  std::future<void> done_;
};

void block_sigpipe_on_this_thread() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

}  // namespace

struct GlooCommunicator::Impl {
  struct Task {
    std::string op;  // for error messages, e.g. "all_reduce_sum of 1024 floats"
    std::function<void()> run;
    std::promise<void> done;
  };

  // Constant after construction.
  int rank = 0;
  int size = 0;
  GlooOptions options;
  std::string where;  // "gloo rank 0 of 2"

  // Used only on the worker thread.
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
  uint32_t next_tag = 0;
  std::string failure;  // set by the first failed collective: the communicator is broken

  std::thread worker;

  // State below is protected by mu.
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Task> queue;
  bool stopping = false;

  CommunicatorError error(const std::string& op, const std::string& what) const {
    return CommunicatorError(where + ": " + op + " failed: " + what);
  }

  // Runs on the worker: connects, reports the outcome through `ready`, then serves the queue.
  void run_worker(std::function<std::unique_ptr<gloo::rendezvous::Store>()> make_store,
                  std::string rendezvous_name, std::promise<void> ready) {
    block_sigpipe_on_this_thread();
    bool connected = false;
    try {
      gloo::transport::tcp::attr attr;
      if (options.interface.empty()) {
        attr.hostname = options.hostname;
      } else {
        attr.iface = options.interface;
      }
      device = gloo::transport::tcp::CreateDevice(attr);
      BoundedStore store(make_store(), options.timeout);
      context = std::make_shared<gloo::rendezvous::Context>(rank, size);
      context->setTimeout(options.timeout);
      context->connectFullMesh(store, device);
      connected = true;
      ready.set_value();
    } catch (const std::exception& e) {
      context.reset();
      device.reset();
      ready.set_exception(
          std::make_exception_ptr(error("rendezvous through " + rendezvous_name + " (timeout " +
                                            std::to_string(options.timeout.count()) + " ms)",
                                        e.what())));
    }
    if (!connected) return;
    for (;;) {
      Task task;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty()) break;  // stopping, and everything queued has run
        task = std::move(queue.front());
        queue.pop_front();
      }
      if (!failure.empty()) {
        task.done.set_exception(std::make_exception_ptr(
            error(task.op, "an earlier collective failed (" + failure + ")")));
        continue;
      }
      try {
        task.run();
        task.done.set_value();
      } catch (const std::exception& e) {
        failure = e.what();
        task.done.set_exception(std::make_exception_ptr(error(task.op, e.what())));
      }
    }
    // Gloo's objects die on the thread that used them.
    context.reset();
    device.reset();
  }

  void start(std::function<std::unique_ptr<gloo::rendezvous::Store>()> make_store,
             std::string rendezvous_name) {
    if (size < 1 || rank < 0 || rank >= size) {
      throw std::invalid_argument("GlooCommunicator: rank " + std::to_string(rank) +
                                  " is not in [0, " + std::to_string(size) + ")");
    }
    where = "gloo rank " + std::to_string(rank) + " of " + std::to_string(size);
    std::promise<void> ready;
    std::future<void> connected = ready.get_future();
    // The promise moves to the worker: it may still touch it after the constructor has gone on.
    worker = std::thread([this, make_store = std::move(make_store),
                          rendezvous_name = std::move(rendezvous_name),
                          ready = std::move(ready)]() mutable {
      run_worker(std::move(make_store), std::move(rendezvous_name), std::move(ready));
    });
    try {
      connected.get();
    } catch (...) {
      worker.join();
      throw;
    }
  }

  std::future<void> enqueue(std::string op, std::function<void()> run) {
    Task task{std::move(op), std::move(run), {}};
    std::future<void> done = task.done.get_future();
    {
      std::lock_guard lock(mu);
      queue.push_back(std::move(task));
    }
    cv.notify_one();
    return done;
  }

  std::future<void> enqueue_all_reduce(std::span<float> x) {
    return enqueue("all_reduce_sum of " + std::to_string(x.size()) + " floats", [this, x] {
      if (size == 1 || x.empty()) return;
      gloo::AllreduceOptions opts(context);
      opts.setOutput(x.data(), x.size());
      // Ring: each chunk is summed by one rank and then copied to all, so every rank ends with
      // the same bits.
      opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      opts.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      opts.setTag(next_tag++);
      opts.setTimeout(options.timeout);
      gloo::allreduce(opts);
    });
  }
};

GlooCommunicator::GlooCommunicator(int rank, int size, const std::filesystem::path& file_store_dir,
                                   GlooOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->rank = rank;
  impl_->size = size;
  impl_->options = std::move(options);
  const std::string dir = file_store_dir.string();
  impl_->start(
      [dir]() -> std::unique_ptr<gloo::rendezvous::Store> {
        std::filesystem::create_directories(dir);
        return std::make_unique<gloo::rendezvous::FileStore>(dir);
      },
      "directory " + dir);
}

GlooCommunicator::GlooCommunicator(int rank, int size, std::shared_ptr<RendezvousStore> store,
                                   GlooOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (!store) throw std::invalid_argument("GlooCommunicator: the rendezvous store is null");
  impl_->rank = rank;
  impl_->size = size;
  impl_->options = std::move(options);
  impl_->start(
      [store = std::move(store)]() -> std::unique_ptr<gloo::rendezvous::Store> {
        return std::make_unique<StoreAdapter>(store);
      },
      "the caller's store");
}

GlooCommunicator::~GlooCommunicator() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_one();
  impl_->worker.join();
}

int GlooCommunicator::rank() const { return impl_->rank; }
int GlooCommunicator::size() const { return impl_->size; }

void GlooCommunicator::all_reduce_sum(std::span<float> x) { impl_->enqueue_all_reduce(x).get(); }

std::unique_ptr<PendingCollective> GlooCommunicator::all_reduce_sum_async(std::span<float> x) {
  return std::make_unique<GlooPending>(impl_->enqueue_all_reduce(x));
}

void GlooCommunicator::broadcast(std::span<float> x, int root) {
  if (root < 0 || root >= impl_->size) {
    throw std::invalid_argument(impl_->where + ": broadcast root " + std::to_string(root) +
                                " is not a rank");
  }
  Impl* impl = impl_.get();
  impl_
      ->enqueue(
          "broadcast of " + std::to_string(x.size()) + " floats from rank " + std::to_string(root),
          [impl, x, root] {
            if (impl->size == 1 || x.empty()) return;
            gloo::BroadcastOptions opts(impl->context);
            opts.setOutput(x.data(), x.size());
            opts.setRoot(root);
            opts.setTag(impl->next_tag++);
            opts.setTimeout(impl->options.timeout);
            gloo::broadcast(opts);
          })
      .get();
}

void GlooCommunicator::barrier() {
  Impl* impl = impl_.get();
  impl_
      ->enqueue("barrier",
                [impl] {
                  if (impl->size == 1) return;
                  gloo::BarrierOptions opts(impl->context);
                  opts.setTag(impl->next_tag++);
                  opts.setTimeout(impl->options.timeout);
                  gloo::barrier(opts);
                })
      .get();
}

}  // namespace tuner::training
