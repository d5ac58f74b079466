// tuner drift --reference DATA --current LOG [--model DIR/MODEL[@ALIAS|/VERSION]] ...: the
// requests `tuner serve-model` logged against reference data (docs/drift.md). The drift library
// (drift/) reads and compares; this command adds the model's outputs where a side has none, and
// the exit status a CD job gates on (kExitDrift).
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/command.h"
#include "cli/model_directory.h"
#include "drift/compare.h"
#include "drift/read_samples.h"
#include "drift/report_format.h"
#include "registry/mlflow_model.h"
#include "registry/table_input.h"
#include "trials/error.h"

namespace tuner::cli {

namespace {

namespace fs = std::filesystem;

constexpr Flag kFlags[] = {
    {"--reference", "DATA", "idx images, a CSV or a request log", kRequired},
    {"--current", "LOG", "the request log directory of tuner serve-model, a log file or a CSV",
     kRequired},
    {"--model", "DIR/MODEL[@ALIAS|/VERSION]", "computes the outputs of a side that has none"},
    {"--reference-labels", "FILE", "the labels of reference idx images"},
    {"--reference-limit", "N", "only the first N reference samples"},
    {"--current-limit", "N", "only the first N current samples"},
    {"--image-shape", "[Cx]HxW", "the images' shape (default: the data's or the model's)"},
    {"--bins", "N", "PSI's quantile bins per feature (default 10)"},
    {"--psi-max", "X", "the PSI threshold (default 0.2)"},
    {"--p-min", "P", "the p-value threshold (default 0.05, divided by the tests)"},
    {"--no-correction", "", "no Bonferroni correction: P is each test's threshold"},
    {"--ks-max", "D", "also a threshold on the Kolmogorov-Smirnov statistic"},
    {"--skip-bad", "N", "skip up to N malformed log lines (default 0)"},
    {"--threads", "N", "the engine's threads for --model (default 1)"},
    {"--json", "", "the report as JSON"},
};

// "1x28x28" or "28x28" -> the shape; UsageError otherwise.
training::Shape parse_image_shape(const std::string& text) {
  const UsageError bad("tuner drift: --image-shape '" + text +
                       "': expected HxW or CxHxW of positive integers (e.g. 1x28x28)");
  std::vector<int64_t> dims;
  std::stringstream s(text);
  for (std::string part; std::getline(s, part, 'x');) {
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos ||
        part.size() > 9 || std::stoll(part) < 1) {
      throw bad;
    }
    dims.push_back(std::stoll(part));
  }
  if (dims.size() < 2 || dims.size() > 3 || text.ends_with("x")) throw bad;
  return training::Shape::from(dims);
}

bool image_like(const training::Shape& s) {
  return (s.rank() == 2 || s.rank() == 3) && s[s.rank() - 1] > 1 && s[s.rank() - 2] > 1;
}

// The model's logits and classes for a side that has inputs but no outputs (idx images, a CSV).
// A request log's outputs are what the served model answered, and are kept.
void add_model_outputs(registry::ServedModel& model, drift::Samples& s, const std::string& side) {
  if (s.output_width > 0) return;
  const int64_t numel = model.spec().input.numel();
  if (s.input_width != numel) {
    throw Error(ErrorCode::kInvalidArgument,
                side + " " + s.source.path + ": samples of " + std::to_string(s.input_width) +
                    " values, the model takes " + model.spec().input.to_string());
  }
  std::vector<float> x = s.inputs;
  try {
    model.preprocess(x);
  } catch (const Error& e) {
    throw Error(e.code(), side + " " + s.source.path + ": " + e.what());
  }
  s.outputs = model.forward(x);
  s.output_width = model.spec().output.numel();
  if (s.predicted.empty()) {
    const size_t k = static_cast<size_t>(s.output_width);
    for (int64_t i = 0; i < s.count; ++i) {
      const float* row = s.outputs.data() + static_cast<size_t>(i) * k;
      s.predicted.push_back(static_cast<int32_t>(std::max_element(row, row + k) - row));
    }
  }
  s.notes.push_back(side + ": outputs and predicted classes computed with the model");
}

// A CSV or TSV side (*.csv, *.tsv, *.tab) of a model trained on a table: its rows' feature
// columns by name, encoded as training encoded them (registry/table_input.h), which are the
// values the model's server logs; the label column, when the file has it, gives the labels (all
// of them, or none when a label is not one of the model's classes). Throws what
// read_table_input throws, prefixed with the side.
std::optional<drift::Samples> read_table_side(const registry::ServedModel& model,
                                              const std::string& path, int64_t limit,
                                              const std::string& side) {
  const registry::Preprocessing& p = model.preprocessing();
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (!p.table || (ext != ".csv" && ext != ".tsv" && ext != ".tab")) return std::nullopt;
  registry::TableInput table;
  try {
    table = registry::read_table_input(path, *p.table, limit);
  } catch (const Error& e) {
    throw Error(e.code(), side + " " + path + ": " + e.what());
  }
  drift::Samples s;
  s.count = table.count;
  s.input_width = registry::encoded_width(*p.table);
  s.inputs = std::move(table.features);
  s.input_names = p.table->features;
  s.source.kind = "csv";
  s.source.path = path;
  s.notes.push_back(side + ": the rows' columns encoded as the model's training encoded them");
  if (!p.regression && !table.labels.empty()) {
    for (const std::string& label : table.labels) {
      const int64_t k = registry::class_index(p.class_labels, label);
      if (k < 0) {
        s.labels.clear();
        s.notes.push_back(side + ": labels left out (\"" + label +
                          "\" is not one of the model's classes)");
        break;
      }
      s.labels.push_back(static_cast<int32_t>(k));
    }
  }
  return s;
}

}  // namespace

