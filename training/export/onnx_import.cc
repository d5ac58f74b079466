#include "training/export/onnx_import.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "onnx/onnx_pb.h"
#include "training/init_from.h"
#include "training/model_spec.h"

namespace tuner::training {

namespace {

using nlohmann::json;

// A constant tensor of the graph (an initializer or a Constant node's value).
struct Constant {
  std::vector<int64_t> dims;
  std::vector<float> values;  // float tensors, and integer ones converted
};

// The weights of a chain of layers, in the order the arena holds them.
struct Weights {
  std::vector<std::vector<float>> params, buffers;
  void append(Weights&& other) {
    for (auto& p : other.params) params.push_back(std::move(p));
    for (auto& b : other.buffers) buffers.push_back(std::move(b));
  }
};

std::string label(const onnx::NodeProto& n) {
  return "node '" + n.name() + "' (" + n.op_type() + ")";
}

[[noreturn]] void fail(const onnx::NodeProto& n, const std::string& what) {
  throw OnnxImportError(label(n) + ": " + what);
}

// The most elements a constant may have (a protobuf message holds at most 2 GiB).
constexpr int64_t kMaxTensorElements = int64_t{1} << 31;

// The bytes of a tensor saved as external data: its "location" (a file in `dir`, the model
// file's directory), from "offset" for "length" bytes (to the file's end when absent).
// REQUIRES: t.data_location() == EXTERNAL.
std::string read_external(const onnx::TensorProto& t, const std::filesystem::path* dir) {
  const std::string where = "initializer '" + t.name() + "'";
  if (!dir) {
    throw OnnxImportError(where +
                          ": its data is in another file (external data), which only a model "
                          "read from a file can name: import the file, not its bytes");
  }
  std::string location;
  int64_t offset = 0, length = -1;
  for (const onnx::StringStringEntryProto& e : t.external_data()) {
    try {
      if (e.key() == "location") location = e.value();
      if (e.key() == "offset") offset = std::stoll(e.value());
      if (e.key() == "length") length = std::stoll(e.value());
    } catch (const std::exception&) {
      throw OnnxImportError(where + ": external data " + e.key() + " \"" + e.value() +
                            "\" is not a number");
    }
  }
  const std::filesystem::path relative(location);
  const bool escapes = std::any_of(relative.begin(), relative.end(),
                                   [](const std::filesystem::path& p) { return p == ".."; });
  if (location.empty() || relative.is_absolute() || escapes) {
    throw OnnxImportError(where + ": external data location \"" + location +
                          "\" must be a file name relative to the model's directory, inside it");
  }
  const std::filesystem::path file = *dir / relative;
  std::ifstream in(file, std::ios::binary);
  std::error_code ec;
  const auto size = std::filesystem::file_size(file, ec);
  if (!in || ec)
    throw OnnxImportError(where + ": external data " + file.string() + " cannot be read");
  if (length < 0) length = static_cast<int64_t>(size) - offset;
  if (offset < 0 || length < 0 ||
      static_cast<uint64_t>(offset) + static_cast<uint64_t>(length) > size) {
    throw OnnxImportError(
        where + ": external data bytes [" + std::to_string(offset) + ", " +
        std::to_string(static_cast<uint64_t>(offset) + static_cast<uint64_t>(length)) +
        ") are past the end of " + file.string() + " (" + std::to_string(size) + " bytes)");
  }
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  if (!in) throw OnnxImportError(where + ": external data " + file.string() + " cannot be read");
  return bytes;
}

// A constant tensor; `dir` is the model file's directory (null for a model given as bytes), where
// external data is read from.
Constant read_tensor(const onnx::TensorProto& t, const std::filesystem::path* dir) {
  Constant c;
  c.dims.assign(t.dims().begin(), t.dims().end());
  int64_t n = 1;
  for (int64_t d : c.dims) {
    if (d < 0) {
      throw OnnxImportError("initializer '" + t.name() + "': a negative dimension (" +
                            std::to_string(d) + ")");
    }
    if (__builtin_mul_overflow(n, d, &n) || n > kMaxTensorElements) {
      throw OnnxImportError("initializer '" + t.name() + "': its shape has more than " +
                            std::to_string(kMaxTensorElements) + " elements");
    }
  }
  const auto count = static_cast<size_t>(n);
  std::string external;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) external = read_external(t, dir);
  const std::string& raw =
      t.data_location() == onnx::TensorProto::EXTERNAL ? external : t.raw_data();
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (!raw.empty()) {
        if (raw.size() != count * sizeof(float)) break;
        c.values.resize(count);
        std::memcpy(c.values.data(), raw.data(), raw.size());
      } else {
        c.values.assign(t.float_data().begin(), t.float_data().end());
      }
      break;
    case onnx::TensorProto::INT64:
      if (!raw.empty()) {
        if (raw.size() != count * sizeof(int64_t)) break;
        std::vector<int64_t> v(count);
        std::memcpy(v.data(), raw.data(), raw.size());
        c.values.assign(v.begin(), v.end());
      } else {
        c.values.assign(t.int64_data().begin(), t.int64_data().end());
      }
      break;
    case onnx::TensorProto::DOUBLE:
      if (!raw.empty()) {
        if (raw.size() != count * sizeof(double)) break;
        std::vector<double> v(count);
        std::memcpy(v.data(), raw.data(), raw.size());
        c.values.assign(v.begin(), v.end());
      } else {
        c.values.assign(t.double_data().begin(), t.double_data().end());
      }
      break;
    default:
      throw OnnxImportError("initializer '" + t.name() + "': element type " +
                            std::to_string(t.data_type()) +
                            " is not supported (float32, float64 or int64)");
  }
  if (c.values.size() != count) {
    throw OnnxImportError("initializer '" + t.name() + "': " + std::to_string(c.values.size()) +
                          " values for its shape of " + std::to_string(count));
  }
  return c;
}

