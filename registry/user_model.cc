#include "registry/user_model.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "onnx/onnx_pb.h"
#include "registry/file_util.h"
#include "registry/onnx_flavor.h"
#include "trials/error.h"
#include "util/files.h"

namespace tuner::registry {

namespace fs = std::filesystem;

namespace {

constexpr char kMlmodelFile[] = "MLmodel";
// How far below a trial's folder models are looked for.
constexpr int kMaxModelDepth = 4;

bool is_onnx_name(const fs::path& path) {
  std::string extension = path.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension == ".onnx";
}

bool holds_mlmodel(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kMlmodelFile, ec);
}

std::vector<std::string> flavors_of(const fs::path& dir) {
  try {
    return mlmodel_flavors(read_file(dir / kMlmodelFile));
  } catch (const std::exception&) {
    return {};
  }
}

// The indentation of a YAML line (spaces), or -1 for a blank or comment line.
int indentation(const std::string& line) {
  const size_t first = line.find_first_not_of(' ');
  if (first == std::string::npos || line[first] == '#') return -1;
  return static_cast<int>(first);
}

// "sklearn:" -> "sklearn"; "'a b': x" -> "a b"; empty when the line is no mapping key.
std::string yaml_key(const std::string& line) {
  std::string text = line.substr(line.find_first_not_of(' '));
  if (!text.empty() && (text[0] == '\'' || text[0] == '"')) {
    const size_t close = text.find(text[0], 1);
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') return {};
    return text.substr(1, close - 1);
  }
  const size_t colon = text.find(':');
  if (colon == std::string::npos || colon == 0 || text[0] == '-') return {};
  if (colon + 1 < text.size() && text[colon + 1] != ' ') return {};
  return text.substr(0, colon);
}

// The ONNX file read and checked to be an ONNX model.
std::string read_onnx(const fs::path& path) {
  std::string bytes = read_file(path);
  onnx::ModelProto proto;
  if (bytes.empty() || !proto.ParseFromString(bytes) || proto.ir_version() <= 0 ||
      !proto.has_graph()) {
    throw Error(ErrorCode::kInvalidArgument,
                path.string() +
                    ": not an ONNX model (it does not parse as an ONNX ModelProto "
                    "with a graph)");
  }
  return bytes;
}

}  // namespace

std::string_view to_string(UserModelFormat format) {
  return format == UserModelFormat::kOnnx ? "onnx" : "mlflow";
}

std::optional<UserModelFormat> parse_user_model_format(std::string_view text) {
  if (text == "mlflow") return UserModelFormat::kMlflow;
  if (text == "onnx") return UserModelFormat::kOnnx;
  return std::nullopt;
}

std::vector<std::string> mlmodel_flavors(const std::string& mlmodel_text) {
  std::vector<std::string> flavors;
  std::istringstream lines(mlmodel_text);
  bool inside = false;
  int child_indent = -1;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const int indent = indentation(line);
    if (indent < 0) continue;
    if (indent == 0) {
      if (inside) break;  // the next top-level key
      inside = yaml_key(line) == "flavors";
      continue;
    }
    if (!inside) continue;
    if (child_indent < 0) child_indent = indent;
    if (indent != child_indent) continue;
    if (std::string key = yaml_key(line); !key.empty()) flavors.push_back(std::move(key));
  }
  return flavors;
}

UserModel read_user_model(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    throw Error(ErrorCode::kNotFound, path.string() + ": no such file or directory");
  }
  if (fs::is_directory(path, ec)) {
    if (!holds_mlmodel(path)) {
      throw Error(ErrorCode::kInvalidArgument,
                  path.string() +
                      ": not an MLflow model directory (it has no MLmodel file); a model is an "
                      "MLflow model directory (mlflow.<flavor>.save_model) or an .onnx file");
    }
    return {UserModelFormat::kMlflow, path, flavors_of(path)};
  }
  if (fs::is_regular_file(path, ec) && is_onnx_name(path)) {
    return {UserModelFormat::kOnnx, path, {"onnx", "python_function"}};
  }
  throw Error(ErrorCode::kInvalidArgument,
              path.string() +
                  ": not a model: a model is an MLflow model directory "
                  "(mlflow.<flavor>.save_model) or an .onnx file");
}

std::vector<UserModel> find_user_models(const fs::path& folder) {
  std::vector<UserModel> models;
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return models;
  if (holds_mlmodel(folder)) {
    models.push_back({UserModelFormat::kMlflow, folder, flavors_of(folder)});
    return models;
  }
  fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code entry_ec;
    if (it->is_directory(entry_ec)) {
      if (holds_mlmodel(it->path())) {
        models.push_back({UserModelFormat::kMlflow, it->path(), flavors_of(it->path())});
        it.disable_recursion_pending();
      } else if (it.depth() + 1 >= kMaxModelDepth) {
        it.disable_recursion_pending();
      }
    } else if (it->is_regular_file(entry_ec) && is_onnx_name(it->path())) {
      models.push_back({UserModelFormat::kOnnx, it->path(), {"onnx", "python_function"}});
    }
  }
  std::sort(models.begin(), models.end(),
            [](const UserModel& a, const UserModel& b) { return a.path < b.path; });
  return models;
}

void write_user_model(const UserModel& model, const Lineage& lineage, const fs::path& out,
                      const MlflowModelOptions& options) {
  if (fs::exists(out)) {
    throw Error(ErrorCode::kAlreadyExists,
                out.string() + ": exists; an MLflow model is written to a new directory only");
  }
  // Checked before anything is written: a file that is no model costs nothing.
  const UserModel checked = read_user_model(model.path);
  std::string onnx_bytes;
  if (checked.format == UserModelFormat::kOnnx) onnx_bytes = read_onnx(checked.path);
  TempDir tmp = TempDir::beside(out);
  const fs::path& dir = tmp.path();
  if (checked.format == UserModelFormat::kMlflow) {
    std::error_code ec;
    // Into the (empty) temporary directory; links are followed, so the copy stands alone.
    fs::copy(checked.path, dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing,
             ec);
    if (ec) {
      throw Error(ErrorCode::kUnavailable, "cannot copy the MLflow model " + checked.path.string() +
                                               " to " + dir.string() + ": " + ec.message());
    }
  } else {
    Json metadata = lineage_metadata(lineage, options);
    metadata["model_format"] = std::string(to_string(UserModelFormat::kOnnx));
    metadata["source"] = fs::absolute(checked.path).string();
    write_onnx_flavor_files(dir, metadata, Json(nullptr), options);
    write_file(dir / "model.onnx", onnx_bytes);
  }
  if (options.before_publish) options.before_publish(dir);
  tmp.publish(out);
}

}  // namespace tuner::registry
