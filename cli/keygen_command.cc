// tuner keygen: a CURVE key pair for a coordinator or an executor (wire/curve_keys.h).
#include <iostream>

#include "cli/command.h"
#include "wire/curve_keys.h"

namespace tuner::cli {

int run_keygen(const std::vector<std::string>& args) {
  Flags flags(args, {"--out"}, {"--force"}, "keygen");
  const std::string name = flags.require("--out", "the files' name: NAME.key and NAME.pub");
  const CurveKeyPair keys = generate_curve_key_pair();
  write_curve_key_files(name, keys, flags.has("--force"));
  std::cout << "wrote " << name << ".key (secret, mode 0600) and " << name
            << ".pub (public key " << keys.public_key << ")\n";
  return kExitOk;
}

}  // namespace tuner::cli
