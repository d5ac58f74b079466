// drift_test_log: writes a request log in the format `tuner serve-model` writes
// (drift/request_log.h) from Fashion-MNIST images, optionally shifted, with the outputs of a model:
// the test data of drift/cli_drift_test.sh.
//   drift_test_log --images F --labels F --begin A --count N --out DIR [--model MLFLOW_MODEL_DIR]
//     [--shift none|brighten|invert|noise] [--classes C,C,...] [--batch B] [--per-file R]
//     [--seed S]
// Images A, A+1, ... (of the classes listed, when --classes) until N are taken, as the files'
// bytes 0..255, shifted, and logged B per request, R requests per file.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "registry/mlflow_model.h"
#include "training/data/idx.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "drift_test_log: " << why << "\n";
  std::exit(2);
}

std::map<std::string, std::string> parse(int argc, char** argv) {
  std::map<std::string, std::string> out;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (!flag.starts_with("--") || i + 1 >= argc) usage("expected --flag value pairs at " + flag);
    out[flag] = argv[i + 1];
  }
  return out;
}

// Shifts one image's bytes in place.
void shift(std::vector<float>& px, const std::string& how, std::mt19937& rng) {
  if (how == "none") return;
  std::uniform_int_distribution<int> noise(-60, 60);
  for (float& v : px) {
    if (how == "brighten")
      v = std::min(255.0f, v + 60.0f);
    else if (how == "invert")
      v = 255.0f - v;
    else if (how == "noise")
      v = std::clamp(v + static_cast<float>(noise(rng)), 0.0f, 255.0f);
    else
      usage("unknown --shift " + how);
  }
}

std::string timestamp(int64_t ms) {
  // 2026-12-02T11:00:00.000Z plus ms (under an hour).
  char buf[64];
  std::snprintf(buf, sizeof buf, "2026-12-02T11:%02d:%02d.%03dZ", static_cast<int>(ms / 60000),
                static_cast<int>(ms / 1000 % 60), static_cast<int>(ms % 1000));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  auto flags = parse(argc, argv);
  auto need = [&](const std::string& f) {
    if (!flags.contains(f)) usage(f + " is required");
    return flags[f];
  };
  const int64_t begin = std::stoll(need("--begin")), count = std::stoll(need("--count"));
  const fs::path out = need("--out");
  const std::string how = flags.contains("--shift") ? flags["--shift"] : "none";
  const int batch = flags.contains("--batch") ? std::stoi(flags["--batch"]) : 8;
  const int per_file = flags.contains("--per-file") ? std::stoi(flags["--per-file"]) : 40;
  std::mt19937 rng(flags.contains("--seed") ? std::stoul(flags["--seed"]) : 1u);
  std::set<int32_t> classes;
  if (flags.contains("--classes")) {
    std::stringstream s(flags["--classes"]);
    for (std::string c; std::getline(s, c, ',');) classes.insert(std::stoi(c));
  }
  std::optional<tuner::registry::ServedModel> model;
  if (flags.contains("--model"))
    model.emplace(tuner::registry::ServedModel::load(flags["--model"]));

  const tuner::training::Dataset data =
      tuner::training::read_idx(need("--images"), need("--labels"));
  const int64_t numel = data.sample_numel();
  std::vector<std::vector<float>> images;
  for (int64_t i = begin; i < data.size() && static_cast<int64_t>(images.size()) < count; ++i) {
    if (!classes.empty() && !classes.contains(data.labels()[i])) continue;
    std::vector<float> px(data.sample(i).begin(), data.sample(i).end());
    for (float& v : px) v = std::round(v * 255.0f);  // the files' bytes, as the server logs them
    shift(px, how, rng);
    images.push_back(std::move(px));
  }
  if (static_cast<int64_t>(images.size()) < count) usage("not enough images");

  fs::create_directories(out);
  std::ofstream file;
  int64_t request = 0;
  for (size_t at = 0; at < images.size(); at += batch, ++request) {
    if (request % per_file == 0) {
      file.close();
      // Named by the UTC time of its first request, as the server names them.
      const int64_t ms = request * 250;
      char name[96];
      std::snprintf(name, sizeof name, "requests-20261202T11%02d%02d-%lld.jsonl",
                    static_cast<int>(ms / 60000), static_cast<int>(ms / 1000 % 60),
                    static_cast<long long>(request / per_file + 1));
      file.open(out / name);
    }
    const size_t n = std::min<size_t>(batch, images.size() - at);
    Json inputs = Json::array(), outputs = Json::array(), predicted = Json::array();
    std::vector<float> x;
    for (size_t i = 0; i < n; ++i) {
      Json row = Json::array();
      for (float v : images[at + i]) row.push_back(static_cast<int>(v));
      inputs.push_back(std::move(row));
      x.insert(x.end(), images[at + i].begin(), images[at + i].end());
    }
    Json line = {{"time", timestamp(request * 250)}, {"model", "fmnist"}, {"version", 1}};
    line["inputs"] = std::move(inputs);
    if (model) {
      model->preprocess(x);
      const std::vector<float> logits = model->forward(x);
      const int64_t k = model->spec().output.numel();
      for (size_t i = 0; i < n; ++i) {
        const float* row = logits.data() + i * k;
        outputs.push_back(std::vector<float>(row, row + k));
        predicted.push_back(std::max_element(row, row + k) - row);
      }
      line["outputs"] = std::move(outputs);
      line["predicted"] = std::move(predicted);
    }
    file << line.dump() << "\n";
  }
  file.close();
  std::cout << "logged " << images.size() << " images of " << numel << " values in " << request
            << " requests to " << out.string() << "\n";
  return 0;
}
