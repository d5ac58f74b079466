// CoordinatorConnection: an executor's DEALER to its coordinator and the timing around it: when
// the next HEARTBEAT (or HELLO) is due, when outcomes not yet ACKed go again, and when silence
// from the coordinator (ExecutorOptions::coordinator_timeout) means reconnecting. It tracks a
// coordinator that refuses this executor (ErrorMessage::refused) and says, once that has lasted
// over 2 x coordinator_timeout, why (refusal()). What goes into a HELLO is the caller's: open()
// only opens, and due() says when a HELLO is wanted.
//
// Each open() is a new socket with a new routing id ("<executor_id>#<pid>.<n>"), so that the
// coordinator tells a reconnect from a stale peer; a socket closed lingers up to 200 ms to
// deliver what is queued (BYE, a last RESULT).
//
// Thread safety: used by the executor's loop thread only.
#ifndef TUNER_EXECUTOR_CONNECTION_H_
#define TUNER_EXECUTOR_CONNECTION_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "executor/executor_service.h"
#include "trials/clock.h"
#include "wire/message_socket.h"
#include "wire/protocol.h"

namespace tuner {

// "<hostname>-<pid>": an executor's id when none is given.
std::string default_executor_id();
// This host's name ("" when it cannot be read), for HELLO.
std::string host_name();

class CoordinatorConnection {
 public:
  using Log = std::function<void(const std::string&)>;

  // What the timers ask for at one look (due()).
  struct Due {
    bool reconnect = false;  // silence for coordinator_timeout: open() again (and nothing else)
    bool heartbeat = false;  // HEARTBEAT, or HELLO when `hello`
    bool hello = false;      // a HELLO is wanted (after an ERROR)
    bool resend = false;     // the outcomes not yet ACKed go again
  };

  // `options`, `clock` and `log` are borrowed and must outlive this.
  CoordinatorConnection(const ExecutorOptions& options, Clock& clock, Log log);
  ~CoordinatorConnection();
  CoordinatorConnection(const CoordinatorConnection&) = delete;
  CoordinatorConnection& operator=(const CoordinatorConnection&) = delete;

  // Opens a new socket in place of the old one (whose queue is lost) and starts the timers
  // afresh. Throws Error for what makes connecting impossible (a malformed endpoint).
  void open();
  // Closes the socket (lingering, see above) and the ZeroMQ context.
  void close();

  // Queues `message`; false when it cannot go (no socket, a full queue, or it cannot be encoded:
  // each logged).
  bool send(const Message& message);
  // The frames of the next message waiting; nullopt when none (or no socket). Never blocks.
  std::optional<std::vector<std::string>> receive();
  // REQUIRES: open.
  ZmqSocket& socket() { return dealer_->socket(); }

  // Frames came from the coordinator (decodable or not): it is not silent.
  void heard();
  // A message from the coordinator, decoded. Anything but ERROR ends a refusal; an ERROR is
  // logged (a request to say HELLO once per socket), counts towards a refusal when it is one,
  // and makes the next heartbeat a HELLO.
  void on_message(const Message& message);
  // HELLO was said (open() callers, and a due `hello`).
  void said_hello() { hello_wanted_ = false; }
  // A TRIAL asks for heartbeats at least this often.
  void shorten_heartbeat(std::chrono::milliseconds interval);

  // What is due now; the heartbeat and resend timers that are due start again.
  Due due();
  // How long the loop may wait for input: until the next timer, at most `most`.
  std::chrono::milliseconds wait_time(std::chrono::milliseconds most) const;
  // Non-empty once the coordinator has refused this executor for over 2 x coordinator_timeout.
  const std::string& refusal() const { return refusal_; }
  // Non-empty once nothing came from the coordinator for ExecutorOptions::give_up_after since
  // this connection was made or last heard, across reconnects: why the executor gives up.
  std::string gone() const;

  // What to check when the coordinator does not answer.
  std::string hint() const;

 private:
  void on_error(const ErrorMessage& error, Clock::SteadyTime now);

  // Constant after construction.
  const ExecutorOptions& options_;
  Clock& clock_;
  const Log log_;

  std::unique_ptr<ZmqContext> context_;
  std::unique_ptr<DealerEndpoint> dealer_;
  int64_t generation_ = 0;  // sockets opened
  std::chrono::milliseconds heartbeat_interval_;
  Clock::SteadyTime last_heard_{};
  Clock::SteadyTime last_word_{};  // as last_heard_, but not reset by open()
  Clock::SteadyTime next_heartbeat_{};
  Clock::SteadyTime next_resend_{};
  bool hello_wanted_ = false;
  bool told_queue_full_ = false;  // on this socket
  bool told_say_hello_ = false;   // on this socket
  std::optional<Clock::SteadyTime> refused_since_;
  std::string refusal_;
};

}  // namespace tuner

#endif  // TUNER_EXECUTOR_CONNECTION_H_