const onnx::AttributeProto* attribute(const onnx::NodeProto& n, const std::string& name) {
  for (const onnx::AttributeProto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  const onnx::AttributeProto* a = attribute(n, name);
  return a ? a->i() : fallback;
}

float attr_float(const onnx::NodeProto& n, const std::string& name, float fallback) {
  const onnx::AttributeProto* a = attribute(n, name);
  return a ? a->f() : fallback;
}

std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name) {
  const onnx::AttributeProto* a = attribute(n, name);
  if (!a) return {};
  return {a->ints().begin(), a->ints().end()};
}

// One value repeated: the kernel, stride or padding of a square window; `fallback` when absent.
int64_t square(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  const std::vector<int64_t> v = attr_ints(n, name);
  if (v.empty()) return fallback;
  for (int64_t x : v) {
    if (x != v[0]) fail(n, name + " must be the same on every side (the engine's are square)");
  }
  return v[0];
}

// A float attribute as the number it was meant to be (0.1, not 0.10000000149011612).
double tidy(float v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", static_cast<double>(v));
  return std::strtod(text, nullptr);
}

// [rows, cols] -> [cols, rows].
std::vector<float> transposed(const std::vector<float>& v, int64_t rows, int64_t cols) {
  std::vector<float> out(v.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) out[c * rows + r] = v[r * cols + c];
  }
  return out;
}

// Refuses a node without the output, or a binary operator without the two inputs, that the
// import reads.
void check_arity(const onnx::NodeProto& n) {
  if (n.output_size() < 1) fail(n, "it has no output");
  const std::string& op = n.op_type();
  const bool binary = op == "Add" || op == "Sub" || op == "Mul" || op == "Div";
  if (binary && n.input_size() != 2) {
    fail(n, "it has " + std::to_string(n.input_size()) + " inputs, not 2");
  }
}

class Importer {
 public:
  // `dir`: the model file's directory, where external data is read from (null: none).
  Importer(const onnx::GraphProto& graph, const std::filesystem::path* dir) : graph_(graph) {
    for (const onnx::TensorProto& t : graph.initializer()) {
      constants_[t.name()] = read_tensor(t, dir);
    }
    for (const onnx::NodeProto& n : graph.node()) {
      check_arity(n);
      if (n.op_type() == "Constant") {
        const onnx::AttributeProto* value = attribute(n, "value");
        if (!value || !value->has_t()) fail(n, "only a tensor \"value\" is supported");
        constants_[n.output(0)] = read_tensor(value->t(), dir);
        continue;
      }
      for (const std::string& input : n.input()) {
        if (!input.empty() && !constants_.count(input)) consumers_[input].push_back(&n);
      }
    }
  }

