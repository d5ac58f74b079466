// A complete example of the C++ API: tune a softmax classifier on Fashion-MNIST.
//
// The objective trains a linear classifier with mini-batch SGD (with momentum) or Adam on a slice
// of Fashion-MNIST and returns the validation error. The optimizer is chosen per trial and its own
// hyperparameters are conditional on it (define-by-run). Each epoch reports the validation error,
// and the median stopping rule ends trials that fall behind.
//
//   fashion_mnist_softmax [--data DIR] [--train N] [--val N] [--trials N] [--epochs N]
//                         [--threads N] [--seed S]
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include "search/samplers/tpe/tpe_sampler.h"
#include "search/schedulers/median_stopping.h"
#include "tuner/tuner.h"

namespace {

constexpr int kPixels = 28 * 28;
constexpr int kClasses = 10;

struct Dataset {
  std::vector<float> images;    // [n, kPixels], scaled to [0, 1]
  std::vector<uint8_t> labels;  // [n]
  int size() const { return static_cast<int>(labels.size()); }
};

std::vector<uint8_t> read_gzip(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) {
    throw std::runtime_error(path + ": cannot open (install Debian's dataset-fashion-mnist)");
  }
  std::vector<uint8_t> out;
  uint8_t buffer[1 << 16];
  int n;
  while ((n = gzread(file, buffer, sizeof(buffer))) > 0) out.insert(out.end(), buffer, buffer + n);
  gzclose(file);
  if (n < 0) throw std::runtime_error(path + ": not a readable gzip file");
  return out;
}

uint32_t big_endian(const std::vector<uint8_t>& bytes, size_t offset) {
  return (uint32_t{bytes[offset]} << 24) | (uint32_t{bytes[offset + 1]} << 16) |
         (uint32_t{bytes[offset + 2]} << 8) | bytes[offset + 3];
}

// Reads `limit` examples of an IDX image/label file pair.
Dataset load_idx(const std::string& images_path, const std::string& labels_path, int limit) {
  auto images = read_gzip(images_path);
  auto labels = read_gzip(labels_path);
  if (images.size() < 16 || big_endian(images, 0) != 0x803 || labels.size() < 8 ||
      big_endian(labels, 0) != 0x801) {
    throw std::runtime_error(images_path + ": not an IDX image/label pair");
  }
  int n = std::min<int>(
      {static_cast<int>(big_endian(images, 4)), static_cast<int>(big_endian(labels, 4)), limit});
  Dataset d;
  d.images.resize(static_cast<size_t>(n) * kPixels);
  for (size_t i = 0; i < d.images.size(); ++i) d.images[i] = images[16 + i] / 255.0f;
  d.labels.assign(labels.begin() + 8, labels.begin() + 8 + n);
  return d;
}

struct Hyperparameters {
  std::string optimizer;
  double lr = 0.1;
  double momentum = 0.0;  // SGD only
  double beta2 = 0.999;   // Adam only
  double weight_decay = 0.0;
  int batch_size = 64;
};

// A linear classifier: logits = x W + b, trained with softmax cross-entropy.
class SoftmaxClassifier {
 public:
  explicit SoftmaxClassifier(const Hyperparameters& hp)
      : hp_(hp),
        weights_((kPixels + 1) * kClasses, 0.0f),
        m_(weights_.size(), 0.0f),
        v_(weights_.size(), 0.0f),
        grad_(weights_.size(), 0.0f) {}

