#include "launch/slurm_jobs_file.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "launch/status_file.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;

fs::path jobs_file(const std::string& work_dir) { return fs::path(work_dir) / "jobs.json"; }

}  // namespace

std::string slurm_work_dir(const std::string& storage_path, const std::string& study) {
  return (fs::path(storage_path + ".slurm") / study).string();
}

void write_slurm_jobs_file(const std::string& work_dir, const SlurmJobsRecord& record) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const SlurmJobStatus& job : record.jobs) {
    jobs.push_back({{"id", job.id}, {"state", job.state}, {"reason", job.reason}});
  }
  const nlohmann::json doc = {{"version", kSlurmJobsFileVersion},
                              {"pid", record.pid},
                              {"job_name", record.job_name},
                              {"endpoint", record.endpoint},
                              {"jobs", jobs}};
  write_status_file(jobs_file(work_dir), doc);
}

void remove_slurm_jobs_file(const std::string& work_dir) {
  std::error_code ignored;
  fs::remove(jobs_file(work_dir), ignored);
}

std::optional<SlurmJobsRecord> read_slurm_jobs_file(const std::string& work_dir) {
  std::optional<nlohmann::json> doc = read_status_file(jobs_file(work_dir), kSlurmJobsFileVersion);
  if (!doc) return std::nullopt;
  try {
    SlurmJobsRecord record;
    record.pid = doc->at("pid").get<int64_t>();
    record.job_name = doc->at("job_name").get<std::string>();
    record.endpoint = doc->at("endpoint").get<std::string>();
    for (const nlohmann::json& job : doc->at("jobs")) {
      record.jobs.push_back({job.at("id").get<std::string>(), job.at("state").get<std::string>(),
                             job.at("reason").get<std::string>()});
    }
    return record;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace tuner
