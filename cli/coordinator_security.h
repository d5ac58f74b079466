// The flags that say who may connect to a coordinator (`tuner sweep`, `resume`, `serve`):
// --key FILE --executor-keys PATH for CURVE, --insecure for plain TCP that other hosts can reach.
#ifndef TUNER_CLI_COORDINATOR_SECURITY_H_
#define TUNER_CLI_COORDINATOR_SECURITY_H_

#include "cli/command.h"
#include "coordinator/coordinator.h"

namespace tuner::cli {

// Throws UsageError for half a key configuration, and Error for unreadable or malformed keys.
CoordinatorSecurity coordinator_security(const Flags& flags);

}  // namespace tuner::cli

#endif  // TUNER_CLI_COORDINATOR_SECURITY_H_
