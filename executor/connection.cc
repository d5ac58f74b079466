#include "executor/connection.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <utility>
#include <variant>

namespace tuner {

namespace {

using std::chrono::milliseconds;

// Time a closing socket keeps trying to deliver what is queued (BYE, a last RESULT).
constexpr milliseconds kLinger{200};

}  // namespace

std::string default_executor_id() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "host");
  return std::string(host) + "-" + std::to_string(::getpid());
}

std::string host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "";
  return host;
}

CoordinatorConnection::CoordinatorConnection(const ExecutorOptions& options, Clock& clock, Log log)
    : options_(options),
      clock_(clock),
      log_(std::move(log)),
      heartbeat_interval_(options.heartbeat_interval),
      last_word_(clock.steady_now()) {}

CoordinatorConnection::~CoordinatorConnection() { close(); }

void CoordinatorConnection::open() {
  if (!context_) context_ = std::make_unique<ZmqContext>();
  ++generation_;
  told_queue_full_ = false;
  told_say_hello_ = false;
  ZmqSocketOptions socket_options;
  socket_options.routing_id = options_.executor_id.substr(0, 200) + "#" +
                              std::to_string(::getpid()) + "." + std::to_string(generation_);
  socket_options.linger = kLinger;
  socket_options.max_frame_bytes = static_cast<int64_t>(kMaxMessageBytes) + 1024;
  if (options_.curve_keys) {
    socket_options.curve_public_key = options_.curve_keys->public_key;
    socket_options.curve_secret_key = options_.curve_keys->secret_key;
    socket_options.curve_server_key = options_.coordinator_key;
  }
  dealer_.reset();
  dealer_ = std::make_unique<DealerEndpoint>(*context_, options_.coordinator, socket_options);
  const Clock::SteadyTime now = clock_.steady_now();
  last_heard_ = now;
  next_heartbeat_ = now + heartbeat_interval_;
  next_resend_ = now + options_.coordinator_timeout;
}

void CoordinatorConnection::close() {
  dealer_.reset();  // lingers up to kLinger
  context_.reset();
}

bool CoordinatorConnection::send(const Message& message) {
  if (!dealer_) return false;
  try {
    if (dealer_->send(message)) return true;
    // Once per socket: a coordinator that never reads (a CURVE endpoint that refuses a plain
    // executor, or none at all) would otherwise get a line per heartbeat.
    if (!told_queue_full_) {
      log_("could not queue " + std::string(to_string(message_type(message))) +
           " for the coordinator: its queue is full, so it takes nothing from this executor " +
           hint() + "; messages wait until it does");
      told_queue_full_ = true;
    }
  } catch (const ProtocolError& e) {
    log_("cannot encode " + std::string(to_string(message_type(message))) + ": " + e.what());
  }
  return false;
}

std::optional<std::vector<std::string>> CoordinatorConnection::receive() {
  if (!dealer_) return std::nullopt;
  return dealer_->receive();
}

void CoordinatorConnection::heard() { last_heard_ = last_word_ = clock_.steady_now(); }

std::string CoordinatorConnection::gone() const {
  if (options_.give_up_after <= std::chrono::milliseconds(0)) return {};
  const auto silent =
      std::chrono::duration_cast<std::chrono::seconds>(clock_.steady_now() - last_word_);
  if (clock_.steady_now() - last_word_ < options_.give_up_after) return {};
  return "nothing came from the coordinator at " + options_.coordinator + " for " +
         std::to_string(silent.count()) + " s (give_up_after): giving up";
}

void CoordinatorConnection::on_message(const Message& message) {
  if (const auto* error = std::get_if<ErrorMessage>(&message)) {
    on_error(*error, clock_.steady_now());
  } else {
    refused_since_.reset();  // it is let in
  }
}

void CoordinatorConnection::on_error(const ErrorMessage& error, Clock::SteadyTime now) {
  if (!error.say_hello) {
    log_("the coordinator reports an error: " + error.message);
  } else if (!told_say_hello_) {  // a restarted coordinator: once per socket
    log_("the coordinator does not know this connection (did it restart?): saying HELLO again");
    told_say_hello_ = true;
  }
  // A restarted executor may be refused while the coordinator still counts its dead predecessor
  // under the same id (until lease_timeout): only a refusal that lasts stops it.
  if (!error.refused) {
    refused_since_.reset();
  } else if (!refused_since_) {
    refused_since_ = now;
  } else if (now - *refused_since_ > 2 * options_.coordinator_timeout) {
    refusal_ = error.message;
  }
  hello_wanted_ = true;
}

void CoordinatorConnection::shorten_heartbeat(milliseconds interval) {
  heartbeat_interval_ = std::min(heartbeat_interval_, interval);
}

CoordinatorConnection::Due CoordinatorConnection::due() {
  const Clock::SteadyTime now = clock_.steady_now();
  Due due;
  if (now - last_heard_ >= options_.coordinator_timeout) {
    log_("nothing from the coordinator for " +
         std::to_string(std::chrono::duration_cast<milliseconds>(now - last_heard_).count()) +
         " ms; reconnecting to " + options_.coordinator + " " + hint());
    due.reconnect = true;
    return due;
  }
  if (now >= next_heartbeat_) {
    due.heartbeat = true;
    due.hello = hello_wanted_;
    next_heartbeat_ = now + heartbeat_interval_;
  }
  if (now >= next_resend_) {
    due.resend = true;
    next_resend_ = now + options_.coordinator_timeout;
  }
  return due;
}

milliseconds CoordinatorConnection::wait_time(milliseconds most) const {
  const Clock::SteadyTime next =
      std::min({next_heartbeat_, next_resend_, last_heard_ + options_.coordinator_timeout});
  auto wait =
      std::chrono::duration_cast<milliseconds>(next - clock_.steady_now()) + milliseconds(1);
  return std::clamp(wait, milliseconds(0), most);
}

std::string CoordinatorConnection::hint() const {
  return options_.curve_keys
             ? "(with CURVE: does the coordinator accept this executor's public key, and is "
               "--coordinator-key its .pub file?)"
             : "(is a coordinator listening there? one that uses CURVE answers only executors "
               "started with --key and --coordinator-key)";
}

}  // namespace tuner
