#include "wire/curve_keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>

#include "trials/error.h"
#include "util/strings.h"

namespace tuner {
namespace {

constexpr size_t kZ85KeyLength = 40;

struct KeyLine {
  std::string name;  // "public-key", "secret-key", or empty for a bare key
  std::string key;
};

// `name = "KEY"`, or a bare KEY; nullopt for blank and comment lines.
std::optional<KeyLine> parse_key_line(const std::string& raw, const std::string& where) {
  constexpr std::string_view kBlanks = " \t\r";
  const std::string line(trim(raw, kBlanks));
  if (line.empty() || line[0] == '#') return std::nullopt;
  // A bare key has no blanks ('=' is a Z85 character, so it cannot mark a name).
  if (line.find_first_of(" \t") == std::string::npos && !line.starts_with("public-key=") &&
      !line.starts_with("secret-key=")) {
    return KeyLine{"", line};
  }
  const auto eq = line.find('=');
  const std::string_view text = line;
  KeyLine parsed{std::string(trim(text.substr(0, eq), kBlanks)),
                 eq == std::string::npos ? "" : std::string(trim(text.substr(eq + 1), kBlanks))};
  if (eq == std::string::npos || (parsed.name != "public-key" && parsed.name != "secret-key")) {
    throw Error(ErrorCode::kInvalidArgument,
                where +
                    ": expected public-key = \"...\", secret-key = \"...\" or a bare key, not '" +
                    line.substr(0, 40) + "'");
  }
  if (parsed.key.size() >= 2 && parsed.key.front() == '"' && parsed.key.back() == '"') {
    parsed.key = parsed.key.substr(1, parsed.key.size() - 2);
  }
  return parsed;
}

std::vector<KeyLine> read_key_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::kNotFound, "cannot read the key file '" + path + "'");
  std::vector<KeyLine> lines;
  int number = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++number;
    const std::string where = path + ":" + std::to_string(number);
    auto parsed = parse_key_line(raw, where);
    if (!parsed) continue;
    check_curve_key(parsed->key, where);
    lines.push_back(std::move(*parsed));
  }
  return lines;
}

void write_file(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) throw Error(ErrorCode::kUnavailable, "cannot write '" + path + "'");
  // O_CREAT's mode applies only to a new file: an overwritten secret gets 0600 too.
  const bool ok = ::fchmod(fd, mode) == 0 &&
                  ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (::close(fd) != 0 || !ok) throw Error(ErrorCode::kUnavailable, "cannot write '" + path + "'");
}

}  // namespace

bool curve_available() { return zmq_has("curve") != 0; }

CurveKeyPair generate_curve_key_pair() {
  std::array<char, kZ85KeyLength + 1> public_key{}, secret_key{};
  if (!curve_available() || zmq_curve_keypair(public_key.data(), secret_key.data()) != 0) {
    throw Error(ErrorCode::kUnavailable,
                "this ZeroMQ cannot make CURVE keys (it was built without libsodium)");
  }
  return {public_key.data(), secret_key.data()};
}

void check_curve_key(const std::string& key, const std::string& what) {
  if (key.size() != kZ85KeyLength) {
    throw Error(
        ErrorCode::kInvalidArgument,
        what + ": a CURVE key is 40 characters of Z85, this one has " + std::to_string(key.size()));
  }
  std::array<uint8_t, 32> binary{};
  if (zmq_z85_decode(binary.data(), key.c_str()) == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, what + ": not a Z85-encoded CURVE key");
  }
}

void write_curve_key_files(const std::string& name, const CurveKeyPair& keys, bool overwrite) {
  const std::string secret_path = name + ".key", public_path = name + ".pub";
  for (const std::string& path : {secret_path, public_path}) {
    if (!overwrite && std::filesystem::exists(path)) {
      throw Error(ErrorCode::kAlreadyExists, "'" + path + "' exists (give --force to replace it)");
    }
  }
  const std::string public_line = "public-key = \"" + keys.public_key + "\"\n";
  write_file(secret_path,
             "# tuner CURVE key pair: keep this file secret; give " + public_path +
                 " to the other side\n" + public_line + "secret-key = \"" + keys.secret_key +
                 "\"\n",
             0600);
  write_file(public_path, "# tuner CURVE public key\n" + public_line, 0644);
}

CurveKeyPair read_curve_secret_key_file(const std::string& path) {
  CurveKeyPair keys;
  for (const KeyLine& line : read_key_lines(path)) {
    if (line.name == "public-key") keys.public_key = line.key;
    if (line.name == "secret-key") keys.secret_key = line.key;
  }
  if (keys.secret_key.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                path + ": no secret-key line (is this a .pub file? give the .key file)");
  }
  std::array<char, kZ85KeyLength + 1> derived{};
  if (zmq_curve_public(derived.data(), keys.secret_key.c_str()) != 0) {
    throw Error(ErrorCode::kUnavailable,
                "this ZeroMQ cannot use CURVE keys (it was built without libsodium)");
  }
  if (keys.public_key.empty()) keys.public_key = derived.data();
  if (keys.public_key != derived.data()) {
    throw Error(ErrorCode::kInvalidArgument,
                path + ": the public-key does not belong to the secret-key");
  }
  return keys;
}

std::string read_curve_public_key_file(const std::string& path) {
  for (const KeyLine& line : read_key_lines(path)) {
    if (line.name != "secret-key") return line.key;
  }
  throw Error(ErrorCode::kInvalidArgument, path + ": no public key in this file");
}

std::vector<std::string> read_curve_authorized_keys(const std::string& path) {
  std::vector<std::string> files;
  if (std::filesystem::is_directory(path)) {
    for (const auto& entry : std::filesystem::directory_iterator(path)) {
      if (entry.path().extension() == ".pub") files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path);
  }
  std::vector<std::string> keys;
  for (const std::string& file : files) {
    for (const KeyLine& line : read_key_lines(file)) {
      if (line.name == "secret-key") {
        throw Error(ErrorCode::kInvalidArgument,
                    file + ": holds a secret key; authorized keys are public keys (.pub files)");
      }
      keys.push_back(line.key);
    }
  }
  if (keys.empty()) {
    throw Error(
        ErrorCode::kInvalidArgument,
        "'" + path + "' holds no executor public keys (a file of keys or a folder of .pub files)");
  }
  return keys;
}

}  // namespace tuner
