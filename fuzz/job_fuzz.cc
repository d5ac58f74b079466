// libFuzzer target for parse_trial_job() (executor/trial_job.h), which reads the job JSON an
// executor is sent (command and engine jobs). Properties checked on every input:
//   1. parsing returns or throws tuner::Error, nothing else (ASan/UBSan catch memory errors);
//   2. a parsed job is written by to_json() as text that parses to a job writing the same text
//      (what the coordinator sends is what the executor runs).
// Build and run: scripts/fuzz (docs/testing.md).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "executor/trial_job.h"
#include "trials/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<tuner::TrialJob> job;
  try {
    job = tuner::parse_trial_job(text, "job");
  } catch (const tuner::Error&) {
    return 0;
  }
  const std::string written = job->to_json();
  try {
    const std::string again = tuner::parse_trial_job(written, "written")->to_json();
    if (again != written) {
      std::fprintf(stderr, "to_json() does not round-trip:\n%s\n%s\n", written.c_str(),
                   again.c_str());
      std::abort();
    }
  } catch (const tuner::Error& e) {
    std::fprintf(stderr, "to_json() wrote a job that does not parse: %s\n%s\n", e.what(),
                 written.c_str());
    std::abort();
  }
  return 0;
}
