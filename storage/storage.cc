#include "storage/storage.h"

namespace tuner {

void Storage::set_trial_params(int64_t trial_id, const std::vector<NewParam>& params) {
  for (const NewParam& p : params) set_trial_param(trial_id, p.name, p.distribution, p.value);
}

void Storage::run_batch(const std::function<void()>& body) { body(); }

std::optional<uint64_t> Storage::change_count() { return std::nullopt; }

}  // namespace tuner
