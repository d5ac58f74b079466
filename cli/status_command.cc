// tuner status --storage PATH [--study NAME]: the studies in a file, how far each has come, and
// what tuner serve does with them.
#include <iostream>
#include <map>

#include "cli/command.h"
#include "cli/study_view.h"
#include "launch/ray_executors_file.h"
#include "launch/slurm_jobs_file.h"
#include "search/pareto.h"
#include "sweep/serve.h"
#include "trials/constraints.h"
#include "tuner/study.h"

namespace tuner::cli {

namespace {

// A study of several objectives: its Pareto front's size, and the hypervolume it dominates up to
// a reference point just beyond the worst value of each objective among the feasible COMPLETE
// trials (nadir_reference: so that a study's figure grows as its front improves).
void print_front_summary(const std::vector<FrozenTrial>& trials,
                         const std::vector<StudyDirection>& directions) {
  const std::vector<FrozenTrial> front = pareto_front_trials(trials, directions);
  std::cout << ", Pareto front " << front.size() << " trial" << (front.size() == 1 ? "" : "s");
  if (front.empty()) return;
  const size_t m = directions.size();
  const std::vector<double> reference = nadir_reference(feasible_losses(trials, directions), m);
  std::cout << ", hypervolume " << hypervolume(feasible_losses(front, directions), m, reference);
}

// The Slurm jobs of a running sweep's executors (executors.slurm), as its launcher last saw
// them: "  slurm jobs (tuner-mlp-q3x9ab): 81234 RUNNING, 81235 PENDING (Priority)".
void print_slurm_jobs(const std::string& work_dir) {
  const std::optional<SlurmJobsRecord> record = read_slurm_jobs_file(work_dir);
  if (!record) return;
  std::cout << "  slurm jobs (" << record->job_name << "):";
  if (record->jobs.empty()) std::cout << " none now";
  for (size_t i = 0; i < record->jobs.size(); ++i) {
    const SlurmJobStatus& job = record->jobs[i];
    std::cout << (i == 0 ? " " : ", ") << job.id << " " << job.state;
    if (job.state == "PENDING" && !job.reason.empty() && job.reason != "None") {
      std::cout << " (" << job.reason << ")";
    }
  }
  std::cout << "; executors connect to " << record->endpoint << "\n";
}

// The Ray actors of a running sweep's executors (executors.ray), as its launcher last heard of
// them: "  ray executors (ray-q3x9ab on ray://head:10001): ray-q3x9ab-1 alive on 10.0.3.17
// (actor 3f1c...), ray-q3x9ab-2 pending (infeasible: ...)". Each id is also its actor's name.
void print_ray_executors(const std::string& dir) {
  const std::optional<RayExecutorsRecord> record = read_ray_executors_file(dir);
  if (!record) return;
  std::cout << "  ray executors (" << record->launcher << " on " << record->address << "):";
  if (record->executors.empty()) std::cout << " none now";
  for (size_t i = 0; i < record->executors.size(); ++i) {
    const RayExecutorStatus& e = record->executors[i];
    std::cout << (i == 0 ? " " : ", ") << e.id << " " << e.state;
    if (!e.node.empty()) std::cout << " on " << e.node;
    if (!e.actor_id.empty()) std::cout << " (actor " << e.actor_id << ")";
    if (!e.reason.empty()) std::cout << " (" << e.reason << ")";
  }
  std::cout << "; executors connect to " << record->endpoint << "\n";
}

constexpr Flag kFlags[] = {
    kStorageFlag,
    {"--study", "NAME", "only this study (default: every study of PATH)"},
};

}  // namespace

int run_status(const std::vector<std::string>& args) {
  Flags flags(args, kFlags, "status");
  const std::string path = flags.require("--storage");
  std::unique_ptr<Storage> storage = open_read_only(path);
  std::vector<StudyRecord> studies;
  if (flags.has("--study")) {
    studies.push_back(find_study(*storage, flags.get("--study"), path));
  } else {
    studies = storage->list_studies();
  }
  if (studies.empty()) std::cout << "no studies in " << path << "\n";
  for (const StudyRecord& s : studies) {
    const std::vector<FrozenTrial> trials = storage->get_trials(s.study_id);
    std::map<TrialState, int> by_state;
    for (const FrozenTrial& t : trials) ++by_state[t.state];
    std::cout << s.name << ": " << trials.size() << " trials";
    for (const auto& [state, n] : by_state) std::cout << ", " << n << " " << to_string(state);
    if (s.directions.size() == 1) {
      std::cout << "; " << to_string(s.directions[0]);
      if (const FrozenTrial* best = best_feasible(trials, s.directions[0])) {
        std::cout << ", best " << best->values[0] << " (trial " << best->number << ")";
      }
      // Constrained studies: the best is the best feasible trial.
      if (const int infeasible = count_infeasible(trials); infeasible > 0) {
        std::cout << ", " << infeasible << " COMPLETE infeasible";
      }
    } else {
      std::cout << "; " << s.directions.size() << " objectives";
      print_front_summary(trials, s.directions);
    }
    std::cout << "; sampler " << stored_sampler_name(s);
    if (const std::optional<uint64_t> seed = stored_seed(s)) std::cout << "; seed " << *seed;
    if (const auto state = serve_state(s); state && *state != ServeState::kDone) {
      std::cout << "; on tuner serve: " << to_string(*state);
    }
    std::cout << "\n";
    print_slurm_jobs(slurm_work_dir(path, s.name));
    print_ray_executors(ray_status_dir(path, s.name));
  }
  if (const auto serve = running_serve(path)) {
    std::cout << "tuner serve runs on " << path << " (pid " << serve->pid
              << ", executors connect to " << serve->endpoint << ")\n";
  }
  return kExitOk;
}

extern const Command kStatusCommand = {
    .name = "status",
    .synopsis = "status --storage PATH [--study NAME]",
    .description = "the studies in a database: trials by state, the best",
    .flags = kFlags,
    .run = &run_status,
};

}  // namespace tuner::cli