  Checkpoint run() {
    std::string input;
    for (const onnx::ValueInfoProto& v : graph_.input()) {
      if (!constants_.count(v.name())) {
        input = v.name();
        break;
      }
    }
    if (input.empty()) throw OnnxImportError("the graph has no input");
    json sample = json::array();
    const onnx::ValueInfoProto& info =
        *std::find_if(graph_.input().begin(), graph_.input().end(),
                      [&](const onnx::ValueInfoProto& v) { return v.name() == input; });
    const auto& dims = info.type().tensor_type().shape().dim();
    for (int i = 1; i < dims.size(); ++i) {
      if (!dims[i].has_dim_value() || dims[i].dim_value() < 1) {
        throw OnnxImportError("input '" + input +
                              "': every dimension but the batch's must be a fixed size");
      }
      sample.push_back(dims[i].dim_value());
    }
    if (sample.empty()) throw OnnxImportError("input '" + input + "': expected [N, sample...]");
    if (sample.size() == 1) input_width_ = sample[0].get<int64_t>();
    Weights weights;
    std::string end;
    const onnx::NodeProto* join = nullptr;
    json layers = chain(input, weights, end, join, /*top=*/true);
    if (join) fail(*join, "an Add of two computed tensors that is not a residual block's");
    if (layers.empty()) throw OnnxImportError("the graph has no layer the engine knows");
    json spec_json = {{"input", sample}, {"layers", layers}};
    if (!embeddings_.empty()) spec_json["embeddings"] = embeddings_;
    ModelSpec spec;
    try {
      spec = parse_model_spec(spec_json.dump());
    } catch (const SpecError& e) {
      throw OnnxImportError(std::string("the graph's layers are not a model the engine builds: ") +
                            e.what() + " (read as " + spec_json.dump() + ")");
    }
    return checkpoint(spec, std::move(weights));
  }

 private:
  bool is_constant(const std::string& name) const { return constants_.count(name) > 0; }

  const Constant& constant(const onnx::NodeProto& n, int input) const {
    if (input >= n.input_size() || !is_constant(n.input(input))) {
      fail(n, "input " + std::to_string(input) + " must be a constant (an initializer)");
    }
    return constants_.at(n.input(input));
  }

  // The scalar value of a constant input, if it is one.
  std::optional<float> scalar(const onnx::NodeProto& n, int input) const {
    if (input >= n.input_size() || !is_constant(n.input(input))) return std::nullopt;
    const Constant& c = constants_.at(n.input(input));
    if (c.values.size() != 1) return std::nullopt;
    return c.values[0];
  }

  // The nodes reading `tensor` that are not yet used.
  std::vector<const onnx::NodeProto*> readers(const std::string& tensor) const {
    std::vector<const onnx::NodeProto*> out;
    auto it = consumers_.find(tensor);
    if (it == consumers_.end()) return out;
    for (const onnx::NodeProto* n : it->second) {
      if (!used_.count(n)) out.push_back(n);
    }
    return out;
  }

  // The single reader of `tensor` of type `op`, or null.
  const onnx::NodeProto* only_reader(const std::string& tensor, const std::string& op) const {
    const auto r = readers(tensor);
    return r.size() == 1 && r[0]->op_type() == op ? r[0] : nullptr;
  }

  static bool is_join(const onnx::NodeProto& n, const std::map<std::string, Constant>& constants) {
    return n.op_type() == "Add" && n.input_size() == 2 && !constants.count(n.input(0)) &&
           !constants.count(n.input(1));
  }

