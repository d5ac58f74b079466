#include "coordinator/metric_constraint.h"

#include <sstream>

namespace tuner {

double constraint_value(const MetricConstraint& constraint, double value) {
  return constraint.bound == MetricConstraint::Bound::kMax ? value - constraint.limit
                                                           : constraint.limit - value;
}

std::string to_string(const MetricConstraint& constraint) {
  std::ostringstream out;
  out.precision(17);
  out << constraint.limit;
  std::string limit = out.str();
  // The shortest text that reads back as the same limit.
  for (int digits = 1; digits < 17; ++digits) {
    std::ostringstream shorter;
    shorter.precision(digits);
    shorter << constraint.limit;
    if (std::stod(shorter.str()) == constraint.limit) {
      limit = shorter.str();
      break;
    }
  }
  return constraint.metric + (constraint.bound == MetricConstraint::Bound::kMax ? " <= " : " >= ") +
         limit;
}

}  // namespace tuner
