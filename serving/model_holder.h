// ModelHolder: the model the server answers with, and the reference it was named by
// (registry/model_reference.h). A reference that can move (MODEL@ALIAS, or MODEL: the champion,
// else the latest version) is resolved again by reload(); when it names another version, that
// version is loaded and becomes current. Requests that already hold the old model finish with
// it: a promotion drops none.
//
// Thread safety: current() and reload() from any thread; reloads are serialized.
#ifndef TUNER_SERVING_MODEL_HOLDER_H_
#define TUNER_SERVING_MODEL_HOLDER_H_

#include <memory>
#include <mutex>
#include <string>

#include "registry/model_reference.h"
#include "serving/loaded_model.h"

namespace tuner::serving {

class ModelHolder {
 public:
  // Loads the model `spec` names, its forward passes on `threads` threads. Throws what
  // Registry::open and resolve and ServedModel::load throw (Error naming what is missing or
  // corrupt).
  ModelHolder(const std::string& spec, int threads);

  std::shared_ptr<LoadedModel> current() const;
  // Whether reload() can ever find another version.
  bool can_move() const { return reference_.can_move(); }
  const std::string& spec() const { return spec_; }

  // Resolves the reference again. Returns the model it now names when that is another version
  // (loaded, and current from now on), else nullptr. Throws as the constructor does; the
  // current model stays.
  std::shared_ptr<LoadedModel> reload();

 private:
  // Constant after construction.
  const std::string spec_;
  const registry::ModelReference reference_;
  const int threads_;

  std::mutex reload_mutex_;  // one reload at a time
  mutable std::mutex mutex_;
  std::shared_ptr<LoadedModel> current_;  // protected by mutex_
};

}  // namespace tuner::serving

#endif  // TUNER_SERVING_MODEL_HOLDER_H_
