// training.init_from of an engine job (internal to executor/): the weights a trial starts from,
// read from a checkpoint file, an ONNX file or a registered model, and loaded into the trial's
// model layer by layer (training/init_from.h). docs/engine_jobs.md, "Starting from weights", is the
// contract.
//
// Thread safety: pure functions over files; safe from any thread.
#ifndef TUNER_EXECUTOR_ENGINE_INIT_SOURCE_H_
#define TUNER_EXECUTOR_ENGINE_INIT_SOURCE_H_

#include <nlohmann/json.hpp>
#include <string>

#include "executor/engine/job_spec.h"
#include "training/checkpoint.h"
#include "training/init_from.h"
#include "training/model_spec.h"
#include "training/parameter_arena.h"

namespace tuner::engine {

// The weights init_from names, read.
struct InitSource {
  // For messages: the reference as given, and the file read when it is not that
  // ("runs/registry/fmnist@champion (version 3, runs/registry/fmnist/3/engine/model.ckpt)").
  std::string name;
  training::Checkpoint weights;  // its model spec, parameters and buffers
};

// Reads `init_from`: a checkpoint file (training/checkpoint.h: a trial's model.ckpt or
// resume.ckpt), an ONNX file (*.onnx: the engine's export, or PyTorch's of the operators
// training/export/onnx_import.h reads), an MLflow model directory (an engine model's
// engine/model.ckpt, else its model.onnx), or a registered model "REGISTRY/NAME@ALIAS",
// "REGISTRY/NAME/VERSION" or "REGISTRY/NAME" (its champion, else its latest version;
// registry/model_reference.h): an engine model's checkpoint, or a trial's own ONNX file. Throws
// Error whose message starts with `path` (the member's JSON path) and names the source: kNotFound
// for no such file, registry, model, alias or version; kDataLoss for a file that is not a
// readable checkpoint; kInvalidArgument for an ONNX graph the engine cannot read (naming the node)
// or a version holding another kind of model (a trial's own MLflow model).
InitSource read_init_source(const std::string& init_from, const std::string& path);

// Checks that the source's weights fit the model of `spec` (replace_head: all but its last layer
// with weights). Throws Error(kInvalidArgument) "PATH: SOURCE: layer with weights 2 does not
// match: ...", with a hint to set replace_head when only the last layer differs.
void check_init_source(const InitSource& source, const training::ModelSpec& spec, bool replace_head,
                       const std::string& path);

// Loads the source's weights into `arena`, the arena of a model built from `spec`. Errors as
// check_init_source; the arena is unchanged then.
training::InitFromResult load_init_source(const InitSource& source, const training::ModelSpec& spec,
                                          training::ParameterArena& arena, bool replace_head,
                                          const std::string& path);

// The model of a job whose "model" is {"from": "init_from"} (docs/engine_jobs.md, "The model of
// the weights"): the source's own model spec, as its checkpoint or ONNX graph holds it; with
// config.replace_head its last layer with weights gets "out": "classes" ("targets" for `task`
// regression), which the data then sets. Its JSON, not bound to the data. Errors are
// Error(kInvalidArgument) naming the source: at `where`.training.replace_head, a last layer with
// weights that has no "out" (a normalization, a residual block); at `where`.training.freeze or
// .lr_factors, more entries than the source's model.layers.
nlohmann::json source_model(const InitSource& source, const EngineTrialConfig& config,
                            training::Task task, const std::string& where);

// The check of a job's init_from before any trial runs (a sweep file's load): when
// training.init_from is not a placeholder, reads it, and when the job's model has no placeholders
// and replace_head is not one, checks that its weights fit (a model that leaves its input or its
// number of outputs to the data's files takes the source's for the check). A job whose model is
// {"from": "init_from"} gets source_model's, checked against the data as far as it is known
// (spec.files_shape included), a misfit's message saying whose model it is. Errors as
// read_init_source and check_init_source, `where` + ".training.init_from" the path. Nothing is
// checked for a job without init_from.
void check_engine_init_from(const EngineJobSpec& spec, const std::string& where = "job");

}  // namespace tuner::engine

#endif  // TUNER_EXECUTOR_ENGINE_INIT_SOURCE_H_
