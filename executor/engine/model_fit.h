// Fitting an engine job's model to its data (internal to executor/): the model spec may leave
// its input shape and its number of classes (of targets, for a regression) to the data, and must
// fit the data's samples and classes or targets (docs/model_spec.md, "Shapes from the data").
//
// Thread safety: pure functions; safe from any thread.
#ifndef TUNER_EXECUTOR_ENGINE_MODEL_FIT_H_
#define TUNER_EXECUTOR_ENGINE_MODEL_FIT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "training/model_spec.h"
#include "training/task.h"
#include "training/tensor.h"

namespace tuner::engine {

// What a model must fit: one sample's shape and the classes (targets), as far as they are known.
struct DataShape {
  std::string name;        // for messages: "fashion-mnist", "iris.csv"
  training::Shape sample;  // rank 0: not known before loading
  int32_t classes = 0;     // classification and binary; 0: not known before loading
  int64_t targets = 0;     // regression: the values per sample; 0: not known before loading
  training::Task task = training::Task::kClassification;
};

// Whether `model` (a spec's JSON) leaves something to the data: it has no "input", or a member
// "out" (at any depth) is the string "classes" or "targets".
bool model_takes_data(const nlohmann::json& model);

// `model` with what the data tells filled in: "input" set to data.sample when absent (and the
// sample known), every "out": "classes" set to data.classes and "out": "targets" to
// data.targets (each when known).
nlohmann::json bind_model(nlohmann::json model, const DataShape& data);

// Refuses, as Error(kInvalidArgument) at `model_path`, an "out" that names what the task's data
// does not have: "targets" in a classification, "classes" in a regression.
void check_model_outs_fit_task(const nlohmann::json& model, training::Task task,
                               const std::string& model_path);

// A model spec parsed, its errors as Error(kInvalidArgument) under `model_path` ("job.model").
training::ModelSpec parse_model(const nlohmann::json& model, const std::string& model_path);

// Refuses a model whose input is not the data's sample shape or whose output is not [classes]
// ([targets] for a regression; each checked when known), as Error(kInvalidArgument) naming both:
// "job.model.input: [784] is not the shape of iris.csv's samples, [4]: ...",
// "job.model.layers[2]: the model's output is [3], but data.task is regression and y.csv has 1
// target: ...".
void check_model_fits_data(const training::ModelSpec& model, const DataShape& data,
                           const std::string& model_path);

}  // namespace tuner::engine

#endif  // TUNER_EXECUTOR_ENGINE_MODEL_FIT_H_
