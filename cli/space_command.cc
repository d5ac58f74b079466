// tuner space check|import: validate a search-space file, or convert NNI / W&B spaces.
#include <iostream>

#include "cli/command.h"
#include "search/space/import_nni.h"
#include "search/space/import_wandb.h"
#include "search/space/search_space_json.h"

namespace tuner::cli {

int run_space(const std::vector<std::string>& args) {
  if (args.empty()) throw UsageError("tuner space: expected 'check' or 'import'");
  if (args[0] == "check") {
    if (args.size() != 2) throw UsageError("usage: tuner space check FILE");
    std::cout << to_json(load_search_space(args[1]));
    return kExitOk;
  }
  if (args[0] == "import") {
    if (args.size() != 4 || args[1] != "--from") {
      throw UsageError("usage: tuner space import --from nni|wandb FILE");
    }
    const std::string& format = args[2];
    const std::string& path = args[3];
    if (format == "nni") {
      std::cout << to_json(load_nni_search_space(path));
    } else if (format == "wandb") {
      std::cout << to_json(load_wandb_parameters(path));
    } else {
      throw UsageError("tuner space import: unknown format '" + format + "' (nni or wandb)");
    }
    return kExitOk;
  }
  throw UsageError("tuner space: unknown command '" + args[0] + "' (check or import)");
}

extern const Command kSpaceCommand = {
    .name = "space",
    .synopsis =
        "space check FILE\n"
        "space import --from FORMAT FILE",
    .description =
        "check: validate a search-space JSON file and print it\n"
        "back; import: convert an NNI/Hyperopt search_space.json\n"
        "(FORMAT nni) or the parameters of a W&B sweep (FORMAT\n"
        "wandb) to tuner's JSON form",
    .flags = {},  // `space` reads its arguments by position
    .run = &run_space,
};

}  // namespace tuner::cli