  // GELU's erf formula read from `x`, whose readers are `r` (two): the output tensor, or empty.
  std::string gelu(const std::string& x, const std::vector<const onnx::NodeProto*>& r) {
    for (const onnx::NodeProto* scale : r) {
      const std::string op = scale->op_type();
      const auto k = scalar(*scale, 1);
      const bool scales = k && ((op == "Div" && std::abs(*k - std::sqrt(2.0f)) < 1e-3f) ||
                                (op == "Mul" && std::abs(*k - 1 / std::sqrt(2.0f)) < 1e-3f));
      if (!scales) continue;
      const onnx::NodeProto* erf = only_reader(scale->output(0), "Erf");
      if (!erf) continue;
      const onnx::NodeProto* plus = only_reader(erf->output(0), "Add");
      if (!plus || !scalar(*plus, 1) || *scalar(*plus, 1) != 1.0f) continue;
      // x * (1 + erf) * 0.5, the two products in either order.
      const onnx::NodeProto* first = only_reader(plus->output(0), "Mul");
      if (!first) continue;
      const onnx::NodeProto* second = only_reader(first->output(0), "Mul");
      if (!second) continue;
      const onnx::NodeProto* by_x = nullptr;
      const onnx::NodeProto* by_half = nullptr;
      for (const onnx::NodeProto* m : {first, second}) {
        const bool reads_x = m->input(0) == x || m->input(1) == x;
        const auto half = scalar(*m, 1) ? scalar(*m, 1) : scalar(*m, 0);
        if (reads_x) by_x = m;
        if (half && *half == 0.5f) by_half = m;
      }
      if (!by_x || !by_half || by_x == by_half) continue;
      for (const onnx::NodeProto* n : {scale, erf, plus, first, second}) used_.insert(n);
      return second->output(0);
    }
    return {};
  }

  // The layers from tensor `t` until the graph ends (`join` null) or a node joins two branches
  // (`join` that Add); `end` is the last tensor. Their weights go to `weights`.
  json chain(std::string t, Weights& weights, std::string& end, const onnx::NodeProto*& join,
             bool top) {
    json layers = json::array();
    join = nullptr;
    while (true) {
      const std::vector<const onnx::NodeProto*> r = readers(t);
      if (r.empty()) break;
      if (top && layers.empty() && weights.params.empty() && embeddings_.empty() &&
          starts_embedding(r)) {
        t = embedding(t, r, weights);
        continue;
      }
      if (r.size() == 1 && is_join(*r[0], constants_)) {
        join = r[0];
        break;
      }
      if (r.size() == 2) {
        if (std::string y = gelu(t, r); !y.empty()) {
          layers.push_back({{"type", "gelu"}});
          t = y;
          continue;
        }
        t = residual(t, r, weights, layers);
        continue;
      }
      if (r.size() > 2) {
        fail(*r[0], "its input '" + t + "' feeds " + std::to_string(r.size()) +
                        " nodes: only the two branches of a residual block may share one");
      }
      const onnx::NodeProto& n = *r[0];
      used_.insert(&n);
      if (top && layers.empty() && weights.params.empty() && preprocessing(n)) {
        t = n.output(0);
        continue;
      }
      t = layer(n, weights, layers);
    }
    end = t;
    return layers;
  }

  // Whether the readers `r` of the model's input are an embedding layer's segments: Slices along
  // axis 1 and Gathers along axis 1 of a constant index, the first of them a Gather.
  bool starts_embedding(const std::vector<const onnx::NodeProto*>& r) const {
    bool gather = false;
    for (const onnx::NodeProto* n : r) {
      if (n->op_type() == "Gather" && attr_int(*n, "axis", 0) == 1) {
        gather = true;
      } else if (n->op_type() != "Slice") {
        return false;
      }
    }
    return gather;
  }

