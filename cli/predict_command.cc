// tuner predict --model DIR/MODEL[@ALIAS|/VERSION] --input FILE [--labels FILE] [--limit N]
//   [--output FILE]: batch inference with the engine on a registered model (docs/registry.md).
// The inputs are what the model's MLflow signature takes: the dataset's own values (for a
// Fashion-MNIST model, uint8 pixels 0..255: the idx files themselves, or a CSV of pixel values);
// the model's preprocessing (registry/mlflow_model.h) normalizes them, as model.onnx does. A
// model trained on a table (a csv file) takes a CSV or TSV with a header, its feature columns by
// name, encoded as training encoded them (registry/table_input.h); it answers with the labels,
// or a regression's model with the predicted values. A model trained on an image folder takes a
// folder of the same layout (its sub-folders' names are the true labels) or one PNG or JPEG
// file, decoded and resized as training did. Any model takes an .npy array [N, input...] of its
// raw inputs, float or integer (labels, for the accuracy: --labels, an .npy [N] of integers).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/command.h"
#include "cli/model_directory.h"
#include "executor/engine/image_folder_loader.h"
#include "registry/mlflow_model.h"
#include "registry/registry.h"
#include "registry/table_input.h"
#include "training/data/dataset.h"
#include "training/data/idx.h"
#include "training/data/image_codec.h"
#include "training/data/image_resize.h"
#include "training/data/npy.h"
#include "trials/error.h"