  void train_epoch(const Dataset& data, std::vector<int>& order, tuner::Rng& rng) {
    for (size_t i = order.size(); i > 1; --i) {
      std::swap(order[i - 1],
                order[static_cast<size_t>(rng.integer(0, static_cast<int64_t>(i) - 1))]);
    }
    for (size_t start = 0; start < order.size(); start += hp_.batch_size) {
      size_t end = std::min(order.size(), start + static_cast<size_t>(hp_.batch_size));
      std::fill(grad_.begin(), grad_.end(), 0.0f);
      float probs[kClasses];
      for (size_t k = start; k < end; ++k) {
        const float* x = &data.images[static_cast<size_t>(order[k]) * kPixels];
        forward(x, probs);
        probs[data.labels[order[k]]] -= 1.0f;  // d(loss)/d(logits)
        for (int p = 0; p < kPixels; ++p) {
          if (x[p] == 0.0f) continue;
          float* g = &grad_[static_cast<size_t>(p) * kClasses];
          for (int c = 0; c < kClasses; ++c) g[c] += x[p] * probs[c];
        }
        float* gb = &grad_[static_cast<size_t>(kPixels) * kClasses];
        for (int c = 0; c < kClasses; ++c) gb[c] += probs[c];
      }
      step(static_cast<float>(end - start));
    }
  }

  double error_rate(const Dataset& data) const {
    int wrong = 0;
    float probs[kClasses];
    for (int i = 0; i < data.size(); ++i) {
      forward(&data.images[static_cast<size_t>(i) * kPixels], probs);
      int predicted = static_cast<int>(std::max_element(probs, probs + kClasses) - probs);
      wrong += predicted != data.labels[i];
    }
    return static_cast<double>(wrong) / data.size();
  }

 private:
  void forward(const float* x, float* probs) const {
    const float* b = &weights_[static_cast<size_t>(kPixels) * kClasses];
    std::copy(b, b + kClasses, probs);
    for (int p = 0; p < kPixels; ++p) {
      if (x[p] == 0.0f) continue;
      const float* w = &weights_[static_cast<size_t>(p) * kClasses];
      for (int c = 0; c < kClasses; ++c) probs[c] += x[p] * w[c];
    }
    float top = *std::max_element(probs, probs + kClasses), sum = 0.0f;
    for (int c = 0; c < kClasses; ++c) sum += probs[c] = std::exp(probs[c] - top);
    for (int c = 0; c < kClasses; ++c) probs[c] /= sum;
  }

  void step(float batch) {
    ++t_;
    auto lr = static_cast<float>(hp_.lr), wd = static_cast<float>(hp_.weight_decay);
    for (size_t i = 0; i < weights_.size(); ++i) {
      float g = grad_[i] / batch + wd * weights_[i];
      if (hp_.optimizer == "sgd") {
        m_[i] = static_cast<float>(hp_.momentum) * m_[i] + g;
        weights_[i] -= lr * m_[i];
      } else {  // adam
        m_[i] = 0.9f * m_[i] + 0.1f * g;
        v_[i] = static_cast<float>(hp_.beta2) * v_[i] + static_cast<float>(1 - hp_.beta2) * g * g;
        double m_hat = m_[i] / (1 - std::pow(0.9, t_));
        double v_hat = v_[i] / (1 - std::pow(hp_.beta2, t_));
        weights_[i] -= static_cast<float>(hp_.lr * m_hat / (std::sqrt(v_hat) + 1e-8));
      }
    }
  }

  Hyperparameters hp_;
  std::vector<float> weights_, m_, v_, grad_;  // [kPixels + 1, kClasses], the last row is the bias
  int t_ = 0;
};

struct Flags {
  std::string data = "/usr/share/datasets/fashion-mnist";
  int train = 50000, val = 10000, trials = 30, epochs = 5, threads = 2;
  uint64_t seed = 42;
};

