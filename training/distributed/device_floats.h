// DeviceFloats: a float array in one CUDA device's memory, for the NCCL tests and for callers
// that move a few values through a communicator without a backend. Builds without CUDA have the
// type, but making one throws std::runtime_error.
#ifndef TUNER_TRAINING_DISTRIBUTED_DEVICE_FLOATS_H_
#define TUNER_TRAINING_DISTRIBUTED_DEVICE_FLOATS_H_

#include <cstddef>
#include <span>
#include <vector>

namespace tuner::training {

// Thread safety: none; the calls make `device` current on the calling thread.
class DeviceFloats {
 public:
  // n floats on CUDA device `device`, zeroed.
  DeviceFloats(int device, size_t n);
  ~DeviceFloats();
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;

  // Device memory: for kernels and communicators, never dereferenced on the host.
  std::span<float> span() { return {data_, n_}; }
  // REQUIRES: values.size() == n. Synchronous.
  void upload(std::span<const float> values);
  // Synchronous (waits for the device).
  std::vector<float> download() const;

 private:
  int device_ = 0;
  size_t n_ = 0;
  float* data_ = nullptr;  // owned
};

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DISTRIBUTED_DEVICE_FLOATS_H_
