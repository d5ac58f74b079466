// Starting a model from another model's weights (fine-tuning, transfer learning): the weights of
// a checkpoint matched layer by layer into a freshly built model, the last layer optionally left
// new for another number of outputs, and the learning-rate factor of each layer (0: frozen) as
// parameter groups for training/optim/param_groups.h.
//
// Layers are matched by their order among the layers that have weights (linear, conv2d,
// batch_norm, layer_norm, residual blocks: those with parameters or buffers), so layers without
// weights (activations, pooling, flatten, dropout) may differ between the two models. The k-th
// such layer of the model takes the k-th of the source when both are of the same kind and every
// parameter and buffer has the same name and shape. Shapes use the legend of training/tensor.h.
//
// Thread safety: pure functions (load_weights writes the arena it is given).
#ifndef TUNER_TRAINING_INIT_FROM_H_
#define TUNER_TRAINING_INIT_FROM_H_

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "training/checkpoint.h"
#include "training/model_spec.h"
#include "training/optim/param_groups.h"
#include "training/parameter_arena.h"

namespace tuner::training {

// One parameter or buffer of a layer, where the flat arrays hold it.
struct WeightSlot {
  std::string name;    // within the layer: "weight", "bias", "running_mean", "body.0.conv2d.weight"
  Shape shape;         // e.g. [O, I]
  int64_t offset = 0;  // in ParameterArena::values() (a parameter) or buffer_values() (a buffer)
  bool buffer = false;
};

// A layer of a model spec that has weights.
struct WeightedLayer {
  size_t spec_index = 0;          // its index in ModelSpec::layers
  std::string path;               // its JSON path in the spec: "layers[4]"
  std::string kind;               // "linear", "conv2d", "batch_norm", "layer_norm", "residual"
  std::vector<WeightSlot> slots;  // parameters then buffers, in the arena's order
  // Its parameters' range in ParameterArena::values(): [begin, end), alignment padding included.
  int64_t begin = 0, end = 0;

  // "linear at layers[4] (weight [10, 64], bias [10])"
  std::string describe() const;
};

// The layers of `spec` that have weights, in order, with the arena layout Sequential gives them
// (ParameterArena's alignment).
std::vector<WeightedLayer> weighted_layers(const ModelSpec& spec);

// A source whose weights do not fit the model. what() names the first layer that does not match
// (its position among the layers with weights, its kind and path in both models, and both
// shapes), or why the source cannot be read.
class InitFromError : public std::invalid_argument {
 public:
  InitFromError(const std::string& what, bool only_head_differs)
      : std::invalid_argument(what), only_head_differs_(only_head_differs) {}
  // Every layer matched but the last one with weights (which replace_head would leave new).
  bool only_head_differs() const { return only_head_differs_; }

 private:
  bool only_head_differs_;
};

struct InitFromOptions {
  // The last layer with weights (the head) keeps its fresh initialization, and its shapes may
  // differ from the source's (another number of classes). Default false: it is loaded too.
  bool replace_head = false;
};

struct InitFromResult {
  size_t layers_loaded = 0;    // layers with weights that took the source's
  bool head_replaced = false;  // the last one kept its initialization (replace_head)
};

// Checks that `source`'s weights fit the model of `spec` (as load_weights loads them) without
// loading them. Throws InitFromError; a source whose model spec does not parse or whose arrays
// do not fit its own spec is one too.
InitFromResult check_weights_fit(const Checkpoint& source, const ModelSpec& spec,
                                 const InitFromOptions& options = {});

// Copies `source`'s parameters and buffers (batch-norm statistics) into `arena`, the arena of a
// model built from `spec`, layer by layer; with replace_head the last layer with weights keeps
// what `arena` holds. Throws InitFromError (as check_weights_fit) and changes nothing then.
InitFromResult load_weights(const Checkpoint& source, const ModelSpec& spec, ParameterArena& arena,
                            const InitFromOptions& options = {});

// The parameter groups of per-layer learning-rate factors: layer_factors[i] is the factor of the
// top-level layer i of the spec's JSON "layers" list (the i in "layers[i]"; 1 past the list's
// end; a spec's "embeddings" take the factor of layers[0]). One group per layer with parameters
// whose factor is not 1. REQUIRES: factors >= 0.
std::vector<ParamGroup> layer_param_groups(const ModelSpec& spec,
                                           std::span<const float> layer_factors);

// The index i of a top-level layer path "layers[i]" (also "layers[i].activation"); -1 otherwise.
int64_t top_level_layer_index(const std::string& path);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_INIT_FROM_H_
