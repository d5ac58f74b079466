// The smallest program of the C++ tuning API: ask/tell on a SQLite study, and optimize() on the
// same study. tests/library checks what it links: the tuning library (SQLite, threads) and
// nothing of the service (ZeroMQ, the engine's BLAS, ONNX, protobuf, Gloo, CUDA).
//
//   ask_tell STUDY.db
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "tuner/tuner.h"

namespace {

double quadratic(tuner::Trial& trial) {
  const double x = trial.suggest_float("x", -10, 10);
  const int64_t n = trial.suggest_int("n", 1, 8, {.log = true});
  return (x - 2) * (x - 2) + std::abs(static_cast<double>(n) - 3);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ask_tell STUDY.db\n");
    return 2;
  }
  try {
    tuner::StudyOptions options;
    options.name = "ask-tell";
    options.storage = std::make_shared<tuner::SqliteStorage>(argv[1]);
    options.sampler = std::make_shared<tuner::TpeSampler>();
    options.seed = 7;
    tuner::Study study = tuner::Study::create(options);
    for (int i = 0; i < 8; ++i) {
      tuner::Trial trial = study.ask();
      study.tell(trial, quadratic(trial));
    }
    study.optimize(quadratic, {.n_trials = 8});
    const tuner::FrozenTrial best = study.best_trial();
    std::printf("%zu trials; best: trial %d, value %.4f\n", study.trials().size(), best.number,
                best.value());
  } catch (const tuner::Error& e) {
    std::fprintf(stderr, "ask_tell: %s\n", e.what());
    return 1;
  }
  return 0;
}
