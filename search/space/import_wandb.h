// Imports the `parameters` block of a Weights & Biases sweep configuration (JSON; convert a YAML
// sweep file first, e.g. with `yq -o=json`). Accepts the whole sweep object (with "parameters"
// next to "method", "metric", ...; the other keys are ignored here) or the parameters object.
//
//   {"lr": {"distribution": "log_uniform_values", "min": 1e-05, "max": 0.1},
//    "batch_size": {"values": [32, 64]}, "epochs": {"value": 10},
//    "optimizer": {"parameters": {"momentum": {"min": 0.0, "max": 0.99}}}}
//
// The distribution is inferred as W&B infers it when "distribution" is absent ("values":
// categorical, "value": constant, integer min and max: int_uniform, otherwise uniform). Each
// distribution keeps W&B's exact meaning (log_uniform's min and max are exponents of e; q_uniform
// with an integer q gives integers) or is refused with the reason: weighted "probabilities",
// beta, a quantized log scale other than integers with q = 1, q_normal with an integer q.
// A nested parameter dict becomes dotted names ("optimizer.momentum"). The mapping table is in
// docs/search_space.md.
//
// Errors are Error(kInvalidArgument) with "<source>: <JSON path>: <problem>". Thread-safe.
#ifndef TUNER_SEARCH_SPACE_IMPORT_WANDB_H_
#define TUNER_SEARCH_SPACE_IMPORT_WANDB_H_

#include <filesystem>
#include <string_view>

#include "search/space/search_space.h"

namespace tuner {

// Parses the JSON text of a W&B sweep configuration or of its parameters block.
SearchSpace import_wandb_parameters(std::string_view json_text,
                                    std::string_view source = "<string>");

// Reads and imports `file` (JSON). Error(kNotFound) naming the file when it does not exist.
SearchSpace load_wandb_parameters(const std::filesystem::path& file);

}  // namespace tuner

#endif  // TUNER_SEARCH_SPACE_IMPORT_WANDB_H_