Flags parse_flags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc) throw std::runtime_error("flag " + arg + " needs a value");
    std::string v = argv[++i];
    if (arg == "--data")
      f.data = v;
    else if (arg == "--train")
      f.train = std::stoi(v);
    else if (arg == "--val")
      f.val = std::stoi(v);
    else if (arg == "--trials")
      f.trials = std::stoi(v);
    else if (arg == "--epochs")
      f.epochs = std::stoi(v);
    else if (arg == "--threads")
      f.threads = std::stoi(v);
    else if (arg == "--seed")
      f.seed = std::stoull(v);
    else
      throw std::runtime_error("unknown flag " + arg);
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) try {
  Flags flags = parse_flags(argc, argv);
  // Validation images are held out of the training file; the test file is left untouched.
  Dataset all = load_idx(flags.data + "/train-images-idx3-ubyte.gz",
                         flags.data + "/train-labels-idx1-ubyte.gz", flags.train + flags.val);
  if (all.size() < flags.train + flags.val) {
    throw std::runtime_error("--train plus --val exceeds the " + std::to_string(all.size()) +
                             " training images");
  }
  auto slice = [&](int from, int n) {
    Dataset d;
    d.images.assign(all.images.begin() + static_cast<ptrdiff_t>(from) * kPixels,
                    all.images.begin() + static_cast<ptrdiff_t>(from + n) * kPixels);
    d.labels.assign(all.labels.begin() + from, all.labels.begin() + from + n);
    return d;
  };
  Dataset train = slice(0, flags.train), val = slice(flags.train, flags.val);
  std::cout << "Fashion-MNIST: " << train.size() << " training and " << val.size()
            << " validation images\n";

  tuner::MedianStoppingOptions median;
  median.n_startup_trials = 5;
  median.n_warmup_steps = 1;
  tuner::StudyOptions options;
  options.name = "fashion-mnist-softmax";
  options.sampler = std::make_shared<tuner::TpeSampler>();
  options.scheduler = std::make_shared<tuner::MedianStopping>(median);
  options.seed = flags.seed;
  tuner::Study study = tuner::Study::create(options);

  auto objective = [&](tuner::Trial& trial) {
    Hyperparameters hp;
    hp.optimizer = trial.suggest_categorical<std::string>("optimizer", {"sgd", "adam"});
    if (hp.optimizer == "sgd") {
      hp.lr = trial.suggest_float("sgd_lr", 1e-3, 1.0, {.log = true});
      hp.momentum = trial.suggest_float("momentum", 0.0, 0.95);
    } else {
      hp.lr = trial.suggest_float("adam_lr", 1e-4, 1e-1, {.log = true});
      hp.beta2 = trial.suggest_categorical<double>("beta2", {0.99, 0.999});
    }
    hp.weight_decay = trial.suggest_float("weight_decay", 1e-6, 1e-2, {.log = true});
    hp.batch_size = static_cast<int>(trial.suggest_int("batch_size", 16, 256, {.log = true}));

    SoftmaxClassifier model(hp);
    std::vector<int> order(static_cast<size_t>(train.size()));
    std::iota(order.begin(), order.end(), 0);
    tuner::Rng rng = tuner::Rng::for_trial(flags.seed, trial.number());
    double error = 1.0;
    for (int epoch = 1; epoch <= flags.epochs; ++epoch) {
      model.train_epoch(train, order, rng);
      error = model.error_rate(val);
      trial.report(epoch, error);
      if (trial.should_stop()) break;  // the trial is recorded as PRUNED
    }
    return error;
  };

  tuner::OptimizeOptions run;
  run.n_trials = flags.trials;
  run.n_threads = flags.threads;
  run.on_trial_finished = [](const tuner::FrozenTrial& t) {
    std::printf("trial %3d %-8s", t.number, std::string(tuner::to_string(t.state)).c_str());
    if (!t.values.empty()) std::printf(" error %.4f", t.values[0]);
    std::printf(" after %zu epoch(s)\n", t.intermediate_values.size());
  };
  study.optimize(objective, run);

  tuner::FrozenTrial best = study.best_trial();
  int pruned = 0;
  for (const auto& t : study.trials()) pruned += t.state == tuner::TrialState::kPruned;
  std::printf("\n%zu trials, %d pruned. Best: trial %d, validation error %.4f (accuracy %.2f%%)\n",
              study.trials().size(), pruned, best.number, best.value(), 100 * (1 - best.value()));
  for (const auto& [name, value] : best.params) {
    std::printf("  %-13s %s\n", name.c_str(), tuner::to_string(value).c_str());
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
