// The `tuner` command. This issue's commands work on search spaces and the machine; the sweep,
// resume, status and service commands arrive with the issues that build them.
#include <iostream>
#include <string>
#include <vector>

#include "search/import_nni.h"
#include "search/import_wandb.h"
#include "search/search_space_json.h"
#include "training/device/gpu_inventory.h"
#include "trials/error.h"

namespace {

constexpr char kUsage[] = R"(usage: tuner COMMAND [ARGS]

Commands:
  space check FILE                 validate a search-space JSON file and print it back
  space import --from FORMAT FILE  convert an NNI/Hyperopt search_space.json (FORMAT nni) or the
                                   parameters of a W&B sweep (FORMAT wandb) to tuner's JSON form
  gpus                             list the GPUs this build can use
  version                          print the version
  help                             print this help

Exit codes: 0 success, 1 invalid input (the message names the file and the JSON path),
            2 wrong usage.
)";

constexpr int kExitInvalidInput = 1;
constexpr int kExitUsage = 2;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int space_command(const std::vector<std::string>& args) {
  if (args.empty()) throw UsageError("tuner space: expected 'check' or 'import'");
  if (args[0] == "check") {
    if (args.size() != 2) throw UsageError("usage: tuner space check FILE");
    std::cout << tuner::to_json(tuner::load_search_space(args[1]));
    return 0;
  }
  if (args[0] == "import") {
    if (args.size() != 4 || args[1] != "--from") {
      throw UsageError("usage: tuner space import --from nni|wandb FILE");
    }
    const std::string& format = args[2];
    const std::string& path = args[3];
    if (format == "nni") {
      std::cout << tuner::to_json(tuner::load_nni_search_space(path));
    } else if (format == "wandb") {
      std::cout << tuner::to_json(tuner::load_wandb_parameters(path));
    } else {
      throw UsageError("tuner space import: unknown format '" + format + "' (nni or wandb)");
    }
    return 0;
  }
  throw UsageError("tuner space: unknown command '" + args[0] + "' (check or import)");
}

int gpus_command() {
  std::string why;
  auto gpus = tuner::training::list_gpus(&why);
  if (gpus.empty()) {
    std::cout << "no GPU: " << why << "\n";
    return 0;
  }
  for (const auto& g : gpus) {
    std::cout << g.index << "  " << g.name << "  " << (g.memory_bytes >> 20) << " MiB  sm_"
              << g.compute_capability << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
      std::cout << kUsage;
      return args.empty() ? kExitUsage : 0;
    }
    std::string command = args[0];
    args.erase(args.begin());
    if (command == "version" || command == "--version") {
      std::cout << "tuner " << TUNER_VERSION << "\n";
      return 0;
    }
    if (command == "space") return space_command(args);
    if (command == "gpus") return gpus_command();
    throw UsageError("tuner: unknown command '" + command + "'; see 'tuner help'");
  } catch (const UsageError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  } catch (const tuner::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitInvalidInput;
  }
}
