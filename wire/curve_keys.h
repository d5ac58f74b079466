// CURVE keys for the coordinator <-> executor link on tcp:// (ZeroMQ's CurveZMQ: every
// connection is encrypted, and the coordinator accepts only the executor keys it was given).
//
// A key is 32 bytes written as 40 characters of Z85 (ZeroMQ's text encoding). `tuner keygen
// --out NAME` writes a pair as two files:
//   NAME.key  (mode 0600, keep it secret)    NAME.pub  (give it to the other side)
//     public-key = "<40 chars>"                public-key = "<40 chars>"
//     secret-key = "<40 chars>"
// Lines starting with '#' are comments. A public-key file may also be a bare 40-character key,
// and a file of authorized executor keys holds one key per line in either form.
//
// Errors: every reader throws Error(kInvalidArgument) naming the file, the line and the problem
// (not Z85, wrong length, a secret key that does not match its public key), and Error(kNotFound)
// for a file that cannot be read.
#ifndef TUNER_WIRE_CURVE_KEYS_H_
#define TUNER_WIRE_CURVE_KEYS_H_

#include <string>
#include <vector>

namespace tuner {

struct CurveKeyPair {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters
};

// True when this ZeroMQ was built with CURVE (libsodium).
bool curve_available();

// A fresh key pair. Throws Error(kUnavailable) when ZeroMQ has no CURVE.
CurveKeyPair generate_curve_key_pair();

// Throws Error(kInvalidArgument) "<what>: ..." unless `key` is 40 characters of valid Z85.
void check_curve_key(const std::string& key, const std::string& what);

// Writes NAME.key (mode 0600) and NAME.pub. Throws Error(kAlreadyExists) when either file exists
// and !overwrite, Error(kUnavailable) when a file cannot be written.
void write_curve_key_files(const std::string& name, const CurveKeyPair& keys, bool overwrite);

// A NAME.key file: both keys, checked to belong together.
CurveKeyPair read_curve_secret_key_file(const std::string& path);
// A NAME.pub file (or a NAME.key file: its public key), or a file holding one bare key.
std::string read_curve_public_key_file(const std::string& path);
// The executor keys a coordinator accepts: every key in a file (one per line), or in every
// `*.pub` file of a directory. Throws Error(kInvalidArgument) when there is none.
std::vector<std::string> read_curve_authorized_keys(const std::string& path);

}  // namespace tuner

#endif  // TUNER_WIRE_CURVE_KEYS_H_