namespace tuner::cli {

namespace {

namespace fs = std::filesystem;

struct Inputs {
  std::vector<float> features;  // [N, sample...], the model's raw inputs (its signature's values)
  std::vector<int32_t> labels;  // empty when unknown; a table's label it has no class of: -1
  std::vector<std::string> label_text;  // a table's labels as written; else empty
  // A regression's table: each row's label column as a number (NaN when it is not one).
  std::vector<double> targets;
  int64_t count = 0;
};

// A CSV field: quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string format(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}

// The rows of a table for a model trained on one (its preprocessing's table).
Inputs read_table(const std::string& path, const registry::ServedModel& model, int64_t limit) {
  const registry::Preprocessing& p = model.preprocessing();
  registry::TableInput table = registry::read_table_input(path, *p.table, limit);
  Inputs out;
  out.features = std::move(table.features);
  out.count = table.count;
  if (!table.labels.empty()) {
    for (const std::string& label : table.labels) {
      if (p.regression) {
        char* end = nullptr;
        const double v = std::strtod(label.c_str(), &end);
        const bool number = !label.empty() && end == label.c_str() + label.size();
        out.targets.push_back(number ? v : std::nan(""));
      } else {
        out.labels.push_back(static_cast<int32_t>(registry::class_index(p.class_labels, label)));
      }
    }
    out.label_text = std::move(table.labels);
  }
  return out;
}

// The images of `path` for a model trained on an image folder (its preprocessing's image): a
// folder of one sub-folder per class, listed as training lists one (the sub-folders' names are
// the labels), or one PNG or JPEG file (told by its first bytes). Each is decoded, given the
// model's channels and resized to its size as the image-folder loader does: [C, H, W] values in
// [0, 1], the model's raw input.
Inputs read_images(const std::string& path, const registry::ServedModel& model, int64_t limit) {
  const registry::ImageEncoding& encoding = *model.preprocessing().image;
  const training::ImageColor color =
      encoding.grayscale ? training::ImageColor::kGrayscale : training::ImageColor::kRgb;
  std::vector<std::string> files = {path};
  std::vector<std::string> labels;  // each file's class folder; empty for one file
  if (fs::is_directory(path)) {
    const engine::ImageFolderListing listing = engine::list_image_folder(path, "--input");
    files = listing.files;
    for (int32_t label : listing.labels) labels.push_back(listing.classes[label]);
  }
  if (limit >= 0 && static_cast<int64_t>(files.size()) > limit) {
    files.resize(static_cast<size_t>(limit));
    if (!labels.empty()) labels.resize(files.size());
  }
  Inputs out;
  const int64_t numel = model.spec().input.numel();
  out.features.reserve(files.size() * static_cast<size_t>(numel));
  for (const std::string& file : files) {
    try {
      const training::Image image = training::resize_bilinear(
          training::read_image_file(file, color), encoding.height, encoding.width);
      out.features.insert(out.features.end(), image.pixels.begin(), image.pixels.end());
    } catch (const training::DataError& e) {
      throw Error(ErrorCode::kInvalidArgument, e.what());
    }
    ++out.count;
  }
  for (const std::string& label : labels) {
    out.labels.push_back(
        static_cast<int32_t>(registry::class_index(model.preprocessing().class_labels, label)));
  }
  out.label_text = std::move(labels);
  return out;
}

// A regression's predictions as CSV (index, predicted value(s), the table's label when it has
// one), and its RMSE and MAE over the rows whose label is a number, beside the trial's recorded
// test_rmse.
void write_values(std::ostream& out, std::ostream& summary, const Inputs& in,
                  const std::vector<float>& values, int64_t k, const registry::ServedModel& model) {
  out << "index";
  for (int64_t t = 0; t < k; ++t)
    out << (k == 1 ? ",predicted" : ",predicted_" + std::to_string(t));
  const bool labelled = k == 1 && !in.label_text.empty();
  if (labelled) out << ",label";
  out << "\n";
  double squared = 0, absolute = 0;
  int64_t scored = 0;
  for (int64_t i = 0; i < in.count; ++i) {
    out << i;
    for (int64_t t = 0; t < k; ++t) out << "," << format(values[static_cast<size_t>(i * k + t)]);
    if (labelled) {
      out << "," << csv_field(in.label_text[static_cast<size_t>(i)]);
      const double target = in.targets[static_cast<size_t>(i)];
      if (!std::isnan(target)) {
        const double e = values[static_cast<size_t>(i)] - target;
        squared += e * e;
        absolute += std::abs(e);
        ++scored;
      }
    }
    out << "\n";
  }
  out.flush();
  if (!out) throw Error(ErrorCode::kUnavailable, "cannot write the predictions");
  if (scored == 0) return;
  const double rmse = std::sqrt(squared / static_cast<double>(scored));
  summary << "rmse " << format(rmse) << ", mae " << format(absolute / static_cast<double>(scored))
          << " (" << scored << " rows with a label)\n";
  const nlohmann::json meta = nlohmann::json::parse(model.metadata_json(), nullptr, false);
  if (meta.is_object() && meta.contains("metrics") && meta["metrics"].contains("test_rmse") &&
      meta["metrics"]["test_rmse"].is_number()) {
    summary << "recorded test_rmse of trial " << meta.value("trial", -1) << ": "
            << format(meta["metrics"]["test_rmse"].get<double>()) << "\n";
  }
}

// "t10k-images-idx3-ubyte.gz" -> "t10k-labels-idx1-ubyte.gz" beside it, when it exists.
std::string labels_beside(const fs::path& images) {
  std::string name = images.filename().string();
  const size_t at = name.find("images-idx3");
  if (at == std::string::npos) return "";
  name.replace(at, 11, "labels-idx1");
  const fs::path labels = images.parent_path() / name;
  return fs::exists(labels) ? labels.string() : "";
}

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream s(line);
  for (std::string field; std::getline(s, field, ',');) {
    field.erase(0, field.find_first_not_of(" \t\r"));
    field.erase(field.find_last_not_of(" \t\r") + 1);
    out.push_back(field);
  }
  return out;
}

// A CSV of features, one sample per row; a first row that is not numbers is a header, and a
// header whose first column is "label" makes that column the labels.
Inputs read_features_csv(const std::string& path, int64_t numel, int64_t limit) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::kNotFound, path + ": cannot read the input file");
  Inputs out;
  bool first = true, labelled = false;
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::vector<std::string> fields = split_csv(line);
    if (first) {
      first = false;
      if (!is_number(fields[0])) {
        labelled = fields[0] == "label";
        continue;
      }
    }
    if (limit >= 0 && out.count >= limit) break;
    const size_t skip = labelled ? 1 : 0;
    if (static_cast<int64_t>(fields.size() - skip) != numel) {
      throw Error(ErrorCode::kInvalidArgument, path + ":" + std::to_string(line_number) + ": " +
                                                   std::to_string(fields.size() - skip) +
                                                   " features, the model takes " +
                                                   std::to_string(numel));
    }
    if (labelled) {
      if (!is_number(fields[0])) {
        throw Error(ErrorCode::kInvalidArgument, path + ":" + std::to_string(line_number) +
                                                     ": label '" + fields[0] + "' is not a number");
      }
      out.labels.push_back(static_cast<int32_t>(std::stol(fields[0])));
    }
    for (size_t i = skip; i < fields.size(); ++i) {
      if (!is_number(fields[i])) {
        throw Error(ErrorCode::kInvalidArgument, path + ":" + std::to_string(line_number) + ": '" +
                                                     fields[i] + "' is not a number");
      }
      out.features.push_back(std::stof(fields[i]));
    }
    ++out.count;
  }
  return out;
}

