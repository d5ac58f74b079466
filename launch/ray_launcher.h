// RayLauncher: starts a study's executors as actors on a Ray cluster and keeps their number
// fitted to the work (docs/clusters.md, "Ray").
//
// It runs tuner's Ray launcher (launch/ray_launcher.py, with executors.ray.python) as a child
// process and talks to it in JSON lines over its stdin and stdout (the protocol is at the top of
// ray_launcher.py): the first line hands it the cluster's address, the resources, the endpoint
// and the executors' CURVE keys (so that no key is on a command line or in a file here); then
// "start" and "stop" lines ask for executors, and it answers with their states. Each executor is
// a Ray actor that runs `tuner executor --connect ENDPOINT --slots N --id ID` on its node.
//
// Each tick() (called from the coordinator's loop with its queue state) reads what the Python
// launcher said, then starts and stops executors by decide_scaling (launch/scaling.h): between
// min_executors and max_executors, more while trials wait for slots, fewer when executors stay
// idle. It never waits: the Python launcher does the slow work (ray.init, placing actors).
// stop_all() and the destructor stop every executor and end the Python launcher, which also
// kills its actors when its stdin closes (this process killed), and Ray kills a killed
// launcher's actors; an actor's executor gets SIGTERM when its actor dies.
//
// Errors, thrown from tick() as Error(kFailedPrecondition) naming executors.ray: ray.init failing
// or not done in 2 min (no cluster at the address, ray not installed for executors.ray.python),
// an executor whose
// resources no node of the cluster has (after infeasible_timeout; the message names what it asks
// for and what the cluster has), an executor that ends within a minute of its start before it
// connected to the coordinator (its output's end shown), the Python launcher ending. An executor
// that ends later, or after it connected (its node lost, its actor killed), is said through `log`
// and replaced as needed.
//
// With a status_dir, what it last heard of its executors is in status_dir/executors.json
// (launch/ray_executors_file.h) while it runs, for `tuner status`.
//
// Thread safety: one thread (the coordinator loop's) calls its methods.
#ifndef TUNER_LAUNCH_RAY_LAUNCHER_H_
#define TUNER_LAUNCH_RAY_LAUNCHER_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launch/ray_executors_file.h"
#include "launch/ray_launcher_channel.h"
#include "launch/ray_options.h"
#include "launch/scaling.h"
#include "trials/clock.h"
#include "wire/curve_keys.h"

namespace tuner {

// The version of the JSON lines between RayLauncher and ray_launcher.py.
inline constexpr int kRayLauncherProtocolVersion = 1;

// ray_launcher.py as installed beside this binary (<prefix>/share/tuner/ray_launcher.py, the
// binary in <prefix>/bin), else the source tree's (a binary in the build tree).
std::string ray_launcher_script();

struct RayLauncherOptions {
  RayOptions ray;
  // The coordinator's address as the nodes reach it, tcp://HOST:PORT. Required.
  std::string connect_endpoint;
  // The coordinator's CURVE public key and the key pair its executors connect with (one of the
  // coordinator's executor_keys). Required.
  std::string coordinator_public_key;
  CurveKeyPair executor_keys;
  // Whom the executors serve, in messages: the study's name.
  std::string name;
  // Where it keeps executors.json while it runs: ray_status_dir(storage, study). Default
  // (empty): no file.
  std::string status_dir;
  // Default: the system clock.
  std::shared_ptr<Clock> clock;
  // What the launcher does (executors started, stopped, ended), one line each ("ray: ..."),
  // called on the thread of tick() and stop_all(). Default: none.
  std::function<void(const std::string&)> log;
  // Starts the Python launcher. Default: spawn_line_channel({ray.python, "-u",
  // ray_launcher_script()}).
  std::function<std::unique_ptr<LineChannel>()> start_launcher;
  // How long an executor may wait for resources that no node of the cluster has before it is an
  // error. Default 20 s.
  std::chrono::seconds infeasible_timeout{20};
  // How long stop_all() waits for the Python launcher to stop the actors and end. Default 15 s.
  std::chrono::milliseconds stop_grace{15000};
};

class RayLauncher {
 public:
  // Starts the Python launcher and hands it the options. Throws Error(kInvalidArgument) for
  // options that cannot work (no endpoint, bounds out of order) and Error(kFailedPrecondition)
  // when the Python launcher cannot be started.
  explicit RayLauncher(RayLauncherOptions options);
  // stop_all(); never throws.
  ~RayLauncher();
  RayLauncher(const RayLauncher&) = delete;
  RayLauncher& operator=(const RayLauncher&) = delete;

  // Takes what the Python launcher said since the last tick, then starts and stops executors for
  // `state`; says the lines logged, and throws the error that stopped the launcher (see the
  // top). Once it threw, later ticks do nothing.
  void tick(const LaunchQueueState& state);

  // Stops every executor and ends the Python launcher (waiting up to stop_grace). Later ticks do
  // nothing. Never throws: a failure is said through `log`.
  void stop_all();

  // The executors not yet ended ("pending" or "alive"), oldest first.
  std::vector<RayExecutorStatus> executors() const;

 private:
  struct Executor {
    std::string id;
    std::string node;
    std::string actor_id;
    std::string reason;  // why it is pending, as the Python launcher said
    std::optional<Clock::SteadyTime> running_since;
    bool connected = false;  // it has been seen connected to the coordinator
    bool stopping = false;   // a stop was sent
  };

  void start_python();
  // stop_all(), saying `why` with the executors stopped.
  void stop(const std::string& why);
  // Handles one line of the Python launcher's. Throws as described at the top, and
  // Json::exception for a line that is not of the protocol.
  void handle(const std::string& line);
  void executor_ended(const std::string& id, const std::string& reason);
  void scale(const LaunchQueueState& state);
  void send(const std::string& line);
  void say(const std::string& line);
  // Writes status_dir/executors.json when what it holds changed.
  void record();

  // Constant after construction.
  RayLauncherOptions options_;
  std::string id_prefix_;  // "ray-<random>-"

  std::unique_ptr<LineChannel> python_;
  std::vector<Executor> executors_;  // oldest first
  // The last executors that ended on their own (not stopped by this launcher), oldest first.
  std::vector<RayExecutorStatus> dead_;
  std::optional<RayExecutorsRecord> recorded_;  // what executors.json holds
  bool said_record_error_ = false;
  int next_number_ = 1;
  Clock::SteadyTime started_;  // when the Python launcher was started
  bool ready_ = false;         // ray.init succeeded
  bool said_connecting_ = false;
  bool stopped_ = false;
  bool started_any_ = false;
  std::optional<Clock::SteadyTime> unconnected_since_;
  bool warned_unconnected_ = false;
};

}  // namespace tuner

#endif  // TUNER_LAUNCH_RAY_LAUNCHER_H_
