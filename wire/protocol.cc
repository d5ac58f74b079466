#include "wire/protocol.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <type_traits>

#include "trials/hex.h"
#include "trials/json_depth.h"
#include "trials/params_json.h"

namespace tuner {

namespace {

using OrderedJson = nlohmann::ordered_json;

// Bodies are flat records; deeper nesting is refused before parsing.
constexpr int kMaxBodyDepth = 32;

// ----------------------------------------------------------------------------------------------
// Encoding

void put_u16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v & 0xff));
}

OrderedJson double_json(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

OrderedJson metrics_json(const Metrics& metrics) {
  OrderedJson object = OrderedJson::object();
  for (const auto& [name, value] : metrics) object[name] = double_json(value);
  return object;
}

template <typename T>
OrderedJson optional_json(const std::optional<T>& v) {
  return v ? OrderedJson(*v) : OrderedJson(nullptr);
}

// Store keys and values within their bounds (both sides check: encode and decode).
void check_store_entry(const std::string& path, std::string_view key, std::string_view value) {
  if (key.empty() || key.size() > kMaxStoreKeyBytes) {
    throw ProtocolError(path + ".key: expected 1 to " + std::to_string(kMaxStoreKeyBytes) +
                        " bytes, got " + std::to_string(key.size()));
  }
  if (value.size() > kMaxStoreValueBytes) {
    throw ProtocolError(path + ".value: " + std::to_string(value.size()) +
                        " bytes exceed the limit of " + std::to_string(kMaxStoreValueBytes));
  }
}

// Base64 (RFC 4648, standard alphabet, padded): FILE chunks' data.
constexpr char kBase64Digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string to_base64(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  auto byte = [&](size_t at) {
    return static_cast<uint32_t>(static_cast<unsigned char>(bytes[at]));
  };
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    for (int shift : {18, 12, 6, 0}) out.push_back(kBase64Digits[(v >> shift) & 63]);
  }
  if (const size_t rest = bytes.size() - i; rest > 0) {
    const uint32_t v = byte(i) << 16 | (rest == 2 ? byte(i + 1) << 8 : 0);
    out.push_back(kBase64Digits[(v >> 18) & 63]);
    out.push_back(kBase64Digits[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kBase64Digits[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

// The bytes of canonical base64 text (as to_base64 writes it); nullopt for anything else.
std::optional<std::string> from_base64(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int padding = last ? (text[i + 3] == '=') + (text[i + 2] == '=') : 0;
    if (padding == 1 && text[i + 2] == '=') return std::nullopt;  // "x=" before a digit
    uint32_t v = 0;
    for (int k = 0; k < 4 - padding; ++k) {
      const int d = digit(text[i + static_cast<size_t>(k)]);
      if (d < 0) return std::nullopt;
      v |= static_cast<uint32_t>(d) << (18 - 6 * k);
    }
    // Bits beyond the last byte must be zero: one text per byte string.
    if ((padding == 1 && (v & 0xff) != 0) || (padding == 2 && (v & 0xffff) != 0)) {
      return std::nullopt;
    }
    out.push_back(static_cast<char>(v >> 16));
    if (padding < 2) out.push_back(static_cast<char>((v >> 8) & 0xff));
    if (padding < 1) out.push_back(static_cast<char>(v & 0xff));
  }
  return out;
}

std::optional<TrialFileKind> parse_file_kind(std::string_view name) {
  if (name == "log") return TrialFileKind::kLog;
  if (name == "artifact") return TrialFileKind::kArtifact;
  return std::nullopt;
}

// A FILE chunk's or FILE_ACK's path for its kind: "" for a log, a trial folder's path for an
// artifact. Empty when fine, else the problem.
std::string file_path_problem(TrialFileKind kind, std::string_view path) {
  if (kind == TrialFileKind::kLog) return path.empty() ? "" : "a log's path must be empty";
  return trial_file_path_problem(path);
}

// A FILE chunk within its bounds (both sides check: encode and decode). Empty when fine.
std::string file_chunk_problem(const FileChunkMessage& m) {
  if (std::string problem = file_path_problem(m.kind, m.path); !problem.empty()) {
    return ".path: " + problem;
  }
  if (m.checkpoint) {
    if (m.kind != TrialFileKind::kArtifact) return ".checkpoint: a log is no checkpoint's file";
    if (std::string problem = checkpoint_file_problem(m.path); !problem.empty()) {
      return ".path: " + problem;
    }
  }
  if (m.data.size() > kMaxFileChunkBytes) {
    return ".data: " + std::to_string(m.data.size()) + " bytes exceed the limit of " +
           std::to_string(kMaxFileChunkBytes);
  }
  if (m.offset > m.size || m.data.size() > m.size - m.offset) {
    return ": bytes " + std::to_string(m.offset) + " to " +
           std::to_string(m.offset + m.data.size()) + " are beyond the file's size " +
           std::to_string(m.size);
  }
  return "";
}

std::optional<CheckpointOf> parse_checkpoint_of(std::string_view name) {
  if (name == "start") return CheckpointOf::kStart;
  if (name == "own") return CheckpointOf::kOwn;
  return std::nullopt;
}

// A CHECKPOINT_DATA within its bounds (both sides check). Empty when fine.
std::string checkpoint_data_problem(const CheckpointDataMessage& m) {
  if (std::string problem = checkpoint_file_problem(m.file); !problem.empty()) {
    return ".file: " + problem;
  }
  if (m.data.size() > kMaxFileChunkBytes) {
    return ".data: " + std::to_string(m.data.size()) + " bytes exceed the limit of " +
           std::to_string(kMaxFileChunkBytes);
  }
  if (!m.found && !m.data.empty()) return ".data: a file not found has no data";
  if (m.offset > m.size || m.data.size() > m.size - m.offset) {
    return ": bytes " + std::to_string(m.offset) + " to " +
           std::to_string(m.offset + m.data.size()) + " are beyond the file's size " +
           std::to_string(m.size);
  }
  return "";
}

struct BodyWriter {
  OrderedJson operator()(const HelloMessage& m) const {
    OrderedJson gpus = OrderedJson::array();
    for (const auto& g : m.resources.gpus) {
      gpus.push_back({{"index", g.index}, {"name", g.name}, {"memory_bytes", g.memory_bytes}});
    }
    OrderedJson leases = OrderedJson::array();
    for (const auto& l : m.leases) {
      OrderedJson lease = {{"lease_id", l.lease_id},
                           {"study_name", l.study_name},
                           {"trial_id", l.trial_id},
                           {"gpus", l.gpus}};
      if (l.node != 0) lease["node"] = l.node;
      leases.push_back(std::move(lease));
    }
    return {{"executor_id", m.executor_id},
            {"hostname", m.hostname},
            {"pid", m.pid},
            {"resources", {{"cpu_slots", m.resources.cpu_slots}, {"gpus", gpus}}},
            {"leases", leases}};
  }
  OrderedJson operator()(const ReadyMessage& m) const {
    return {{"free_slots", m.free_slots}, {"free_gpus", m.free_gpus}};
  }
  OrderedJson operator()(const TrialMessage& m) const {
    std::string params;
    try {
      params = params_to_json(m.params);
    } catch (const Error& e) {
      throw ProtocolError(std::string("TRIAL.params: ") + e.what());
    }
    OrderedJson body = {
        {"lease_id", m.lease_id}, {"study_name", m.study_name},
        {"trial_id", m.trial_id}, {"number", m.number},
        {"attempt", m.attempt},   {"params", OrderedJson::parse(params)},
        {"job_json", m.job_json}, {"heartbeat_interval_ms", m.heartbeat_interval_ms},
        {"gpus", m.gpus},         {"checkpoint_path", optional_json(m.checkpoint_path)}};
    // Absent when unset, so that a TRIAL without it reads as it did before PBT.
    if (m.start_checkpoint_path) body["start_checkpoint_path"] = *m.start_checkpoint_path;
    if (m.pause_at_step) body["pause_at_step"] = *m.pause_at_step;
    // Absent for one node, so that a one-node TRIAL reads as it did before multi-node trials.
    if (m.nodes != 1 || m.node != 0) {
      body["node"] = m.node;
      body["nodes"] = m.nodes;
    }
    return body;
  }
  OrderedJson operator()(const ReportMessage& m) const {
    return {{"lease_id", m.lease_id}, {"step", m.step}, {"metrics", metrics_json(m.metrics)}};
  }
  OrderedJson operator()(const DecisionMessage& m) const {
    return {{"lease_id", m.lease_id}, {"decision", std::string(to_string(m.decision))}};
  }
  OrderedJson operator()(const ResultMessage& m) const {
    OrderedJson values = OrderedJson::array();
    for (double v : m.values) values.push_back(double_json(v));
    OrderedJson body = {
        {"lease_id", m.lease_id}, {"metrics", metrics_json(m.metrics)}, {"values", values}};
    if (!m.integer_metrics.empty()) body["integer_metrics"] = m.integer_metrics;
    if (m.gpu_memory_peak_bytes) body["gpu_memory_peak_bytes"] = *m.gpu_memory_peak_bytes;
    if (m.paused_at_step) body["paused_at_step"] = *m.paused_at_step;
    return body;
  }
  OrderedJson operator()(const FailMessage& m) const {
    OrderedJson body = {{"lease_id", m.lease_id},
                        {"reason", m.reason},
                        {"exit_code", optional_json(m.exit_code)},
                        {"log_tail", m.log_tail}};
    if (m.gpu_memory_peak_bytes) body["gpu_memory_peak_bytes"] = *m.gpu_memory_peak_bytes;
    return body;
  }
  OrderedJson operator()(const AckMessage& m) const {
    return {{"lease_id", m.lease_id}, {"accepted", m.accepted}, {"reason", m.reason}};
  }
  OrderedJson operator()(const HeartbeatMessage& m) const { return {{"lease_ids", m.lease_ids}}; }
  OrderedJson operator()(const ErrorMessage& m) const {
    OrderedJson body = {{"message", m.message}};
    if (m.refused) body["refused"] = true;
    if (m.say_hello) body["say_hello"] = true;
    return body;
  }
  OrderedJson operator()(const ByeMessage& m) const {
    OrderedJson body = OrderedJson::object();
    if (m.preempted.empty()) return body;  // a plain BYE reads as it did before the list
    OrderedJson preempted = OrderedJson::array();
    for (const PreemptedLease& l : m.preempted) {
      preempted.push_back({{"lease_id", l.lease_id}, {"checkpoint", l.checkpoint}});
    }
    body["preempted"] = std::move(preempted);
    return body;
  }
  OrderedJson operator()(const StoreSetMessage& m) const {
    check_store_entry("STORE_SET", m.key, m.value);
    return {{"lease_id", m.lease_id}, {"key", m.key}, {"value", to_hex(m.value)}};
  }
  OrderedJson operator()(const StoreKeysMessage& m) const {
    OrderedJson entries = OrderedJson::object();
    for (const auto& [key, value] : m.entries) {
      check_store_entry("STORE_KEYS", key, value);
      entries[key] = to_hex(value);
    }
    return {{"lease_id", m.lease_id}, {"entries", entries}};
  }
  OrderedJson operator()(const FileChunkMessage& m) const {
    if (std::string problem = file_chunk_problem(m); !problem.empty()) {
      throw ProtocolError("FILE" + problem);
    }
    OrderedJson body = {{"lease_id", m.lease_id}, {"kind", std::string(to_string(m.kind))},
                        {"path", m.path},         {"size", m.size},
                        {"offset", m.offset},     {"data", to_base64(m.data)}};
    if (m.checkpoint) body["checkpoint"] = true;
    return body;
  }
  OrderedJson operator()(const FileAckMessage& m) const {
    if (std::string problem = file_path_problem(m.kind, m.path); !problem.empty()) {
      throw ProtocolError("FILE_ACK.path: " + problem);
    }
    OrderedJson body = {{"lease_id", m.lease_id}, {"kind", std::string(to_string(m.kind))},
                        {"path", m.path},         {"offset", m.offset},
                        {"accepted", m.accepted}, {"reason", m.reason}};
    if (m.lease_ended) body["lease_ended"] = true;
    return body;
  }
  OrderedJson operator()(const CheckpointGetMessage& m) const {
    if (std::string problem = checkpoint_file_problem(m.file); !problem.empty()) {
      throw ProtocolError("CHECKPOINT_GET.file: " + problem);
    }
    OrderedJson body = {{"lease_id", m.lease_id},
                        {"of", std::string(to_string(m.of))},
                        {"file", m.file},
                        {"offset", m.offset}};
    if (m.stat) body["stat"] = true;
    return body;
  }
  OrderedJson operator()(const CheckpointDataMessage& m) const {
    if (std::string problem = checkpoint_data_problem(m); !problem.empty()) {
      throw ProtocolError("CHECKPOINT_DATA" + problem);
    }
    OrderedJson body = {{"lease_id", m.lease_id}, {"of", std::string(to_string(m.of))},
                        {"file", m.file},         {"offset", m.offset},
                        {"size", m.size},         {"data", to_base64(m.data)},
                        {"found", m.found},       {"reason", m.reason}};
    if (m.written_by_lease != 0) body["written_by_lease"] = m.written_by_lease;
    return body;
  }
  OrderedJson operator()(const FilesLeftMessage& m) const {
    OrderedJson files = OrderedJson::array();
    for (const LeftFile& f : m.files) files.push_back({{"path", f.path}, {"size", f.size}});
    return {{"lease_id", m.lease_id},
            {"hostname", m.hostname},
            {"limit_bytes", m.limit_bytes},
            {"files", files}};
  }
};

// ----------------------------------------------------------------------------------------------
// Decoding. Every reader takes the value and its path ("REPORT.metrics.loss") for its errors.

// A name from the wire, short enough for an error message.
std::string shorten(std::string_view text) {
  constexpr size_t kMax = 64;
  if (text.size() <= kMax) return std::string(text);
  return std::string(text.substr(0, kMax)) + "...";
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw ProtocolError(path + ": " + what);
}

const nlohmann::json& member(const nlohmann::json& object, const char* key,
                             const std::string& path) {
  auto it = object.find(key);
  if (it == object.end()) fail(path + "." + key, "missing");
  return *it;
}

const nlohmann::json& object_of(const nlohmann::json& v, const std::string& path) {
  if (!v.is_object()) fail(path, std::string("expected an object, got ") + v.type_name());
  return v;
}

const nlohmann::json& array_of(const nlohmann::json& v, const std::string& path) {
  if (!v.is_array()) fail(path, std::string("expected an array, got ") + v.type_name());
  return v;
}

std::string string_of(const nlohmann::json& v, const std::string& path) {
  if (!v.is_string()) fail(path, std::string("expected a string, got ") + v.type_name());
  return v.get<std::string>();
}

bool bool_of(const nlohmann::json& v, const std::string& path) {
  if (!v.is_boolean()) fail(path, std::string("expected a boolean, got ") + v.type_name());
  return v.get<bool>();
}

template <typename Int>
Int int_of(const nlohmann::json& v, const std::string& path) {
  static_assert(std::is_integral_v<Int>);
  using Limits = std::numeric_limits<Int>;
  auto out_of_range = [&] {
    fail(path, "integer out of range [" + std::to_string(Limits::min()) + ", " +
                   std::to_string(Limits::max()) + "]");
  };
  if (v.is_number_unsigned()) {
    auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(Limits::max())) out_of_range();
    return static_cast<Int>(u);
  }
  if (v.is_number_integer()) {
    auto i = v.get<int64_t>();
    if constexpr (std::is_unsigned_v<Int>) {
      if (i < 0) out_of_range();
      if (static_cast<uint64_t>(i) > static_cast<uint64_t>(Limits::max())) out_of_range();
    } else {
      if (i < static_cast<int64_t>(Limits::min()) || i > static_cast<int64_t>(Limits::max())) {
        out_of_range();
      }
    }
    return static_cast<Int>(i);
  }
  fail(path, std::string("expected an integer, got ") + v.type_name());
}

double double_of(const nlohmann::json& v, const std::string& path) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  fail(path, "expected a number (or \"nan\", \"inf\", \"-inf\")");
}

Metrics metrics_of(const nlohmann::json& v, const std::string& path) {
  Metrics metrics;
  for (const auto& [name, value] : object_of(v, path).items()) {
    metrics[name] = double_of(value, path + "." + shorten(name));
  }
  return metrics;
}

template <typename Int>
std::vector<Int> ints_of(const nlohmann::json& v, const std::string& path) {
  std::vector<Int> out;
  const nlohmann::json& array = array_of(v, path);
  out.reserve(array.size());
  for (size_t i = 0; i < array.size(); ++i) {
    out.push_back(int_of<Int>(array[i], path + "[" + std::to_string(i) + "]"));
  }
  return out;
}

std::optional<std::string> optional_string_of(const nlohmann::json& object, const char* key,
                                              const std::string& path) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  return string_of(*it, path + "." + key);
}

// The bytes of a hex string (two lowercase or uppercase digits per byte).
std::string bytes_of_hex(const nlohmann::json& v, const std::string& path) {
  const std::string hex = string_of(v, path);
  if (hex.size() % 2 != 0)
    fail(path, "expected hex digits in pairs, got " + std::to_string(hex.size()));
  std::optional<std::string> bytes = from_hex(hex);
  if (!bytes) fail(path, "expected hex digits, got '" + shorten(hex) + "'");
  return *std::move(bytes);
}

void check_store_entry_read(const std::string& path, const std::string& key,
                            const std::string& value) {
  if (key.empty() || key.size() > kMaxStoreKeyBytes) {
    fail(path, "key of " + std::to_string(key.size()) + " bytes: expected 1 to " +
                   std::to_string(kMaxStoreKeyBytes));
  }
  if (value.size() > kMaxStoreValueBytes) {
    fail(path, "value of " + std::to_string(value.size()) + " bytes exceeds the limit of " +
                   std::to_string(kMaxStoreValueBytes));
  }
}

// Reads one message's fields from its body; `p` is the type name, the root of every path.
class BodyReader {
 public:
  BodyReader(const nlohmann::json& body, std::string type) : body_(body), p_(std::move(type)) {}

  std::string path(const char* key) const { return p_ + "." + key; }
  const nlohmann::json& at(const char* key) const { return member(body_, key, p_); }
  std::string str(const char* key) const { return string_of(at(key), path(key)); }
  bool boolean(const char* key) const { return bool_of(at(key), path(key)); }
  bool has(const char* key) const { return body_.contains(key); }
  template <typename Int>
  Int integer(const char* key) const {
    return int_of<Int>(at(key), path(key));
  }
  uint64_t lease_id() const { return integer<uint64_t>("lease_id"); }

  HelloMessage hello() const {
    HelloMessage m;
    m.executor_id = str("executor_id");
    m.hostname = str("hostname");
    m.pid = integer<int64_t>("pid");
    std::string rp = path("resources");
    const nlohmann::json& resources = object_of(at("resources"), rp);
    m.resources.cpu_slots = int_of<int>(member(resources, "cpu_slots", rp), rp + ".cpu_slots");
    const nlohmann::json& gpus = array_of(member(resources, "gpus", rp), rp + ".gpus");
    for (size_t i = 0; i < gpus.size(); ++i) {
      std::string gp = rp + ".gpus[" + std::to_string(i) + "]";
      const nlohmann::json& g = object_of(gpus[i], gp);
      m.resources.gpus.push_back(GpuInfo{
          .index = int_of<int>(member(g, "index", gp), gp + ".index"),
          .name = string_of(member(g, "name", gp), gp + ".name"),
          .memory_bytes = int_of<uint64_t>(member(g, "memory_bytes", gp), gp + ".memory_bytes")});
    }
    if (auto it = body_.find("leases"); it != body_.end()) {
      const nlohmann::json& leases = array_of(*it, path("leases"));
      for (size_t i = 0; i < leases.size(); ++i) {
        std::string lp = path("leases") + "[" + std::to_string(i) + "]";
        const nlohmann::json& l = object_of(leases[i], lp);
        m.leases.push_back(
            HeldLease{.lease_id = int_of<uint64_t>(member(l, "lease_id", lp), lp + ".lease_id"),
                      .study_name = string_of(member(l, "study_name", lp), lp + ".study_name"),
                      .trial_id = int_of<int64_t>(member(l, "trial_id", lp), lp + ".trial_id"),
                      .gpus = ints_of<int>(member(l, "gpus", lp), lp + ".gpus")});
        if (auto node = l.find("node"); node != l.end()) {
          m.leases.back().node = int_of<int>(*node, lp + ".node");
        }
      }
    }
    return m;
  }
  ReadyMessage ready() const {
    return {.free_slots = integer<int>("free_slots"),
            .free_gpus = ints_of<int>(at("free_gpus"), path("free_gpus"))};
  }
  TrialMessage trial() const {
    TrialMessage m;
    m.lease_id = lease_id();
    m.study_name = str("study_name");
    m.trial_id = integer<int64_t>("trial_id");
    m.number = integer<int>("number");
    m.attempt = integer<int>("attempt");
    const nlohmann::json& params = object_of(at("params"), path("params"));
    try {
      m.params = params_from_json(params.dump(), path("params"));
    } catch (const Error& e) {
      throw ProtocolError(e.what());
    }
    m.job_json = str("job_json");
    m.heartbeat_interval_ms = integer<int64_t>("heartbeat_interval_ms");
    m.gpus = ints_of<int>(at("gpus"), path("gpus"));
    m.checkpoint_path = optional_string_of(body_, "checkpoint_path", p_);
    m.start_checkpoint_path = optional_string_of(body_, "start_checkpoint_path", p_);
    if (has("pause_at_step")) m.pause_at_step = integer<int64_t>("pause_at_step");
    if (auto it = body_.find("nodes"); it != body_.end()) m.nodes = int_of<int>(*it, path("nodes"));
    if (auto it = body_.find("node"); it != body_.end()) m.node = int_of<int>(*it, path("node"));
    if (m.nodes < 1 || m.node < 0 || m.node >= m.nodes) {
      fail(path("node"), "node " + std::to_string(m.node) + " of " + std::to_string(m.nodes) +
                             ": expected 0 <= node < nodes");
    }
    return m;
  }
  ReportMessage report() const {
    return {.lease_id = lease_id(),
            .step = integer<int64_t>("step"),
            .metrics = metrics_of(at("metrics"), path("metrics"))};
  }
  DecisionMessage decision() const {
    std::string name = str("decision");
    auto decision = parse_job_decision(name);
    if (!decision) {
      fail(path("decision"),
           "expected \"continue\", \"stop\" or \"pause\", got \"" + shorten(name) + "\"");
    }
    return {.lease_id = lease_id(), .decision = *decision};
  }
  ResultMessage result() const {
    ResultMessage m{.lease_id = lease_id(), .metrics = metrics_of(at("metrics"), path("metrics"))};
    const nlohmann::json& values = array_of(at("values"), path("values"));
    for (size_t i = 0; i < values.size(); ++i) {
      m.values.push_back(double_of(values[i], path("values") + "[" + std::to_string(i) + "]"));
    }
    if (has("integer_metrics")) {
      const nlohmann::json& names = array_of(at("integer_metrics"), path("integer_metrics"));
      for (size_t i = 0; i < names.size(); ++i) {
        m.integer_metrics.push_back(
            string_of(names[i], path("integer_metrics") + "[" + std::to_string(i) + "]"));
      }
    }
    m.gpu_memory_peak_bytes = gpu_memory_peak();
    if (has("paused_at_step")) m.paused_at_step = integer<int64_t>("paused_at_step");
    return m;
  }
  // "gpu_memory_peak_bytes" of RESULT and FAIL: optional.
  std::optional<uint64_t> gpu_memory_peak() const {
    if (!has("gpu_memory_peak_bytes")) return std::nullopt;
    return int_of<uint64_t>(at("gpu_memory_peak_bytes"), path("gpu_memory_peak_bytes"));
  }
  FailMessage fail_message() const {
    FailMessage m{.lease_id = lease_id(), .reason = str("reason")};
    auto it = body_.find("exit_code");
    if (it != body_.end() && !it->is_null()) m.exit_code = int_of<int>(*it, path("exit_code"));
    m.log_tail = str("log_tail");
    m.gpu_memory_peak_bytes = gpu_memory_peak();
    return m;
  }
  AckMessage ack() const {
    return {.lease_id = lease_id(), .accepted = boolean("accepted"), .reason = str("reason")};
  }
  HeartbeatMessage heartbeat() const {
    return {.lease_ids = ints_of<uint64_t>(at("lease_ids"), path("lease_ids"))};
  }
  ErrorMessage error() const {
    return {.message = str("message"),
            .refused = has("refused") && boolean("refused"),
            .say_hello = has("say_hello") && boolean("say_hello")};
  }
  ByeMessage bye() const {
    ByeMessage m;
    if (!has("preempted")) return m;
    const std::string lp = path("preempted");
    const nlohmann::json& leases = array_of(at("preempted"), lp);
    std::set<uint64_t> seen;
    for (size_t i = 0; i < leases.size(); ++i) {
      const std::string ep = lp + "[" + std::to_string(i) + "]";
      const nlohmann::json& l = object_of(leases[i], ep);
      PreemptedLease lease{
          .lease_id = int_of<uint64_t>(member(l, "lease_id", ep), ep + ".lease_id"),
          .checkpoint = bool_of(member(l, "checkpoint", ep), ep + ".checkpoint")};
      if (!seen.insert(lease.lease_id).second) {
        fail(ep + ".lease_id", "lease " + std::to_string(lease.lease_id) + " is listed twice");
      }
      m.preempted.push_back(lease);
    }
    return m;
  }
  StoreSetMessage store_set() const {
    StoreSetMessage m{.lease_id = lease_id(),
                      .key = str("key"),
                      .value = bytes_of_hex(at("value"), path("value"))};
    check_store_entry_read(p_, m.key, m.value);
    return m;
  }
  TrialFileKind file_kind() const {
    const std::string name = str("kind");
    std::optional<TrialFileKind> kind = parse_file_kind(name);
    if (!kind)
      fail(path("kind"), "expected \"log\" or \"artifact\", got \"" + shorten(name) + "\"");
    return *kind;
  }
  // "data": at most kMaxFileChunkBytes bytes in base64.
  std::string base64_data() const {
    const std::string text = str("data");
    if (text.size() > (kMaxFileChunkBytes + 2) / 3 * 4) {
      fail(path("data"), std::to_string(text.size()) + " base64 digits exceed the limit of " +
                             std::to_string((kMaxFileChunkBytes + 2) / 3 * 4));
    }
    std::optional<std::string> data = from_base64(text);
    if (!data) fail(path("data"), "expected base64 (RFC 4648, padded)");
    return *std::move(data);
  }
  FileChunkMessage file_chunk() const {
    FileChunkMessage m{.lease_id = lease_id(),
                       .kind = file_kind(),
                       .path = str("path"),
                       .size = integer<uint64_t>("size"),
                       .offset = integer<uint64_t>("offset"),
                       .checkpoint = has("checkpoint") && boolean("checkpoint")};
    m.data = base64_data();
    if (std::string problem = file_chunk_problem(m); !problem.empty()) {
      throw ProtocolError(p_ + problem);
    }
    return m;
  }
  FileAckMessage file_ack() const {
    FileAckMessage m{.lease_id = lease_id(),
                     .kind = file_kind(),
                     .path = str("path"),
                     .offset = integer<uint64_t>("offset"),
                     .accepted = boolean("accepted"),
                     .lease_ended = has("lease_ended") && boolean("lease_ended"),
                     .reason = str("reason")};
    if (std::string problem = file_path_problem(m.kind, m.path); !problem.empty()) {
      fail(path("path"), problem);
    }
    return m;
  }
  FilesLeftMessage files_left() const {
    FilesLeftMessage m{.lease_id = lease_id(),
                       .hostname = str("hostname"),
                       .limit_bytes = integer<uint64_t>("limit_bytes")};
    const nlohmann::json& files = array_of(at("files"), path("files"));
    for (size_t i = 0; i < files.size(); ++i) {
      const std::string fp = path("files") + "[" + std::to_string(i) + "]";
      const nlohmann::json& f = object_of(files[i], fp);
      m.files.push_back(LeftFile{.path = string_of(member(f, "path", fp), fp + ".path"),
                                 .size = int_of<uint64_t>(member(f, "size", fp), fp + ".size")});
    }
    return m;
  }
  CheckpointOf checkpoint_of() const {
    const std::string name = str("of");
    std::optional<CheckpointOf> of = parse_checkpoint_of(name);
    if (!of) fail(path("of"), "expected \"start\" or \"own\", got \"" + shorten(name) + "\"");
    return *of;
  }
  CheckpointGetMessage checkpoint_get() const {
    CheckpointGetMessage m{.lease_id = lease_id(),
                           .of = checkpoint_of(),
                           .file = str("file"),
                           .offset = integer<uint64_t>("offset"),
                           .stat = has("stat") && boolean("stat")};
    if (std::string problem = checkpoint_file_problem(m.file); !problem.empty()) {
      fail(path("file"), problem);
    }
    return m;
  }
  CheckpointDataMessage checkpoint_data() const {
    CheckpointDataMessage m{
        .lease_id = lease_id(),
        .of = checkpoint_of(),
        .file = str("file"),
        .offset = integer<uint64_t>("offset"),
        .size = integer<uint64_t>("size"),
        .found = boolean("found"),
        .reason = str("reason"),
        .written_by_lease = has("written_by_lease") ? integer<uint64_t>("written_by_lease") : 0};
    m.data = base64_data();
    if (std::string problem = checkpoint_data_problem(m); !problem.empty()) {
      throw ProtocolError(p_ + problem);
    }
    return m;
  }
  StoreKeysMessage store_keys() const {
    StoreKeysMessage m{.lease_id = lease_id()};
    for (const auto& [key, value] : object_of(at("entries"), path("entries")).items()) {
      const std::string ep = path("entries") + "." + shorten(key);
      m.entries[key] = bytes_of_hex(value, ep);
      check_store_entry_read(ep, key, m.entries[key]);
    }
    return m;
  }

 private:
  const nlohmann::json& body_;
  std::string p_;
};

std::optional<MessageType> type_from_wire(uint16_t value) {
  if (value < static_cast<uint16_t>(MessageType::kHello) ||
      value > static_cast<uint16_t>(MessageType::kCheckpointData)) {
    return std::nullopt;
  }
  return static_cast<MessageType>(value);
}

Message decode_body(MessageType type, const std::string& text) {
  std::string name(to_string(type));
  if (json_nests_deeper_than(text, kMaxBodyDepth)) {
    throw ProtocolError(name + " body: nested deeper than " + std::to_string(kMaxBodyDepth));
  }
  nlohmann::json body;
  try {
    body = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ProtocolError(name + " body: not valid JSON (error at byte " + std::to_string(e.byte) +
                        ")");
  }
  if (!body.is_object()) {
    throw ProtocolError(name + " body: expected a JSON object, got " + body.type_name());
  }
  BodyReader r(body, name);
  switch (type) {
    case MessageType::kHello:
      return r.hello();
    case MessageType::kReady:
      return r.ready();
    case MessageType::kTrial:
      return r.trial();
    case MessageType::kReport:
      return r.report();
    case MessageType::kDecision:
      return r.decision();
    case MessageType::kResult:
      return r.result();
    case MessageType::kFail:
      return r.fail_message();
    case MessageType::kAck:
      return r.ack();
    case MessageType::kHeartbeat:
      return r.heartbeat();
    case MessageType::kError:
      return r.error();
    case MessageType::kBye:
      return r.bye();
    case MessageType::kStoreSet:
      return r.store_set();
    case MessageType::kStoreKeys:
      return r.store_keys();
    case MessageType::kFile:
      return r.file_chunk();
    case MessageType::kFileAck:
      return r.file_ack();
    case MessageType::kFilesLeft:
      return r.files_left();
    case MessageType::kCheckpointGet:
      return r.checkpoint_get();
    case MessageType::kCheckpointData:
      return r.checkpoint_data();
  }
  throw ProtocolError("unknown message type " + std::to_string(static_cast<int>(type)));
}

}  // namespace

