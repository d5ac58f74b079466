#include "wire/curve_authenticator.h"

#include <zmq.h>

#include <algorithm>
#include <array>
#include <utility>

#include "trials/error.h"
#include "wire/curve_keys.h"

namespace tuner {
namespace {

// Where libzmq sends its authentication requests (RFC 27).
constexpr char kZapEndpoint[] = "inproc://zeromq.zap.01";
constexpr size_t kKeyBytes = 32;

std::string z85_to_binary(const std::string& key) {
  std::string binary(kKeyBytes, '\0');
  zmq_z85_decode(reinterpret_cast<uint8_t*>(binary.data()), key.c_str());
  return binary;
}

std::string binary_to_z85(const std::string& key) {
  if (key.size() != kKeyBytes) return "(" + std::to_string(key.size()) + "-byte credential)";
  std::array<char, 41> text{};
  zmq_z85_encode(text.data(), reinterpret_cast<const uint8_t*>(key.data()), key.size());
  return text.data();
}

}  // namespace

CurveAuthenticator::CurveAuthenticator(ZmqContext& context,
                                       const std::vector<std::string>& authorized_keys,
                                       std::function<void(const std::string&)> log)
    : socket_(context, ZmqSocketType::kReply), log_(std::move(log)) {
  if (authorized_keys.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "CURVE: no executor public keys to accept");
  }
  for (size_t i = 0; i < authorized_keys.size(); ++i) {
    check_curve_key(authorized_keys[i], "executor key " + std::to_string(i + 1));
    authorized_.insert(z85_to_binary(authorized_keys[i]));
  }
  socket_.bind(kZapEndpoint);
}

void CurveAuthenticator::answer_requests() {
  while (auto frames = socket_.receive()) {
    // version, request id, domain, address, routing id, mechanism, credentials...
    // A REP socket must answer every request, a malformed one too.
    std::vector<std::string>& f = *frames;
    f.resize(std::max<size_t>(f.size(), 6));
    const std::string& mechanism = f[5];
    const std::string key = f.size() > 6 ? f[6] : "";
    const bool ok = mechanism == "CURVE" && authorized_.contains(key);
    std::string reason;
    if (ok) {
      ++accepted_;
    } else {
      ++refused_;
      reason = mechanism != "CURVE" ? "mechanism " + mechanism + " is not CURVE"
                                    : "key " + binary_to_z85(key) + " is not authorized";
      if (log_ && refused_logged_.insert(mechanism + key).second) {
        log_("refused a connection from " + f[3] + ": " + reason +
             " (give its .pub file to the coordinator's --executor-keys)");
      }
    }
    const std::vector<std::string> reply = {
        "1.0", f[1], ok ? "200" : "400", ok ? "OK" : reason, ok ? binary_to_z85(key) : "", ""};
    socket_.send(reply);
  }
}

}  // namespace tuner
