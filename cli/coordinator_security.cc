#include "cli/coordinator_security.h"

#include "wire/curve_keys.h"

namespace tuner::cli {

CoordinatorSecurity coordinator_security(const Flags& flags) {
  CoordinatorSecurity security;
  security.allow_insecure_tcp = flags.has("--insecure");
  if (flags.has("--key") != flags.has("--executor-keys")) {
    throw UsageError(
        "--key and --executor-keys go together: the coordinator's key pair (a .key file from "
        "'tuner keygen') and the public keys of the executors it accepts");
  }
  if (flags.has("--key")) {
    security.curve_keys = read_curve_secret_key_file(flags.get("--key"));
    security.executor_keys = read_curve_authorized_keys(flags.get("--executor-keys"));
  }
  return security;
}

}  // namespace tuner::cli