// An .npy array [N, input...] of the model's raw inputs (float or integer), and when `labels` is
// given, an .npy [N] (or [N, 1]) of integer labels. Errors name the file: Error(kNotFound) for a
// missing one, kInvalidArgument for an unreadable one, another element type or another shape.
Inputs read_npy(const std::string& path, const std::string& labels, const training::Shape& input,
                int64_t limit) {
  const auto open = [](const std::string& file) {
    if (!fs::exists(file)) throw Error(ErrorCode::kNotFound, file + ": no such file");
    try {
      return training::NpyArray::open(file);
    } catch (const training::DataError& e) {
      throw Error(ErrorCode::kInvalidArgument, e.what());
    }
  };
  const training::NpyArray x = open(path);
  const std::vector<int64_t>& shape = x.shape();
  const std::vector<int64_t> want(input.dims().begin(), input.dims().end());
  if (shape.size() != want.size() + 1 || !std::equal(want.begin(), want.end(), shape.begin() + 1)) {
    std::string got = "[";
    for (size_t i = 0; i < shape.size(); ++i) got += (i ? ", " : "") + std::to_string(shape[i]);
    throw Error(ErrorCode::kInvalidArgument,
                path + ": an array of shape " + got + "], the model takes samples of " +
                    input.to_string() + ": give an array [N, " + input.to_string().substr(1));
  }
  if (x.kind() != 'f' && x.kind() != 'i' && x.kind() != 'u') {
    throw Error(ErrorCode::kInvalidArgument, path + ": elements of type " + x.dtype() +
                                                 ", the model takes numbers (float or integer)");
  }
  Inputs out;
  out.count = limit >= 0 ? std::min<int64_t>(shape[0], limit) : shape[0];
  out.features.resize(static_cast<size_t>(out.count * input.numel()));
  x.read_floats(0, static_cast<int64_t>(out.features.size()), out.features.data());
  if (labels.empty()) return out;
  const training::NpyArray y = open(labels);
  const bool column = y.shape().size() == 2 && y.shape()[1] == 1;
  if ((y.shape().size() != 1 && !column) || y.shape()[0] != shape[0] ||
      (y.kind() != 'i' && y.kind() != 'u')) {
    throw Error(ErrorCode::kInvalidArgument, labels + ": expected the labels of " + path +
                                                 ", an integer array [" + std::to_string(shape[0]) +
                                                 "], got type " + y.dtype() + " of " +
                                                 std::to_string(y.shape().size()) + " dimensions");
  }
  for (int64_t i = 0; i < out.count; ++i) out.labels.push_back(static_cast<int32_t>(y.integer(i)));
  return out;
}

