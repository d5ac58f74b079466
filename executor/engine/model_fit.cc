#include "executor/engine/model_fit.h"

#include "executor/job_json.h"

namespace tuner::engine {

using job_json::fail;

namespace {

bool has_classes_out(const nlohmann::json& v) {
  if (v.is_object()) {
    for (const auto& [key, member] : v.items()) {
      if (key == "out" && member.is_string() && member.get<std::string>() == "classes") return true;
      if (has_classes_out(member)) return true;
    }
  } else if (v.is_array()) {
    for (const nlohmann::json& e : v) {
      if (has_classes_out(e)) return true;
    }
  }
  return false;
}

void bind_classes(nlohmann::json& v, int32_t classes) {
  if (v.is_object()) {
    for (auto& [key, member] : v.items()) {
      if (key == "out" && member.is_string() && member.get<std::string>() == "classes") {
        member = classes;
      } else {
        bind_classes(member, classes);
      }
    }
  } else if (v.is_array()) {
    for (nlohmann::json& e : v) bind_classes(e, classes);
  }
}

}  // namespace

bool model_takes_data(const nlohmann::json& model) {
  return (model.is_object() && !model.contains("input")) || has_classes_out(model);
}

nlohmann::json bind_model(nlohmann::json model, const DataShape& data) {
  if (!model.is_object()) return model;
  if (!model.contains("input") && data.sample.rank() > 0) {
    nlohmann::json dims = nlohmann::json::array();
    for (int64_t d : data.sample.dims()) dims.push_back(d);
    model["input"] = dims;
  }
  if (data.classes > 0) bind_classes(model, data.classes);
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
  if (data.classes > 0 && !(model.output == training::Shape{data.classes})) {
    const std::string last =
        model.layers.empty() ? model_path : model_path + "." + model.layers.back().path;
    const std::string want = "[" + std::to_string(data.classes) + "]";
    if (model.output.rank() == 1) {
      fail(last, "the model's output is " + model.output.to_string() + ", but " + name + " has " +
                     std::to_string(data.classes) + " classes: the last layer must give " + want +
                     " (one logit per class)");
    }
    fail(last, "the model's output is " + model.output.to_string() + ", but " + name + "'s " +
                   std::to_string(data.classes) + " classes need " + want +
                   " (one logit per class): end the model with {\"type\": \"flatten\"} and "
                   "{\"type\": \"linear\", \"out\": " +
                   std::to_string(data.classes) + "}");
  }
}

}  // namespace tuner::engine
