// tuner registry list|show|alias|tag|delete ... --registry DIR: the model registry
// (docs/registry.md).
#include <iostream>
#include <sstream>

#include "cli/command.h"
#include "registry/registry.h"
#include "trials/error.h"

namespace tuner::cli {

namespace {

std::string number(std::optional<double> v) {
  if (!v) return "-";
  std::ostringstream s;
  s.precision(6);
  s << *v;
  return s.str();
}

std::string aliases_of(const registry::RegisteredModel& m, int version) {
  std::string out;
  for (const auto& [alias, v] : m.aliases) {
    if (v == version) out += (out.empty() ? "" : ",") + alias;
  }
  return out;
}

int version_number(const std::string& text, const std::string& command) {
  size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || v < 1) {
    throw UsageError("tuner registry " + command + ": '" + text + "' is not a version number");
  }
  return v;
}

void print_version(const registry::RegisteredModel& m, const registry::ModelVersion& v,
                   const std::filesystem::path& dir) {
  std::cout << m.name << "/" << v.version;
  if (const std::string a = aliases_of(m, v.version); !a.empty()) std::cout << " @" << a;
  std::cout << "\n  created: " << v.created << " UTC\n"
            << "  study: " << v.lineage.study << ", trial " << v.lineage.trial;
  if (!v.lineage.storage.empty()) std::cout << " (" << v.lineage.storage << ")";
  std::cout << "\n  metric: " << v.metric << " = " << number(v.metric_value) << " ("
            << (v.maximize ? "maximize" : "minimize") << ")\n"
            << "  path: " << dir.string() << "\n";
  if (v.user_model) {
    std::string flavors;
    for (const std::string& f : v.flavors) flavors += (flavors.empty() ? "" : ", ") + f;
    std::cout << "  model: the trial's own "
              << (*v.user_model == registry::UserModelFormat::kOnnx ? "ONNX file" : "MLflow model")
              << " (flavors " << (flavors.empty() ? "none named" : flavors) << "), from "
              << v.source << "; MLflow serves it, tuner predict does not\n";
  }
  if (!v.description.empty()) std::cout << "  description: " << v.description << "\n";
  for (const auto& [k, text] : v.lineage.params)
    std::cout << "  param " << k << " = " << text << "\n";
  for (const auto& [k, x] : v.lineage.metrics)
    std::cout << "  metric " << k << " = " << number(x) << "\n";
  for (const auto& [k, x] : v.tags) std::cout << "  tag " << k << " = " << x << "\n";
  if (const auto& p = v.promotion) {
    std::cout << "  promotion: " << (p->promoted ? "promoted" : "not promoted") << " (" << p->reason
              << ")\n";
    for (const registry::LimitCheck& c : p->limits) {
      std::cout << "  limit " << registry::to_string(c.limit) << ": " << c.limit.metric << " = "
                << number(c.value) << (c.met ? " (met)" : " (broken)") << "\n";
    }
  }
}

constexpr Flag kFlags[] = {
    {"--registry", "DIR", "the registry directory", kRequired},
};

}  // namespace

int run_registry(const std::vector<std::string>& args) {
  Flags flags(args, kFlags, "registry", Positional::kAccepted);
  const std::vector<std::string>& pos = flags.positional();
  if (pos.empty()) {
    throw UsageError("tuner registry: say list, show, alias, tag or delete; see 'tuner help'");
  }
  const std::string sub = pos[0];
  const std::string dir = flags.require("--registry");
  auto need = [&](size_t n, const char* synopsis) {
    if (pos.size() != n) throw UsageError(std::string("tuner registry ") + synopsis);
  };
  registry::RegistryOptions options;
  options.warn = [](const std::string& message) { std::cerr << "warning: " << message << "\n"; };
  registry::Registry reg = registry::Registry::open(dir, /*create=*/false, options);

  if (sub == "list") {
    need(1, "list --registry DIR");
    const std::vector<std::string> names = reg.model_names();
    if (names.empty()) std::cout << "no registered models in " << dir << "\n";
    for (const std::string& name : names) {
      const registry::RegisteredModel m = reg.model(name);
      std::cout << name << ": " << m.versions.size() << " version"
                << (m.versions.size() == 1 ? "" : "s");
      if (!m.versions.empty()) std::cout << ", latest " << m.versions.back().version;
      for (const auto& [alias, v] : m.aliases) std::cout << ", @" << alias << " -> " << v;
      std::cout << "\n";
    }
  } else if (sub == "show") {
    need(2, "show MODEL[@ALIAS|/VERSION] --registry DIR");
    const std::string& ref = pos[1];
    if (ref.find('@') == std::string::npos && ref.find('/') == std::string::npos) {
      const registry::RegisteredModel m = reg.model(ref);
      std::cout << "model " << m.name << " (created " << m.created << " UTC)\n";
      if (!m.description.empty()) std::cout << "  description: " << m.description << "\n";
      for (const auto& [k, x] : m.tags) std::cout << "  tag " << k << " = " << x << "\n";
      for (const registry::ModelVersion& v : m.versions) {
        std::cout << "  version " << v.version << ": study " << v.lineage.study << ", trial "
                  << v.lineage.trial << ", " << v.metric << " " << number(v.metric_value);
        if (const std::string a = aliases_of(m, v.version); !a.empty()) std::cout << " @" << a;
        std::cout << "\n";
      }
    } else {
      const registry::ResolvedVersion r = reg.resolve(ref);
      print_version(r.model, r.version, r.dir);
    }
  } else if (sub == "alias") {
    need(4, "alias MODEL VERSION ALIAS --registry DIR");
    const int v = version_number(pos[2], "alias");
    reg.set_alias(pos[1], v, pos[3]);
    std::cout << pos[1] << "@" << pos[3] << " -> version " << v << "\n";
  } else if (sub == "tag") {
    need(5, "tag MODEL VERSION KEY VALUE --registry DIR");
    const int v = version_number(pos[2], "tag");
    reg.set_tag(pos[1], v, pos[3], pos[4]);
    std::cout << pos[1] << "/" << v << ": " << pos[3] << " = " << pos[4] << "\n";
  } else if (sub == "delete") {
    need(2, "delete MODEL[/VERSION] --registry DIR");
    const std::string& ref = pos[1];
    if (const size_t slash = ref.find('/'); slash != std::string::npos) {
      const std::string name = ref.substr(0, slash);
      const int v = version_number(ref.substr(slash + 1), "delete");
      reg.delete_version(name, v);
      std::cout << "deleted " << name << "/" << v << "\n";
    } else {
      reg.delete_model(ref);
      std::cout << "deleted model " << ref << "\n";
    }
  } else {
    throw UsageError("tuner registry: unknown subcommand '" + sub +
                     "' (list, show, alias, tag, delete)");
  }
  return kExitOk;
}

extern const Command kRegistryCommand = {
    .name = "registry",
    .synopsis =
        "registry list | show MODEL[@ALIAS|/VERSION] | alias MODEL VERSION ALIAS |\n"
        "         tag MODEL VERSION KEY VALUE | delete MODEL[/VERSION]  --registry DIR",
    .description = "the registered models, their versions and aliases",
    .flags = kFlags,
    .run = &run_registry,
};

}  // namespace tuner::cli
