#include "serving/model_holder.h"

#include "registry/registry.h"

namespace tuner::serving {

namespace {

struct Named {
  std::filesystem::path dir;
  std::string name;
  std::optional<int> version;
};

Named resolve(const registry::ModelReference& reference) {
  if (!reference.directory.empty()) {
    return {reference.directory, reference.directory.filename().string(), std::nullopt};
  }
  const registry::ResolvedVersion resolved =
      registry::Registry::open(reference.registry, /*create=*/false).resolve(reference.ref);
  return {resolved.dir, resolved.model.name, resolved.version.version};
}

std::shared_ptr<LoadedModel> load(const Named& named, int threads) {
  return std::make_shared<LoadedModel>(LoadedModel{registry::ServedModel::load(named.dir, threads),
                                                   named.name, named.version, named.dir});
}

}  // namespace

ModelHolder::ModelHolder(const std::string& spec, int threads)
    : spec_(spec), reference_(registry::parse_model_reference(spec)), threads_(threads) {
  current_ = load(resolve(reference_), threads_);
}

std::shared_ptr<LoadedModel> ModelHolder::current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_;
}

std::shared_ptr<LoadedModel> ModelHolder::reload() {
  if (!can_move()) return nullptr;
  std::lock_guard<std::mutex> reloading(reload_mutex_);
  const Named named = resolve(reference_);
  const std::shared_ptr<LoadedModel> served = current();
  if (named.dir == served->dir && named.version == served->version) return nullptr;
  std::shared_ptr<LoadedModel> fresh = load(named, threads_);  // outside mutex_: requests go on
  std::lock_guard<std::mutex> lock(mutex_);
  current_ = fresh;
  return fresh;
}

}  // namespace tuner::serving
