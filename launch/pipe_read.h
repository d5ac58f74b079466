// Reading what a child process's non-blocking pipe holds, for the launchers' commands and
// channels.
//
// Thread safety: as the UniqueFd it reads.
#ifndef TUNER_LAUNCH_PIPE_READ_H_
#define TUNER_LAUNCH_PIPE_READ_H_

#include <string>

#include "executor/unique_fd.h"

namespace tuner {

// Appends what the non-blocking `fd` holds now to `to`, and resets `fd` at end of file or on a
// read error.
void read_available(UniqueFd& fd, std::string& to);

}  // namespace tuner

#endif  // TUNER_LAUNCH_PIPE_READ_H_