  // The embedding layer of the exporter's pattern on input `x` [N, I] (onnx_export.h): Slices of
  // the other features and, per embedded feature c, Gather(x, c, axis 1) -> Cast to int64 ->
  // Gather(table, index, axis 0), all joined by one Concat along axis 1 in feature order. A
  // table's last row of zeros is the row of unknown categories, not one of them. Records the
  // layer in embeddings_ and its tables in `weights`; returns the Concat's output.
  std::string embedding(const std::string& x, const std::vector<const onnx::NodeProto*>& r,
                        Weights& weights) {
    struct Part {
      std::string tensor;
      int64_t from = 0, to = 0;  // the input features it covers
      json column;               // an embedded feature: {"at", "categories", "dim"}
      std::vector<float> table;
    };
    std::map<std::string, Part> parts;
    const onnx::NodeProto* concat = nullptr;
    auto joined_by = [&](const std::string& tensor, const onnx::NodeProto& from) {
      const onnx::NodeProto* c = only_reader(tensor, "Concat");
      if (!c || attr_int(*c, "axis", 0) != 1 || (concat && c != concat)) {
        fail(from, "an embedding's segment must be read by one Concat along axis 1 alone");
      }
      concat = c;
    };
    for (const onnx::NodeProto* n : r) {
      used_.insert(n);
      Part p;
      if (n->op_type() == "Slice") {
        if (n->input_size() < 4) fail(*n, "an embedding's Slice needs starts, ends and axes");
        const Constant& starts = constant(*n, 1);
        const Constant& ends = constant(*n, 2);
        const Constant& axes = constant(*n, 3);
        if (starts.values.size() != 1 || ends.values.size() != 1 || axes.values.size() != 1 ||
            axes.values[0] != 1.0f) {
          fail(*n, "an embedding's Slice takes one range along axis 1");
        }
        p.from = static_cast<int64_t>(starts.values[0]);
        p.to = static_cast<int64_t>(ends.values[0]);
        p.tensor = n->output(0);
      } else {
        const Constant& at = constant(*n, 1);
        if (!at.dims.empty() || at.values.size() != 1) {
          fail(*n, "an embedding's Gather of its feature takes a scalar index");
        }
        const onnx::NodeProto* cast = only_reader(n->output(0), "Cast");
        if (!cast || attr_int(*cast, "to", 0) != onnx::TensorProto::INT64) {
          fail(*n, "an embedded feature must be cast to int64 before its lookup");
        }
        used_.insert(cast);
        const std::vector<const onnx::NodeProto*> lookups = readers(cast->output(0));
        if (lookups.size() != 1 || lookups[0]->op_type() != "Gather" ||
            attr_int(*lookups[0], "axis", 0) != 0 || lookups[0]->input(1) != cast->output(0)) {
          fail(*cast, "an embedded feature's index must be read by one Gather of a table");
        }
        const onnx::NodeProto& lookup = *lookups[0];
        used_.insert(&lookup);
        const Constant& table = constant(lookup, 0);
        if (table.dims.size() != 2 || table.dims[0] < 1 || table.dims[1] < 1) {
          fail(lookup, "an embedding table must be [categories, dim]");
        }
        int64_t rows = table.dims[0];
        const int64_t dim = table.dims[1];
        if (rows > 1 && std::all_of(table.values.end() - dim, table.values.end(),
                                    [](float v) { return v == 0.0f; })) {
          --rows;  // the row of unknown categories
        }
        p.from = static_cast<int64_t>(at.values[0]);
        p.to = p.from + 1;
        p.column = {{"at", p.from}, {"categories", rows}, {"dim", dim}};
        p.table.assign(table.values.begin(), table.values.begin() + rows * dim);
        p.tensor = lookup.output(0);
        n = &lookup;
      }
      joined_by(p.tensor, *n);
      parts[p.tensor] = std::move(p);
    }
    used_.insert(concat);
    if (static_cast<size_t>(concat->input_size()) != parts.size()) {
      fail(*concat, "an embedding's Concat must join its segments alone");
    }
    int64_t next = 0;
    for (const std::string& in : concat->input()) {
      auto it = parts.find(in);
      if (it == parts.end()) fail(*concat, "an embedding's Concat must join its segments alone");
      Part& p = it->second;
      if (p.from != next || p.to <= p.from) {
        fail(*concat, "an embedding's segments must cover the input's features in order");
      }
      next = p.to;
      if (!p.column.is_null()) {
        embeddings_.push_back(p.column);
        weights.params.push_back(std::move(p.table));
      }
    }
    if (next != input_width_) {
      fail(*concat, "an embedding's segments cover " + std::to_string(next) +
                        " features of the input's " + std::to_string(input_width_));
    }
    return concat->output(0);
  }