int run_drift(const std::vector<std::string>& args) {
  Flags flags(args, kFlags, "drift");
  const std::string reference_path = flags.require("--reference");
  const std::string current_path = flags.require("--current");
  const int threads = flags.get_int("--threads", 1);
  if (threads < 1) throw UsageError("tuner drift: --threads must be >= 1");
  const int skip_bad = flags.get_int("--skip-bad", 0);
  if (skip_bad < 0) throw UsageError("tuner drift: --skip-bad must be >= 0");
  drift::DriftOptions options;
  options.bins = flags.get_int("--bins", drift::kDefaultBins);
  if (options.bins < 2) throw UsageError("tuner drift: --bins must be >= 2");
  options.thresholds.psi_max = flags.get_double("--psi-max", 0.2);
  if (!(options.thresholds.psi_max > 0)) throw UsageError("tuner drift: --psi-max must be > 0");
  options.thresholds.p_min = flags.get_double("--p-min", 0.05);
  if (!(options.thresholds.p_min >= 0 && options.thresholds.p_min < 1)) {
    throw UsageError("tuner drift: --p-min must be in [0, 1) (0: p-values flag nothing)");
  }
  options.thresholds.bonferroni = !flags.has("--no-correction");
  if (flags.has("--ks-max")) {
    options.thresholds.ks_max = flags.get_double("--ks-max", 1.0);
    if (!(*options.thresholds.ks_max >= 0 && *options.thresholds.ks_max < 1)) {
      throw UsageError("tuner drift: --ks-max must be in [0, 1)");
    }
  }

  std::optional<registry::ServedModel> model;
  if (flags.has("--model")) {
    model.emplace(registry::ServedModel::load(model_directory(flags.get("--model")), threads));
  }
  drift::ReadOptions ref_options;
  ref_options.labels = flags.get("--reference-labels");
  ref_options.limit = flags.get_int("--reference-limit", -1);
  ref_options.skip_bad = skip_bad;
  // idx images in the units the model's server logs: a uint8 model takes (and logs) the files'
  // bytes; a format-version-1 float model took the loader's [0, 1].
  if (model && model->preprocessing().input != registry::RawInput::kUint8) {
    ref_options.units = drift::IdxUnits::kUnit;
  }
  drift::ReadOptions cur_options = ref_options;
  cur_options.labels.clear();
  cur_options.limit = flags.get_int("--current-limit", -1);
  // A table model's CSVs are read by its columns' names and encoded as its server logs them.
  std::optional<drift::Samples> ref_table, cur_table;
  if (model) {
    ref_table = read_table_side(*model, reference_path, ref_options.limit, "reference");
    cur_table = read_table_side(*model, current_path, cur_options.limit, "current");
  }
  drift::Samples reference =
      ref_table ? std::move(*ref_table) : drift::read_samples(reference_path, ref_options);
  drift::Samples current =
      cur_table ? std::move(*cur_table) : drift::read_samples(current_path, cur_options);

  if (model) {
    add_model_outputs(*model, reference, "reference");
    add_model_outputs(*model, current, "current");
  }
  if (flags.has("--image-shape")) {
    options.features.image = parse_image_shape(flags.get("--image-shape"));
  } else if (image_like(reference.input_shape)) {
    options.features.image = reference.input_shape;
  } else if (image_like(current.input_shape)) {
    options.features.image = current.input_shape;
  } else if (model && image_like(model->spec().input)) {
    options.features.image = model->spec().input;
  }

  const drift::DriftReport report = drift::compare(reference, current, options);
  std::cout << (flags.has("--json") ? drift::format_json(report) : drift::format_table(report));
  std::cout.flush();
  return report.drift() ? kExitDrift : kExitOk;
}

extern const Command kDriftCommand = {
    .name = "drift",
    .synopsis =
        "drift --reference DATA --current LOG [--model DIR/MODEL[@ALIAS|/VERSION]]\n"
        "      [--reference-labels FILE] [--reference-limit N] [--current-limit N]\n"
        "      [--image-shape [Cx]HxW] [--bins N] [--psi-max X] [--p-min P] [--no-correction]\n"
        "      [--ks-max D] [--skip-bad N] [--threads N] [--json]",
    .description =
        "compare what tuner serve-model logged (a directory of\n"
        "requests-*.jsonl, one such file, or a CSV) with reference\n"
        "data (idx images, a CSV or another log): per feature\n"
        "(per-image summaries of images, each column of a table,\n"
        "the model's logits) PSI and two-sample Kolmogorov-\n"
        "Smirnov, and the predicted class distribution (PSI,\n"
        "chi-square). Exit 3 when any is past its threshold\n"
        "(docs/drift.md)",
    .flags = kFlags,
    .run = &run_drift,
};

}  // namespace tuner::cli
