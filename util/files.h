// Reading a whole file, with errors that name it.
#ifndef TUNER_UTIL_FILES_H_
#define TUNER_UTIL_FILES_H_

#include <filesystem>
#include <string>

namespace tuner {

// The whole file, as bytes. Throws Error(kNotFound) naming it when it does not exist, and
// Error(kUnavailable) naming it and the system's reason when it cannot be read.
std::string read_file(const std::filesystem::path& path);

}  // namespace tuner

#endif  // TUNER_UTIL_FILES_H_