  // A residual block from tensor `t` whose readers `r` start its two branches; appends it.
  std::string residual(const std::string& t, const std::vector<const onnx::NodeProto*>& r,
                       Weights& weights, json& layers) {
    struct Branch {
      json layers = json::array();
      Weights weights;
      std::string end;
      const onnx::NodeProto* join = nullptr;
    };
    Branch b[2];
    for (int i = 0; i < 2; ++i) {
      const onnx::NodeProto& first = *r[i];
      if (is_join(first, constants_)) {  // the identity shortcut
        b[i].end = t;
        b[i].join = &first;
        continue;
      }
      used_.insert(&first);
      const std::string next = layer(first, b[i].weights, b[i].layers);
      json rest = chain(next, b[i].weights, b[i].end, b[i].join, false);
      for (json& l : rest) b[i].layers.push_back(std::move(l));
      if (!b[i].join) fail(first, "a branch from '" + t + "' that never joins the other");
    }
    if (b[0].join != b[1].join) {
      fail(*b[0].join, "the two branches from '" + t + "' end in different nodes");
    }
    const onnx::NodeProto& add = *b[0].join;
    used_.insert(&add);
    // The body is the Add's first input, unless that is the identity.
    int body = b[0].end == add.input(0) ? 0 : 1;
    if (b[body].layers.empty()) body = 1 - body;
    if (b[body].layers.empty()) fail(add, "both branches of the block are the identity");
    json block = {{"type", "residual"}, {"body", b[body].layers}};
    if (!b[1 - body].layers.empty()) block["shortcut"] = b[1 - body].layers;
    weights.append(std::move(b[body].weights));
    weights.append(std::move(b[1 - body].weights));
    layers.push_back(block);
    return add.output(0);
  }

  // Whether `n` is one of the input's scaling steps (skipped).
  bool preprocessing(const onnx::NodeProto& n) const {
    const std::string& op = n.op_type();
    if (op == "Cast") return true;
    if (op != "Div" && op != "Sub" && op != "Mul") return false;
    return n.input_size() == 2 && is_constant(n.input(1)) && !only_reader(n.output(0), "Erf");
  }

