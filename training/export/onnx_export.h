// Export of an engine model to ONNX (as torch.onnx.export does for PyTorch): the graph follows the
// model spec, the weights come from the model's parameter arena. The mapping of layers to ONNX
// operators, the opset and the tensor names are documented in docs/onnx_export.md.
//
// The exported graph computes the model's eval-mode forward pass:
//   input  "input"  float32 [N, spec.input...]   (N: a dynamic batch dim named "N"), or uint8
//                   with an OnnxInputTransform that says so
//   output "logits" float32 [N, spec.output...]
// Dropout is the identity and batch norm uses the running statistics, as Mode::kEval does. An
// OnnxInputTransform puts the data pipeline's scaling and normalization at the graph's input, so
// that the exported model takes a dataset's own values (e.g. uint8 pixels).
#ifndef TUNER_TRAINING_EXPORT_ONNX_EXPORT_H_
#define TUNER_TRAINING_EXPORT_ONNX_EXPORT_H_

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "training/model_spec.h"
#include "training/sequential.h"

namespace tuner::training {

// The ONNX opset the exporter writes (the default domain), and the IR version that goes with it.
// Opset 17 is the first with LayerNormalization; it has no Gelu (opset 20), which is therefore
// written as its erf formula.
inline constexpr int64_t kOnnxOpset = 17;
inline constexpr int64_t kOnnxIrVersion = 8;
inline constexpr char kOnnxInputName[] = "input";
inline constexpr char kOnnxOutputName[] = "logits";

// An export that failed; nothing was written. what() is "<where>: <reason>", where `where` is the
// JSON path of the layer that could not be exported (e.g. "layers[3].body[1]"), "model" for a
// model that does not match its spec or a graph the ONNX checker rejects, or the output file for
// an I/O error.
class OnnxExportError : public std::runtime_error {
 public:
  OnnxExportError(std::string where, std::string reason);
  const std::string& where() const { return where_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string where_, reason_;
};

// The graph's input as a dataset holds it, turned into the model's input as the engine's data
// pipeline does: x = (float(raw) / divisor - mean) * (1 / stddev), each step its own ONNX node
// (Cast, Div, Sub, Mul) computing what the engine computes in float32 (the IDX reader's division,
// then training::Normalizer's (x - mean) * inv), so that raw values give the engine's inputs.
// A step that changes nothing (divisor 1, mean 0, stddev 1, float32 input) has no node.
struct OnnxInputTransform {
  bool uint8 = false;    // the graph's input is uint8 (image pixels 0..255), cast to float32
  float divisor = 1.0f;  // the loader's scaling, > 0: 255 for pixels
  float mean = 0.0f;     // the normalization, in the loader's units
  float stddev = 1.0f;   // > 0
  // Per-channel normalization along the input's first dimension [N, K, ...]: when set, both hold
  // K values (stddev > 0), x[:, k, ...] = (x[:, k, ...] - mean[k]) * (1 / stddev[k]), written as
  // constants [K, 1, ...] of the sample's rank; `mean` and `stddev` above are then unused. A
  // table's input [N, F] has one per feature, an image's [N, C, H, W] one per channel.
  // Default: empty, the scalar normalization.
  std::vector<float> feature_mean, feature_stddev;
};

struct OnnxExportOptions {
  // ModelProto.graph.name; default "tuner_model".
  std::string graph_name = "tuner_model";
  // ModelProto.doc_string; default empty.
  std::string doc_string;
  // ModelProto.model_version; default 0 (unset).
  int64_t model_version = 0;
  // ModelProto.metadata_props, in this order (e.g. {"study", "mnist"}, {"trial", "17"}); the
  // exporter adds "tuner.model_spec" (ModelSpec::json) after them. Keys must be unique.
  std::vector<std::pair<std::string, std::string>> metadata;
  // How the graph's input becomes the model's input (above). Default: none, the graph takes the
  // model's input (float32) as it is.
  std::optional<OnnxInputTransform> input_transform;
};

// The serialized ModelProto (opset kOnnxOpset, ir_version kOnnxIrVersion) of `model`'s eval-mode
// forward pass. The model is validated by onnx::checker::check_model and by strict shape
// inference, and each layer's inferred output shape is checked against its spec.
// REQUIRES: `model` was built from `spec` (build_model(spec, ...)); checked, as far as the
// layer kinds and parameter names and shapes tell. Throws OnnxExportError.
// Thread safety: reads the model; do not run it concurrently with a training step on it.
[[nodiscard]] std::string onnx_model_bytes(const ModelSpec& spec, const Sequential& model,
                                           const OnnxExportOptions& options = {});

// Writes onnx_model_bytes(spec, model, options) to `out` atomically: to a temporary file in the
// same directory, flushed, then renamed over `out`; on any failure `out` is untouched and the
// temporary file removed. REQUIRES: out's directory exists. Throws OnnxExportError.
void export_onnx(const ModelSpec& spec, const Sequential& model, const std::filesystem::path& out,
                 const OnnxExportOptions& options = {});

}  // namespace tuner::training

#endif  // TUNER_TRAINING_EXPORT_ONNX_EXPORT_H_
