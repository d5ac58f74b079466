// A stand-in for the NVIDIA driver's NVML library (libnvidia-ml.so.1) on hosts without a GPU, for
// the tests of per-trial GPU memory: one GPU, whose compute processes are the live processes
// named by the files of the folder $TUNER_FAKE_NVML_DIR, each file named by its process id and
// holding the bytes that process "uses".
#include <dirent.h>
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

struct ProcessInfo {  // nvmlProcessInfo_t
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};

constexpr int kSuccess = 0;
constexpr int kInsufficientSize = 7;

std::vector<ProcessInfo> processes() {
  std::vector<ProcessInfo> found;
  const char* dir = std::getenv("TUNER_FAKE_NVML_DIR");
  if (dir == nullptr) return found;
  DIR* listing = ::opendir(dir);
  if (listing == nullptr) return found;
  while (const dirent* entry = ::readdir(listing)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid <= 0 || ::kill(pid, 0) != 0) continue;
    unsigned long long bytes = 0;
    std::ifstream(std::string(dir) + "/" + entry->d_name) >> bytes;
    found.push_back({static_cast<unsigned int>(pid), bytes, 0, 0});
  }
  ::closedir(listing);
  return found;
}

}  // namespace

extern "C" {

int nvmlInit_v2() { return kSuccess; }
int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = 1;
  return kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int, void** device) {
  static int the_gpu;
  *device = &the_gpu;
  return kSuccess;
}
int nvmlDeviceGetComputeRunningProcesses_v3(void*, unsigned int* count, ProcessInfo* infos) {
  const std::vector<ProcessInfo> found = processes();
  if (*count < found.size()) {
    *count = static_cast<unsigned int>(found.size());
    return kInsufficientSize;
  }
  for (size_t i = 0; i < found.size(); ++i) infos[i] = found[i];
  *count = static_cast<unsigned int>(found.size());
  return kSuccess;
}
const char* nvmlErrorString(int) { return "fake NVML error"; }

}  // extern "C"
