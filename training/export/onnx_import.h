// Import of a model's weights from an ONNX file (the engine's own export, or torch.onnx.export's
// of a PyTorch model made of the operators below): the graph is read back into a model spec and
// its weights, as a training::Checkpoint (spec, parameters, buffers) that training/init_from.h
// loads layer by layer. docs/onnx_export.md, "Import", lists the operators.
//
// Operators (default domain), each becoming one layer of the spec:
//   Gemm (alpha = beta = 1, transA = 0), MatMul with a constant [I, O] (and an Add of a constant
//   [O] after it)                          -> linear
//   Conv (square kernel, equal strides and pads, no dilation, group 1) -> conv2d
//   BatchNormalization -> batch_norm; LayerNormalization (last axis) -> layer_norm
//   Relu, Tanh, Sigmoid, Gelu, and GELU's erf formula (x * 0.5 * (1 + erf(x / sqrt 2)))
//                                          -> relu, tanh, sigmoid, gelu
//   MaxPool, AveragePool (square, ceil_mode 0), GlobalAveragePool (and a Flatten after it)
//                                          -> max_pool2d, avg_pool2d, global_avg_pool
//   Flatten (axis 1), Reshape to [N, -1]   -> flatten
//   Dropout, Identity                      -> nothing (inference graphs)
//   Add of two branches of one tensor      -> residual (body: Add's first input; shortcut: its
//                                             second, the identity when it is the tensor itself)
// Nodes before the first layer that only scale or normalize the input with constants (Cast, Div,
// Sub, Mul: the engine's input transform) are skipped.
//
// Thread safety: pure functions.
#ifndef TUNER_TRAINING_EXPORT_ONNX_IMPORT_H_
#define TUNER_TRAINING_EXPORT_ONNX_IMPORT_H_

#include <stdexcept>
#include <string>

#include "training/checkpoint.h"

namespace tuner::training {

// A file that cannot be imported: what() names the node (its name and operator) or the file and
// what is not supported.
class OnnxImportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The model of an ONNX model's bytes (a serialized ModelProto): its spec (input from the graph's
// first input, [N, sample...] with a static sample) and weights in the arena layout of that spec.
// Weights saved as external data are refused (they are in another file). Throws OnnxImportError.
Checkpoint import_onnx_bytes(const std::string& bytes);
// The same from a file; OnnxImportError names it when it cannot be read. Weights saved as
// external data (torch.onnx.export's default for larger tensors: MODEL.onnx.data beside it) are
// read from the file their "location" names, relative to the model's directory and inside it.
Checkpoint import_onnx_file(const std::string& path);

}  // namespace tuner::training

#endif  // TUNER_TRAINING_EXPORT_ONNX_IMPORT_H_
