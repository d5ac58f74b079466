// LineChannel: a program that a launcher talks to in lines of text, its input and its output
// (the Ray launcher, launch/ray_launcher.py); injected so that tests replace the program.
//
// Thread safety: one thread uses an instance at a time.
#ifndef TUNER_LAUNCH_RAY_LAUNCHER_CHANNEL_H_
#define TUNER_LAUNCH_RAY_LAUNCHER_CHANNEL_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tuner {

class LineChannel {
 public:
  virtual ~LineChannel() = default;
  // Sends `line` and a newline. Throws Error(kUnavailable) when the other side reads no more.
  virtual void send(const std::string& line) = 0;
  // The whole lines received since the last call, without their newlines; never waits.
  virtual std::vector<std::string> receive() = 0;
  // nullopt while the other side runs or has lines not yet received; else how it ended
  // ("exited with code 1"), with the last lines it wrote to its stderr.
  virtual std::optional<std::string> ended() = 0;
  // Closes the sending side (the other side reads end of file), then waits up to `grace` for the
  // other side to end, keeping what it writes meanwhile for receive(); then ends it by force.
  // Never throws.
  virtual void close(std::chrono::milliseconds grace) = 0;
};

// Starts argv (argv[0] looked up in PATH) in a process group of its own, with this process's
// environment, its stdin and stdout the channel and its stderr kept (the last lines, for
// ended()). Destroying the channel kills the process group and reaps the process. Throws
// Error(kNotFound) when the program does not exist, Error(kUnavailable) when the system refuses
// a process or a pipe.
std::unique_ptr<LineChannel> spawn_line_channel(const std::vector<std::string>& argv);

}  // namespace tuner

#endif  // TUNER_LAUNCH_RAY_LAUNCHER_CHANNEL_H_
