// The flags that say who may connect to a coordinator (`tuner sweep`, `resume`, `serve`):
// --key FILE --executor-keys PATH for CURVE, --insecure for plain TCP that other hosts can reach.
#ifndef TUNER_CLI_COORDINATOR_SECURITY_H_
#define TUNER_CLI_COORDINATOR_SECURITY_H_

#include "cli/command.h"
#include "coordinator/coordinator.h"

namespace tuner::cli {

// The flags coordinator_security reads, for the flag tables of the commands that take them.
inline constexpr Flag kCoordinatorKeyFlag = {
    "--key", "FILE", "the coordinator's .key file (CURVE; with --executor-keys)"};
inline constexpr Flag kExecutorKeysFlag = {
    "--executor-keys", "PATH", "the executors' public keys: a file, or a folder of .pub"};
inline constexpr Flag kInsecureFlag = {"--insecure", "",
                                       "plain TCP on an ENDPOINT that other hosts can reach"};

// Throws UsageError for half a key configuration, and Error for unreadable or malformed keys.
CoordinatorSecurity coordinator_security(const Flags& flags);

}  // namespace tuner::cli

#endif  // TUNER_CLI_COORDINATOR_SECURITY_H_
