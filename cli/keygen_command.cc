// tuner keygen: a CURVE key pair for a coordinator or an executor (wire/curve_keys.h).
#include <iostream>

#include "cli/command.h"
#include "wire/curve_keys.h"

namespace tuner::cli {

namespace {

constexpr Flag kFlags[] = {
    {"--out", "NAME", "the files' name: NAME.key and NAME.pub", kRequired},
    {"--force", "", "overwrite existing files"},
};

}  // namespace

int run_keygen(const std::vector<std::string>& args) {
  Flags flags(args, kFlags, "keygen");
  const std::string name = flags.require("--out");
  const CurveKeyPair keys = generate_curve_key_pair();
  write_curve_key_files(name, keys, flags.has("--force"));
  std::cout << "wrote " << name << ".key (secret, mode 0600) and " << name << ".pub (public key "
            << keys.public_key << ")\n";
  return kExitOk;
}

extern const Command kKeygenCommand = {
    .name = "keygen",
    .synopsis = "keygen --out NAME [--force]",
    .description =
        "write a CURVE key pair: NAME.key (secret, mode 0600) and\n"
        "NAME.pub (give it to the other side; docs/protocol.md)",
    .flags = kFlags,
    .run = &run_keygen,
};

}  // namespace tuner::cli
