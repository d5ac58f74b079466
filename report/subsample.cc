#include "report/subsample.h"

#include <algorithm>

namespace tuner::report {

std::vector<size_t> spread_sample(size_t n, size_t cap, const std::vector<size_t>& keep) {
  std::vector<size_t> out;
  if (n <= cap) {
    out.resize(n);
    for (size_t i = 0; i < n; ++i) out[i] = i;
    return out;
  }
  std::vector<char> taken(n, 0);
  for (size_t k : keep) {
    if (out.size() >= cap) break;
    if (k < n && !taken[k]) {
      taken[k] = 1;
      out.push_back(k);
    }
  }
  std::vector<size_t> others;
  others.reserve(n - out.size());
  for (size_t i = 0; i < n; ++i) {
    if (!taken[i]) others.push_back(i);
  }
  const size_t room = cap - out.size();
  for (size_t i = 0; i < room && !others.empty(); ++i) {
    out.push_back(others[i * others.size() / room]);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tuner::report