  // Appends the layer of node `n` (and of the nodes it takes along); returns its output.
  std::string layer(const onnx::NodeProto& n, Weights& weights, json& layers) {
    const std::string& op = n.op_type();
    if (op == "Gemm") {
      if (attr_int(n, "transA", 0) != 0 || attr_float(n, "alpha", 1) != 1.0f ||
          attr_float(n, "beta", 1) != 1.0f) {
        fail(n, "only transA = 0, alpha = 1 and beta = 1 are supported");
      }
      const Constant& w = constant(n, 1);
      if (w.dims.size() != 2) fail(n, "its weight must be 2-dimensional");
      const bool trans = attr_int(n, "transB", 0) != 0;
      const int64_t out = trans ? w.dims[0] : w.dims[1];
      weights.params.push_back(trans ? w.values : transposed(w.values, w.dims[0], w.dims[1]));
      return linear(n, n.input_size() > 2 && !n.input(2).empty() ? &constant(n, 2) : nullptr, out,
                    n.output(0), weights, layers);
    }
    if (op == "MatMul") {
      const Constant& w = constant(n, 1);
      if (w.dims.size() != 2) fail(n, "its weight must be 2-dimensional [I, O]");
      weights.params.push_back(transposed(w.values, w.dims[0], w.dims[1]));
      const onnx::NodeProto* add = only_reader(n.output(0), "Add");
      const Constant* bias = nullptr;
      std::string y = n.output(0);
      if (add && add->input(0) == n.output(0) && is_constant(add->input(1))) {
        used_.insert(add);
        bias = &constants_.at(add->input(1));
        y = add->output(0);
      }
      return linear(n, bias, w.dims[1], y, weights, layers);
    }
    if (op == "Conv") {
      const Constant& w = constant(n, 1);
      if (w.dims.size() != 4 || w.dims[2] != w.dims[3]) fail(n, "its weight must be [O, C, K, K]");
      if (attr_int(n, "group", 1) != 1) fail(n, "only group = 1 is supported");
      for (int64_t d : attr_ints(n, "dilations")) {
        if (d != 1) fail(n, "only dilations of 1 are supported");
      }
      const onnx::AttributeProto* pad = attribute(n, "auto_pad");
      if (pad && pad->s() != "NOTSET") fail(n, "auto_pad is not supported (give pads)");
      json l = {{"type", "conv2d"},
                {"out", w.dims[0]},
                {"kernel", w.dims[2]},
                {"stride", square(n, "strides", 1)},
                {"padding", square(n, "pads", 0)}};
      weights.params.push_back(w.values);
      if (n.input_size() > 2 && !n.input(2).empty()) {
        weights.params.push_back(bias_of(n, constant(n, 2), w.dims[0]));
      } else {
        l["bias"] = false;
      }
      layers.push_back(l);
      return n.output(0);
    }
    if (op == "BatchNormalization") {
      if (attr_int(n, "training_mode", 0) != 0) fail(n, "training_mode must be 0");
      const float momentum = attr_float(n, "momentum", 0.9f);
      layers.push_back({{"type", "batch_norm"},
                        {"eps", tidy(attr_float(n, "epsilon", 1e-5f))},
                        {"momentum", tidy(1.0f - momentum)}});
      weights.params.push_back(constant(n, 1).values);
      weights.params.push_back(constant(n, 2).values);
      weights.buffers.push_back(constant(n, 3).values);
      weights.buffers.push_back(constant(n, 4).values);
      return n.output(0);
    }
    if (op == "LayerNormalization") {
      if (attr_int(n, "axis", -1) != -1)
        fail(n, "only axis = -1 (the last dimension) is supported");
      const Constant& gamma = constant(n, 1);
      layers.push_back({{"type", "layer_norm"}, {"eps", tidy(attr_float(n, "epsilon", 1e-5f))}});
      weights.params.push_back(gamma.values);
      weights.params.push_back(n.input_size() > 2 && !n.input(2).empty()
                                   ? constant(n, 2).values
                                   : std::vector<float>(gamma.values.size(), 0.0f));
      return n.output(0);
    }
    if (op == "Relu" || op == "Tanh" || op == "Sigmoid" || op == "Gelu") {
      const onnx::AttributeProto* approximate = attribute(n, "approximate");
      if (approximate && approximate->s() != "none") fail(n, "only the exact GELU is supported");
      std::string type = op;
      type[0] = static_cast<char>(std::tolower(type[0]));
      layers.push_back({{"type", type}});
      return n.output(0);
    }
    if (op == "MaxPool" || op == "AveragePool") {
      if (attr_int(n, "ceil_mode", 0) != 0) fail(n, "only ceil_mode = 0 is supported");
      for (int64_t d : attr_ints(n, "dilations")) {
        if (d != 1) fail(n, "only dilations of 1 are supported");
      }
      const int64_t padding = square(n, "pads", 0);
      if (op == "AveragePool" && padding > 0 && attr_int(n, "count_include_pad", 0) != 1) {
        fail(n, "padding must count (count_include_pad = 1), as the engine's does");
      }
      layers.push_back({{"type", op == "MaxPool" ? "max_pool2d" : "avg_pool2d"},
                        {"kernel", square(n, "kernel_shape", 0)},
                        {"stride", square(n, "strides", 1)},
                        {"padding", padding}});
      return n.output(0);
    }
    if (op == "GlobalAveragePool") {
      layers.push_back({{"type", "global_avg_pool"}});
      // Its [N, C, 1, 1] is flattened after it; the engine's gives [C] at once.
      if (const onnx::NodeProto* f = only_reader(n.output(0), "Flatten")) {
        used_.insert(f);
        return f->output(0);
      }
      return n.output(0);
    }
    if (op == "Flatten") {
      if (attr_int(n, "axis", 1) != 1) fail(n, "only axis = 1 is supported");
      layers.push_back({{"type", "flatten"}});
      return n.output(0);
    }
    if (op == "Reshape") {
      if (n.input_size() < 2 || !is_constant(n.input(1))) {
        fail(n, "its shape must be a constant; write the flattening as torch.flatten(x, 1)");
      }
      const std::vector<float>& shape = constants_.at(n.input(1)).values;
      if (shape.size() != 2 || !(shape[1] == -1 || shape[0] == -1 || shape[0] == 0)) {
        fail(n, "only a flattening reshape to [N, -1] is supported");
      }
      layers.push_back({{"type", "flatten"}});
      return n.output(0);
    }
    if (op == "Dropout" || op == "Identity") return n.output(0);
    fail(n, "operator " + op +
                " has no engine layer (supported: Gemm, MatMul, Add, Conv, BatchNormalization, "
                "LayerNormalization, Relu, Gelu, Tanh, Sigmoid, MaxPool, AveragePool, "
                "GlobalAveragePool, Flatten, Reshape, Dropout, Identity)");
  }