constexpr Flag kFlags[] = {
    {"--model", "DIR/MODEL[@ALIAS|/VERSION]", "DIR/MODEL, DIR/MODEL@ALIAS or DIR/MODEL/VERSION",
     kRequired},
    {"--input", "FILE",
     "Fashion-MNIST idx images (.gz), a CSV, an .npy of inputs [N, input...], a table's CSV/TSV, "
     "or an image folder's model's folder or PNG/JPEG file",
     kRequired},
    {"--labels", "FILE",
     "the labels: idx (default: the idx labels beside the images) or, for an .npy input, an .npy "
     "[N] of integers"},
    {"--limit", "N", "only the first N samples"},
    {"--output", "FILE", "write the probabilities there (default: stdout)"},
    {"--threads", "N", "the engine's threads (default 1)"},
};

}  // namespace

int run_predict(const std::vector<std::string>& args) {
  Flags flags(args, kFlags, "predict");
  const std::string model_spec = flags.require("--model");
  const std::string input = flags.require("--input");
  const int limit = flags.get_int("--limit", -1);
  const int threads = flags.get_int("--threads", 1);
  if (threads < 1) throw UsageError("tuner predict: --threads must be >= 1");

  const fs::path dir = model_directory(model_spec);
  registry::ServedModel model = registry::ServedModel::load(dir, threads);
  const int64_t numel = model.spec().input.numel();

  Inputs in;
  const bool csv = input.ends_with(".csv") || input.ends_with(".CSV");
  const bool tsv = input.ends_with(".tsv") || input.ends_with(".tab") || input.ends_with(".TSV");
  const bool npy = input.ends_with(".npy") || input.ends_with(".NPY");
  if (npy && !model.preprocessing().table) {
    in = read_npy(input, flags.get("--labels", ""), model.spec().input, limit);
  } else if (model.preprocessing().table) {
    if (!csv && !tsv) {
      throw UsageError("tuner predict: " + dir.string() +
                       " was trained on a table: give its rows as a CSV or TSV file with a "
                       "header (--input FILE.csv)");
    }
    if (flags.has("--labels")) {
      throw UsageError(
          "tuner predict: --labels is for idx images; a table's labels are its "
          "column \"" +
          model.preprocessing().table->label + "\"");
    }
    in = read_table(input, model, limit);
  } else if (model.preprocessing().image && !csv) {
    if (flags.has("--labels")) {
      throw UsageError(
          "tuner predict: --labels is for idx images; an image folder's labels are its "
          "sub-folders' names");
    }
    in = read_images(input, model, limit);
  } else if (csv) {
    in = read_features_csv(input, numel, limit);
  } else {
    const std::string labels = flags.get("--labels", labels_beside(input));
    if (labels.empty()) {
      throw UsageError("tuner predict: the idx images " + input +
                       " need their labels file: give --labels FILE");
    }
    training::Dataset data;
    try {
      data = training::read_idx(input, labels, limit);
    } catch (const training::DataError& e) {
      throw Error(ErrorCode::kInvalidArgument, e.what());
    }
    if (data.sample_numel() != numel) {
      throw Error(ErrorCode::kInvalidArgument,
                  input + ": samples of " + data.sample_shape().to_string() + ", the model takes " +
                      model.spec().input.to_string());
    }
    // read_idx scales the files' bytes to the loader's units (bytes / 255): a uint8 model takes
    // the bytes themselves, which times the divisor, rounded, gives back exactly.
    in.features.assign(data.features().begin(), data.features().end());
    if (model.preprocessing().input == registry::RawInput::kUint8) {
      const float divisor = model.preprocessing().divisor;
      for (float& v : in.features) v = std::round(v * divisor);
    }
    in.labels.assign(data.labels().begin(), data.labels().end());
    in.count = data.size();
  }
  if (in.count == 0) throw Error(ErrorCode::kInvalidArgument, input + ": no samples");
  try {
    model.preprocess(in.features);
  } catch (const Error& e) {
    throw Error(e.code(), input + ": " + e.what());
  }
  const std::vector<float> logits = model.forward(in.features);
  const int64_t k = model.spec().output.numel();

  std::ofstream file;
  const bool to_file = flags.has("--output");
  if (to_file) {
    file.open(flags.get("--output"));
    if (!file) throw Error(ErrorCode::kInvalidArgument, flags.get("--output") + ": cannot write");
  }
  std::ostream& out = to_file ? file : std::cout;
  std::ostream& summary = to_file ? std::cout : std::cerr;
  if (model.preprocessing().regression) {
    write_values(out, summary, in, logits, k, model);
    summary << "predicted " << in.count << " samples with " << dir.string() << "\n";
    return kExitOk;
  }
  // A model with class labels writes them (a table's: the label column's values), and names its
  // probability columns after them: p_<label>.
  const bool named = !model.preprocessing().class_labels.empty();
  out << "index,predicted";
  if (!in.labels.empty()) out << ",label";
  for (int64_t c = 0; c < k; ++c) {
    out << "," << (named ? csv_field("p_" + model.class_label(c)) : "p" + std::to_string(c));
  }
  out << "\n";
  int64_t correct = 0;
  std::vector<double> p(static_cast<size_t>(k));
  for (int64_t i = 0; i < in.count; ++i) {
    const float* row = logits.data() + i * k;
    const int64_t arg = std::max_element(row, row + k) - row;
    const double top = row[arg];
    double sum = 0;
    for (int64_t c = 0; c < k; ++c) sum += p[c] = std::exp(row[c] - top);
    out << i << "," << (named ? csv_field(model.class_label(arg)) : std::to_string(arg));
    if (!in.labels.empty()) {
      out << ","
          << (in.label_text.empty() ? std::to_string(in.labels[i])
                                    : csv_field(in.label_text[static_cast<size_t>(i)]));
      correct += in.labels[i] == arg ? 1 : 0;
    }
    for (int64_t c = 0; c < k; ++c) out << "," << format(p[c] / sum);
    out << "\n";
  }
  out.flush();
  if (!out) throw Error(ErrorCode::kUnavailable, "cannot write the predictions");
  summary << "predicted " << in.count << " samples with " << dir.string() << "\n";
  if (!in.labels.empty()) {
    const double accuracy = static_cast<double>(correct) / static_cast<double>(in.count);
    summary << "accuracy " << format(accuracy) << " (" << correct << "/" << in.count << ")\n";
    const nlohmann::json meta = nlohmann::json::parse(model.metadata_json(), nullptr, false);
    if (meta.is_object() && meta.contains("metrics") && meta["metrics"].contains("test_accuracy") &&
        meta["metrics"]["test_accuracy"].is_number()) {
      const double recorded = meta["metrics"]["test_accuracy"].get<double>();
      summary << "recorded test_accuracy of trial " << meta.value("trial", -1) << ": "
              << format(recorded)
              << (std::abs(recorded - accuracy) * static_cast<double>(in.count) < 0.5
                      ? " (the same)"
                      : " (differs)")
              << "\n";
    }
  }
  return kExitOk;
}

extern const Command kPredictCommand = {
    .name = "predict",
    .synopsis =
        "predict --model DIR/MODEL[@ALIAS|/VERSION] --input FILE [--labels FILE] [--limit N]\n"
        "        [--output FILE] [--threads N]",
    .description =
        "batch inference with the engine: idx images (.gz, labels\n"
        "found beside them) or a CSV of the model's raw inputs\n"
        "(pixels 0..255 for a Fashion-MNIST model) or an .npy\n"
        "array of them [N, input...]; for a model\n"
        "trained on a table, a CSV/TSV with its feature columns by\n"
        "name; for a model trained on an image folder, a folder of\n"
        "class sub-folders or one PNG/JPEG file; writes the\n"
        "predicted labels and class probabilities as CSV and\n"
        "prints the accuracy",
    .flags = kFlags,
    .run = &run_predict,
};

}  // namespace tuner::cli
