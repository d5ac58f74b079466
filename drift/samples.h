// The samples one side of a drift check holds, whatever file they came from (idx images, a CSV,
// the model server's request log): each sample's raw inputs (the values the model's signature
// takes, e.g. pixels 0..255), and where known its outputs (logits), predicted class and label.
// A value type; thread-compatible.
#ifndef TUNER_DRIFT_SAMPLES_H_
#define TUNER_DRIFT_SAMPLES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "training/tensor.h"

namespace tuner::drift {

// Where the samples came from, for the report.
struct SampleSource {
  std::string kind;  // "idx", "csv" or "request log"
  std::string path;  // the file or directory given
  // Request logs only (0 / empty otherwise):
  int64_t files = 0;                  // log files read
  int64_t requests = 0;               // logged requests (lines) read
  int64_t skipped_lines = 0;          // malformed lines skipped (RequestLogOptions::skip_bad)
  std::string first_time, last_time;  // the first and last request's "time"
  std::vector<std::string> models;    // distinct "model" (and "@version") values, in order seen
};

struct Samples {
  int64_t count = 0;          // N
  int64_t input_width = 0;    // F, the values of one sample's input (flattened)
  std::vector<float> inputs;  // [N, F] row-major, raw units
  // The input's shape when the source tells (idx images: [1, H, W]); empty (rank 0) otherwise.
  training::Shape input_shape;
  // Names of the F inputs (a CSV's header); empty when the source has none.
  std::vector<std::string> input_names;
  int64_t output_width = 0;        // K, 0 when the samples have no outputs
  std::vector<float> outputs;      // [N, K] row-major (logits), or empty
  std::vector<int32_t> predicted;  // [N] the model's class, or empty
  std::vector<int32_t> labels;     // [N] the true class, or empty
  SampleSource source;
  std::vector<std::string> notes;  // what the reader skipped or assumed, for the report
};

}  // namespace tuner::drift

#endif  // TUNER_DRIFT_SAMPLES_H_
