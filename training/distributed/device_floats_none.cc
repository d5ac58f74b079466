// DeviceFloats of a build without CUDA: it cannot be made.
#include <stdexcept>

#include "training/distributed/device_floats.h"

namespace tuner::training {

DeviceFloats::DeviceFloats(int, size_t) {
  throw std::runtime_error("DeviceFloats: built without CUDA");
}
DeviceFloats::~DeviceFloats() = default;
void DeviceFloats::upload(std::span<const float>) {}
std::vector<float> DeviceFloats::download() const { return {}; }

}  // namespace tuner::training
