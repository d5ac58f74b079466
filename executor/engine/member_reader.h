// MemberReader: the typed reads of one object's members in an engine job (internal to
// executor/). A member may be a placeholder "{NAME}" (placeholders.h): while the job is a
// template (no trial yet) a placeholder reads as absent, its type unknown; a member that cannot
// be one refuses it. Every error is Error(kInvalidArgument) naming the member's JSON path, worded
// by trials/json_reader.h ("job.training.lr: expected a number > 0, got -1").
//
// Borrows the object, which must outlive the reader. Constant after construction; safe from any
// thread.
#ifndef TUNER_EXECUTOR_ENGINE_MEMBER_READER_H_
#define TUNER_EXECUTOR_ENGINE_MEMBER_READER_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trials/json_reader.h"
#include "util/strings.h"

namespace tuner::engine {

class MemberReader {
 public:
  // `path` is the object's JSON path ("job.training"); `templated`: no trial yet, placeholders
  // stay unread.
  MemberReader(const nlohmann::json& object, std::string path, bool templated)
      : object_(object), path_(std::move(path)), templated_(templated) {}

  // Refuses members not in `known`: "<path>.<key>: unknown member (<what> has a, b, c)".
  void only(const std::vector<std::string_view>& known, std::string_view what) const;

  // Each read gives nullopt when the member is absent (the caller keeps its default) or a
  // placeholder of a template; `placeholder_ok` false refuses a placeholder.
  // An integer >= min.
  std::optional<int64_t> integer(const std::string& key, int64_t min,
                                 bool placeholder_ok = true) const;
  // A finite number in `range`.
  std::optional<double> number(const std::string& key, const NumberRange& range) const;
  // One of `choices`.
  std::optional<std::string> choice(const std::string& key, const std::vector<std::string>& choices,
                                    bool placeholder_ok = true) const;
  // A string; never a placeholder.
  std::optional<std::string> string(const std::string& key) const;

 private:
  const nlohmann::json* get(const std::string& key, bool placeholder_ok) const;

  // Constant after construction.
  const nlohmann::json& object_;
  const std::string path_;
  const bool templated_;
};

// The object `root[key]` (`path` is its JSON path): an error when it is not an object, or when
// it is absent and `required`; an empty object when absent otherwise.
const nlohmann::json& object_member(const nlohmann::json& root, const std::string& key,
                                    const std::string& path, bool required);

}  // namespace tuner::engine

#endif  // TUNER_EXECUTOR_ENGINE_MEMBER_READER_H_