std::string_view to_string(JobDecision decision) {
  switch (decision) {
    case JobDecision::kContinue:
      return "continue";
    case JobDecision::kStop:
      return "stop";
    case JobDecision::kPause:
      return "pause";
  }
  return "unknown";
}

std::optional<JobDecision> parse_job_decision(std::string_view name) {
  if (name == "continue") return JobDecision::kContinue;
  if (name == "stop") return JobDecision::kStop;
  if (name == "pause") return JobDecision::kPause;
  return std::nullopt;
}

std::string_view to_string(MessageType type) {
  switch (type) {
    case MessageType::kHello:
      return "HELLO";
    case MessageType::kReady:
      return "READY";
    case MessageType::kTrial:
      return "TRIAL";
    case MessageType::kReport:
      return "REPORT";
    case MessageType::kDecision:
      return "DECISION";
    case MessageType::kResult:
      return "RESULT";
    case MessageType::kFail:
      return "FAIL";
    case MessageType::kAck:
      return "ACK";
    case MessageType::kHeartbeat:
      return "HEARTBEAT";
    case MessageType::kError:
      return "ERROR";
    case MessageType::kBye:
      return "BYE";
    case MessageType::kStoreSet:
      return "STORE_SET";
    case MessageType::kStoreKeys:
      return "STORE_KEYS";
    case MessageType::kFile:
      return "FILE";
    case MessageType::kFileAck:
      return "FILE_ACK";
    case MessageType::kFilesLeft:
      return "FILES_LEFT";
    case MessageType::kCheckpointGet:
      return "CHECKPOINT_GET";
    case MessageType::kCheckpointData:
      return "CHECKPOINT_DATA";
  }
  return "UNKNOWN";
}

