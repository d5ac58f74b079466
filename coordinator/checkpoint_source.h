// Checkpoints that travel (docs/protocol.md, "Checkpoints that travel"): where a lease's
// checkpoints are on the coordinator's host, and the CHECKPOINT_DATA answering an executor's
// CHECKPOINT_GET for one of them. The files are there when the trials that wrote them ran on the
// coordinator's host, or on an executor that sent its trials' files when they ended, or sent a
// preempted trial's checkpoint into its lineage's folder as it was stopped (FileReceiver).
//
// Thread safety: free functions without state.
#ifndef TUNER_COORDINATOR_CHECKPOINT_SOURCE_H_
#define TUNER_COORDINATOR_CHECKPOINT_SOURCE_H_

#include <optional>
#include <string>

#include "coordinator/lease_table.h"
#include "wire/protocol.h"

namespace tuner {

// The checkpoint of `lease` that `of` names, as its TRIAL names it: kOwn the lineage's first
// trial's (TRIAL's checkpoint_path), kStart its PBT parent's (start_checkpoint_path). Nullopt
// when the lease has none (a job without checkpoints, not a PBT segment).
std::optional<std::string> lease_checkpoint_path(const Lease& lease, CheckpointOf of);

// The answer to `get` from get.file in the folder of `checkpoint`: its bytes from get.offset, at
// most kMaxFileChunkBytes (none for a get.stat), with the lease that sent the coordinator's copy
// (written_by_lease, from its sidecar; 0 when not known). found = false, with the reason naming the
// file, when it is not a regular file this process can read, or get.offset is past its end.
CheckpointDataMessage read_checkpoint_chunk(const CheckpointGetMessage& get,
                                            const std::string& checkpoint);

}  // namespace tuner

#endif  // TUNER_COORDINATOR_CHECKPOINT_SOURCE_H_
