// StorageFault: an Error caused by the file or the disk under a storage, not by the call.
//
// SQLite's SQLITE_FULL, SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_PERM and SQLITE_IOERR are
// thrown as a StorageFault (its code is the one storage/sqlite/connection.h maps the SQLite code
// to: kFailedPrecondition or kUnavailable), and so are SQLITE_BUSY and SQLITE_LOCKED (another
// connection held the lock past the busy timeout), so that a caller can tell "the disk is full"
// or "another process holds the lock" from a refusal that has the same code ("the trial is
// finished already"): the first is fixed outside the program and the call may succeed later; the
// second never will.
//
// Thread safety: an immutable value.
#ifndef TUNER_STORAGE_STORAGE_FAULT_H_
#define TUNER_STORAGE_STORAGE_FAULT_H_

#include "trials/error.h"

namespace tuner {

class StorageFault : public Error {
 public:
  using Error::Error;
};

// True when `e` is a StorageFault.
inline bool is_storage_fault(const std::exception& e) {
  return dynamic_cast<const StorageFault*>(&e) != nullptr;
}

}  // namespace tuner

#endif  // TUNER_STORAGE_STORAGE_FAULT_H_
