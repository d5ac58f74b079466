// The fast path of the scoring protocol's tensor payloads: a JSON document of the form
//   {"inputs": [[...], ...]}   or   {"instances": ...}   (optionally with "params": {})
// whose tensor is nested arrays of numbers, rectangular, read straight into floats without a
// JSON tree. A request of one 28x28 image is 784 numbers; building a tree of them cost more than
// the model's forward pass. Anything else (other fields, named tensors, strings, ragged arrays,
// malformed JSON) is not read here: the caller falls back to the full reader, which names what
// is wrong.
//
// Thread safety: a pure function.
#ifndef TUNER_SERVING_NUMERIC_JSON_H_
#define TUNER_SERVING_NUMERIC_JSON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tuner::serving {

struct NumericTensor {
  std::string field;          // "inputs" or "instances"
  std::vector<int64_t> dims;  // the nesting's extents, outermost first: [N, ...]
  std::vector<float> values;  // row-major, each number as float(double(number))
};

// The tensor of a document of the form above, or nullopt. Nesting deeper than max_depth is
// nullopt too.
std::optional<NumericTensor> read_numeric_tensor(std::string_view body, int max_depth = 64);

}  // namespace tuner::serving

#endif  // TUNER_SERVING_NUMERIC_JSON_H_