  // A linear layer of `out` outputs whose weight was just added; its bias from `bias`, if any.
  std::string linear(const onnx::NodeProto& n, const Constant* bias, int64_t out,
                     const std::string& y, Weights& weights, json& layers) {
    json l = {{"type", "linear"}, {"out", out}};
    if (bias) {
      weights.params.push_back(bias_of(n, *bias, out));
    } else {
      l["bias"] = false;
    }
    layers.push_back(l);
    return y;
  }

  std::vector<float> bias_of(const onnx::NodeProto& n, const Constant& c, int64_t out) {
    if (static_cast<int64_t>(c.values.size()) != out) {
      fail(n, "its bias has " + std::to_string(c.values.size()) + " values for " +
                  std::to_string(out) + " outputs");
    }
    return c.values;
  }

  // The weights in the arena layout of `spec`, checked slot by slot.
  static Checkpoint checkpoint(const ModelSpec& spec, Weights weights) {
    Checkpoint c{.model_spec = spec.json};
    size_t p = 0, b = 0;
    for (const WeightedLayer& l : weighted_layers(spec)) {
      for (const WeightSlot& s : l.slots) {
        std::vector<std::vector<float>>& list = s.buffer ? weights.buffers : weights.params;
        size_t& at = s.buffer ? b : p;
        if (at >= list.size() || static_cast<int64_t>(list[at].size()) != s.shape.numel()) {
          throw OnnxImportError(l.path + " (" + l.kind + "): the graph's " + s.name + " has " +
                                (at < list.size() ? std::to_string(list[at].size()) : "no") +
                                " values, the layer needs " + s.shape.to_string());
        }
        std::vector<float>& dst = s.buffer ? c.buffers : c.parameters;
        dst.resize(static_cast<size_t>(s.offset), 0.0f);  // the alignment padding
        dst.insert(dst.end(), list[at].begin(), list[at].end());
        ++at;
      }
      if (!l.slots.empty()) c.parameters.resize(static_cast<size_t>(l.end), 0.0f);
    }
    return c;
  }

  const onnx::GraphProto& graph_;
  std::map<std::string, Constant> constants_;
  std::map<std::string, std::vector<const onnx::NodeProto*>> consumers_;
  std::set<const onnx::NodeProto*> used_;
  json embeddings_ = json::array();  // the spec's "embeddings", when the graph has them
  int64_t input_width_ = 0;          // the input's features, for a flat input
};

Checkpoint import_model(const std::string& bytes, const std::filesystem::path* dir) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) throw OnnxImportError("not an ONNX model (it does not parse)");
  for (const onnx::OperatorSetIdProto& set : model.opset_import()) {
    if (!set.domain().empty() && set.domain() != "ai.onnx") {
      throw OnnxImportError("operator set '" + set.domain() + "' is not supported");
    }
  }
  return Importer(model.graph(), dir).run();
}

}  // namespace

Checkpoint import_onnx_bytes(const std::string& bytes) { return import_model(bytes, nullptr); }

Checkpoint import_onnx_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw OnnxImportError(path + ": cannot be read");
  std::stringstream bytes;
  bytes << in.rdbuf();
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  try {
    return import_model(bytes.str(), &dir);
  } catch (const OnnxImportError& e) {
    throw OnnxImportError(path + ": " + e.what());
  }
}

}  // namespace tuner::training
