// Where the Fashion-MNIST files are: Debian's dataset-fashion-mnist installs them in
// /usr/share/datasets/fashion-mnist/; TUNER_FASHION_MNIST_DIR overrides it (a machine without
// the package, such as a GPU machine that got a copy of the files).
#ifndef TUNER_TRAINING_DATA_FASHION_MNIST_H_
#define TUNER_TRAINING_DATA_FASHION_MNIST_H_

#include <cstdlib>
#include <string>

namespace tuner::training {

// The directory, ending in '/'.
inline std::string fashion_mnist_dir() {
  const char* env = std::getenv("TUNER_FASHION_MNIST_DIR");
  std::string dir = env != nullptr && *env != '\0' ? env : "/usr/share/datasets/fashion-mnist/";
  if (dir.back() != '/') dir += '/';
  return dir;
}

}  // namespace tuner::training

#endif  // TUNER_TRAINING_DATA_FASHION_MNIST_H_
