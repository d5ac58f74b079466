// A model described in JSON, validated with the JSON path of every mistake, and built into a
// Sequential. The format is documented in docs/model_spec.md; for example
//   {"input": [1, 28, 28],
//    "layers": [{"type": "conv2d", "out": 32, "kernel": 3, "padding": 1}, {"type": "relu"},
//               {"type": "max_pool2d", "kernel": 2}, {"type": "flatten"},
//               {"type": "linear", "out": 10}]}
// Shapes use the legend of training/tensor.h; all shapes here are per sample (no B).
#ifndef TUNER_TRAINING_MODEL_SPEC_H_
#define TUNER_TRAINING_MODEL_SPEC_H_

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "training/backend.h"
#include "training/layer.h"
#include "training/layers/embedding.h"
#include "training/sequential.h"
#include "training/tensor.h"

namespace tuner::training {

// A spec that cannot be built. what() is "<path>: <reason>", e.g.
//   "layers[3].kernel: 5 does not fit the input [64, 3, 3]"
//   "layers[2].type: unknown layer \"conv\" (did you mean \"conv2d\"?)"
// For a spec read from a file, the path starts with the file name ("net.json: layers[3]...").
class SpecError : public std::invalid_argument {
 public:
  SpecError(std::string path, std::string reason);
  const std::string& path() const { return path_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string path_, reason_;
};

// One validated layer. Fields a type does not use keep their defaults.
struct LayerSpec {
  std::string type;  // "linear", "conv2d", "max_pool2d", ..., "residual"
  std::string path;  // where it came from, e.g. "layers[4]" or "layers[4].body[1]"
  int64_t out = 0;   // linear: O; conv2d: output channels
  int64_t kernel = 0, stride = 1, padding = 0;  // conv2d and pools (stride defaults to kernel
                                                // for pools)
  bool bias = true;                             // linear, conv2d
  // linear, conv2d: the fused activation (the layer's own "activation" field or a following
  // relu/tanh/sigmoid layer folded in). GELU is never fused: it stays a layer of its own.
  Activation activation = Activation::kNone;
  float p = 0.0f;                         // dropout probability
  float eps = 1e-5f, momentum = 0.1f;     // batch_norm (eps, momentum), layer_norm (eps)
  std::vector<LayerSpec> body, shortcut;  // residual; an empty shortcut is the identity
  std::vector<EmbeddedColumn> embedded;   // embedding: the input features it looks up
  Shape input, output;                    // sample shapes before and after the layer
};

// A validated spec. Immutable once parsed; build_model() may be called any number of times.
struct ModelSpec {
  std::string json;  // canonical compact JSON (keys sorted), e.g. for checkpoints
  Shape input;       // sample input shape, e.g. [1, 28, 28]
  Shape output;      // sample output shape, e.g. [10]
  // After fusion: the layers build_model() creates, in order. A spec with "embeddings" starts
  // with their layer (type "embedding", path "embeddings"), then those of "layers".
  std::vector<LayerSpec> layers;
  int64_t num_parameters = 0;  // trainable scalars
};

// Parses and validates a spec. Throws SpecError naming the JSON path and the reason.
ModelSpec parse_model_spec(std::string_view json_text);
// Reads and parses a spec file; SpecError paths start with the file name (unreadable file too).
ModelSpec load_model_spec(const std::string& path);

// The layers of a spec, ready for a Sequential. Dropout layers draw their masks from streams
// seeded by (seed, their position in the spec), so the same seed gives the same masks.
std::vector<std::unique_ptr<Layer>> build_layers(const ModelSpec& spec, uint64_t seed);
// A Sequential of build_layers(spec, seed) for batches of up to max_batch samples, parameters
// initialized from seed. `backend` must outlive the model. REQUIRES: max_batch >= 1.
std::unique_ptr<Sequential> build_model(const ModelSpec& spec, int64_t max_batch, Backend& backend,
                                        uint64_t seed);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_MODEL_SPEC_H_