std::string_view to_string(CheckpointOf of) { return of == CheckpointOf::kStart ? "start" : "own"; }

std::string checkpoint_file_problem(std::string_view file) {
  constexpr size_t kMaxName = 255;
  if (file.empty() || file.size() > kMaxName) {
    return "expected a file name of 1 to " + std::to_string(kMaxName) + " bytes, got " +
           std::to_string(file.size());
  }
  if (file == "." || file == ".." || file.find_first_of(std::string_view("/\0", 2)) != file.npos) {
    return "'" + shorten(file) + "' is not a file name (\".\", \"..\", a '/' or a NUL byte)";
  }
  return "";
}

std::string_view to_string(TrialFileKind kind) {
  switch (kind) {
    case TrialFileKind::kLog:
      return "log";
    case TrialFileKind::kArtifact:
      return "artifact";
  }
  return "unknown";
}

std::string trial_file_path_problem(std::string_view path) {
  if (path.empty() || path.size() > kMaxFilePathBytes) {
    return "expected 1 to " + std::to_string(kMaxFilePathBytes) + " bytes, got " +
           std::to_string(path.size());
  }
  if (path.find('\0') != std::string_view::npos) return "holds a NUL byte";
  if (path.front() == '/') return "'" + shorten(path) + "' is absolute";
  for (std::string_view rest = path;;) {
    const size_t slash = rest.find('/');
    const std::string_view part = rest.substr(0, slash);
    if (part.empty() || part == "." || part == "..") {
      return "'" + shorten(path) + "' has a component that is empty, '.' or '..'";
    }
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  return "";
}

MessageType message_type(const Message& message) {
  // The variant's alternatives are in wire order, from kHello = 1.
  return static_cast<MessageType>(message.index() + 1);
}

std::vector<std::string> encode(const Message& message) {
  MessageType type = message_type(message);
  std::string header(kProtocolMagic, sizeof(kProtocolMagic));
  put_u16(header, kProtocolVersion);
  put_u16(header, static_cast<uint16_t>(type));
  std::string body =
      std::visit(BodyWriter{}, message).dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
  if (header.size() + body.size() > kMaxMessageBytes) {
    throw ProtocolError(std::string(to_string(type)) + ": encoded message of " +
                        std::to_string(header.size() + body.size()) +
                        " bytes exceeds the limit of " + std::to_string(kMaxMessageBytes) +
                        " bytes");
  }
  std::vector<std::string> frames;
  frames.push_back(std::move(header));
  frames.push_back(std::move(body));
  return frames;
}

Message decode(std::span<const std::string> frames) {
  size_t total = 0;
  for (const auto& frame : frames) {
    total += frame.size();
    if (total > kMaxMessageBytes) {
      throw ProtocolError("message exceeds the limit of " + std::to_string(kMaxMessageBytes) +
                          " bytes");
    }
  }
  if (frames.size() != 2) {
    throw ProtocolError("expected 2 frames (header, body), got " + std::to_string(frames.size()));
  }
  const std::string& header = frames[0];
  if (header.size() != kProtocolHeaderBytes) {
    throw ProtocolError("header frame: expected " + std::to_string(kProtocolHeaderBytes) +
                        " bytes, got " + std::to_string(header.size()));
  }
  if (header.compare(0, sizeof(kProtocolMagic), kProtocolMagic, sizeof(kProtocolMagic)) != 0) {
    throw ProtocolError("header frame: bad magic (not a tuner message)");
  }
  auto u16 = [&](size_t at) {
    return static_cast<uint16_t>((static_cast<unsigned char>(header[at]) << 8) |
                                 static_cast<unsigned char>(header[at + 1]));
  };
  uint16_t version = u16(4);
  if (version != kProtocolVersion) {
    throw ProtocolError("protocol version " + std::to_string(version) +
                        " is not supported (this build speaks version " +
                        std::to_string(kProtocolVersion) + ")");
  }
  auto type = type_from_wire(u16(6));
  if (!type) throw ProtocolError("unknown message type " + std::to_string(u16(6)));
  try {
    return decode_body(*type, frames[1]);
  } catch (const ProtocolError&) {
    throw;
  } catch (const nlohmann::json::exception& e) {
    // Not expected: every access above checks its type first.
    throw ProtocolError(std::string(to_string(*type)) + " body: " + e.what());
  }
}

}  // namespace tuner
