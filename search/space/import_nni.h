// Imports an NNI / Hyperopt-style search space (`search_space.json`):
//
//   {"lr": {"_type": "loguniform", "_value": [1e-05, 0.1]},
//    "optimizer": {"_type": "choice", "_value": [{"_name": "sgd", "momentum": {...}}, ...]}}
//
// Every _type keeps NNI's exact meaning or is refused: randint [lower, upper) becomes the int
// range [lower, upper - 1]; quniform becomes a float with a step only when low and high are
// multiples of q; qloguniform only with q = 1 and whole-number bounds (an int with log scale);
// normal, qnormal, lognormal and qlognormal become normal distributions. A nested choice (options
// that are objects with "_name") becomes a categorical over the "_name" values, and each option's
// parameters become conditional parameters named "<choice>/<_name>/<key>". The mapping table and
// the reasons for what is refused are in docs/search_space.md.
//
// Errors are Error(kInvalidArgument) with "<source>: <JSON path in the NNI file>: <problem>".
// Thread-safe.
#ifndef TUNER_SEARCH_SPACE_IMPORT_NNI_H_
#define TUNER_SEARCH_SPACE_IMPORT_NNI_H_

#include <filesystem>
#include <string_view>

#include "search/space/search_space.h"

namespace tuner {

// Parses the JSON text of an NNI search space; `source` names it in errors.
SearchSpace import_nni_search_space(std::string_view json_text,
                                    std::string_view source = "<string>");

// Reads and imports `file`. Error(kNotFound) naming the file when it does not exist.
SearchSpace load_nni_search_space(const std::filesystem::path& file);

}  // namespace tuner

#endif  // TUNER_SEARCH_SPACE_IMPORT_NNI_H_
