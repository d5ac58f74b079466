#include "executor/engine/model_fit.h"

#include "executor/job_json.h"

namespace tuner::engine {

using job_json::fail;

namespace {

// Whether a member "out" (at any depth) is the string `name`.
bool has_out(const nlohmann::json& v, std::string_view name) {
  if (v.is_object()) {
    for (const auto& [key, member] : v.items()) {
      if (key == "out" && member.is_string() && member.get<std::string>() == name) return true;
      if (has_out(member, name)) return true;
    }
  } else if (v.is_array()) {
    for (const nlohmann::json& e : v) {
      if (has_out(e, name)) return true;
    }
  }
  return false;
}

// Every "out": `name` set to `value`.
void bind_out(nlohmann::json& v, std::string_view name, int64_t value) {
  if (v.is_object()) {
    for (auto& [key, member] : v.items()) {
      if (key == "out" && member.is_string() && member.get<std::string>() == name) {
        member = value;
      } else {
        bind_out(member, name, value);
      }
    }
  } else if (v.is_array()) {
    for (nlohmann::json& e : v) bind_out(e, name, value);
  }
}

}  // namespace

bool model_takes_data(const nlohmann::json& model) {
  return (model.is_object() && !model.contains("input")) || has_out(model, "classes") ||
         has_out(model, "targets");
}

void check_model_outs_fit_task(const nlohmann::json& model, training::Task task,
                               const std::string& model_path) {
  const bool regression = task == training::Task::kRegression;
  const std::string_view other = regression ? "classes" : "targets";
  if (has_out(model, other)) {
    fail(model_path, "a layer's \"out\": \"" + std::string(other) + "\" does not fit data.task \"" +
                         std::string(training::task_name(task)) + "\" (whose data has " +
                         (regression ? "targets: use \"out\": \"targets\")"
                                     : "classes: use \"out\": \"classes\", or set data.task "
                                       "to \"regression\")"));
  }
}

nlohmann::json bind_model(nlohmann::json model, const DataShape& data) {
  if (!model.is_object()) return model;
  if (!model.contains("input") && data.sample.rank() > 0) {
    nlohmann::json dims = nlohmann::json::array();
    for (int64_t d : data.sample.dims()) dims.push_back(d);
    model["input"] = dims;
  }
  if (data.classes > 0) bind_out(model, "classes", data.classes);
  if (data.targets > 0) bind_out(model, "targets", data.targets);
  return model;
}

training::ModelSpec parse_model(const nlohmann::json& model, const std::string& model_path) {
  try {
    return training::parse_model_spec(model.dump());
  } catch (const training::SpecError& e) {
    const bool at_root = e.path().empty() || e.path().front() == '(';
    fail(at_root ? model_path : model_path + "." + e.path(), e.reason());
  }
}

void check_model_fits_data(const training::ModelSpec& model, const DataShape& data,
                           const std::string& model_path) {
  const std::string& name = data.name;
  if (data.sample.rank() > 0 && !(model.input == data.sample)) {
    fail(model_path + ".input", model.input.to_string() + " is not the shape of " + name +
                                    "'s samples, " + data.sample.to_string() +
                                    ": make the model's input " + data.sample.to_string());
  }
  const std::string last =
      model.layers.empty() ? model_path : model_path + "." + model.layers.back().path;
  if (data.task == training::Task::kRegression) {
    const training::LayerSpec* end = model.layers.empty() ? nullptr : &model.layers.back();
    if (end == nullptr || end->type != "linear" || !end->bias ||
        end->activation != training::Activation::kNone) {
      fail(last,
           "data.task is regression: the model must end with a linear layer with a bias "
           "and no activation (it predicts the standardized targets, which an export "
           "turns back into the label's units by scaling that layer)");
    }
    if (data.targets > 0 && !(model.output == training::Shape{data.targets})) {
      const std::string n = std::to_string(data.targets);
      fail(last, "the model's output is " + model.output.to_string() +
                     ", but data.task is regression and " + name + " has " + n + " target" +
                     (data.targets == 1 ? "" : "s") + ": the last layer must give [" + n +
                     "] (one value per target; \"out\": \"targets\")");
    }
    return;
  }
  if (data.task == training::Task::kBinary && !(model.output == training::Shape{2})) {
    fail(last, "the model's output is " + model.output.to_string() +
                   ", but data.task is binary: the last layer must give [2] (one logit per "
                   "class; \"out\": \"classes\")");
  }
  if (data.classes > 0 && !(model.output == training::Shape{data.classes})) {
    const std::string want = "[" + std::to_string(data.classes) + "]";
    if (model.output.rank() == 1) {
      fail(last, "the model's output is " + model.output.to_string() + ", but " + name + " has " +
                     std::to_string(data.classes) + " classes: the last layer must give " + want +
                     " (one logit per class)" +
                     (model.output == training::Shape{1}
                          ? "; a model of one output is a regression's: set data.task to "
                            "\"regression\" to predict a value"
                          : ""));
    }
    fail(last, "the model's output is " + model.output.to_string() + ", but " + name + "'s " +
                   std::to_string(data.classes) + " classes need " + want +
                   " (one logit per class): end the model with {\"type\": \"flatten\"} and "
                   "{\"type\": \"linear\", \"out\": " +
                   std::to_string(data.classes) + "}");
  }
}

}  // namespace tuner::engine
