// The error every op of the engine throws when its arguments' shapes do not fit.
#ifndef TUNER_TRAINING_SHAPE_ERROR_H_
#define TUNER_TRAINING_SHAPE_ERROR_H_

#include <stdexcept>
#include <string>
#include <string_view>

namespace tuner::training {

// Thrown at an op's boundary when a shape, a layout or a configuration does not fit. The message
// names the op, the argument and the shapes, e.g.
//   "linear.forward: x has shape [4, 3], expected [B, 5] (B <= 8)".
class ShapeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Throws ShapeError("<op>: <message>").
[[noreturn]] void throw_shape_error(std::string_view op, std::string_view message);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_SHAPE_ERROR_H_
