// Bytes as hex digits and back: for binary values in JSON messages and file names (the rendezvous
// store of multi-node trials).
#ifndef TUNER_TRIALS_HEX_H_
#define TUNER_TRIALS_HEX_H_

#include <optional>
#include <string>
#include <string_view>

namespace tuner {

// Two lowercase hex digits per byte.
std::string to_hex(std::string_view bytes);

// The bytes of `hex` (two digits per byte, either case); nullopt when its length is odd or it
// holds anything but hex digits.
std::optional<std::string> from_hex(std::string_view hex);

}  // namespace tuner

#endif  // TUNER_TRIALS_HEX_H_
