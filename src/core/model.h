// The parsed model: what every operation starts from. Parsing fills it from headers
// only; nothing here holds tensor data.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/ggml_type.h"
#include "core/limits.h"
#include "core/logical_op.h"

namespace amn {

// One tensor as stored.
struct TensorRecord {
  std::string name;
  DType dtype = DType::F32;
  std::vector<uint64_t> shape;  // row-major, logical elements
  uint64_t elements = 0;
  uint32_t file = 0;            // index into Model::files (and the FileSet)
  uint64_t offset = 0;          // absolute byte offset in that file
  uint64_t nbytes = 0;          // 0 when !size_known
  // The stored type's name when DType cannot describe it: a GGUF block type ("Q4_K") or
  // an unknown GGUF type id ("type 57"). Empty for every DType-described tensor.
  std::string block_type;
  GgmlType ggml_type = kNoGgmlType;  // a sized GGUF block type (core/ggml_type.h)
  bool size_known = true;       // false: an unknown type whose extent cannot be told

  // Stored layouts other than a plain run of row-major elements (NumPy, PyTorch):
  bool big_endian = false;  // this tensor's elements are big-endian (NPY '>', a big-endian torch archive)
  // Element strides, one per dim; empty = contiguous row-major. With strides, `offset` is
  // element [0,...,0] and `nbytes` the storage span from there covering every element
  // (a torch view, a Fortran-order NPY array).
  std::vector<uint64_t> strides;
  // A DEFLATE-compressed ZIP entry (np.savez_compressed): `offset`/`nbytes` are the
  // compressed data in the file; the elements are inflated bytes
  // [inflated_skip, inflated_skip + elements * element size) of an entry that inflates
  // to exactly `inflated_size` bytes (the rest is the NPY header).
  bool deflated = false;
  uint64_t inflated_size = 0;
  uint64_t inflated_skip = 0;
  uint32_t crc32 = 0;  // of the inflated entry, checked when it is inflated
};

// "F32", "BF16", "Q4_K", ...: what the tensor is stored as.
inline std::string_view stored_type_name(const TensorRecord& t) {
  return t.block_type.empty() ? dtype_name(t.dtype) : std::string_view(t.block_type);
}

// A tensor described without a location: what a writer needs for its header.
struct TensorSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<uint64_t> shape;
  uint64_t nbytes = 0;
  GgmlType ggml_type = kNoGgmlType;  // a GGUF block type copied through (GGUF output only)
};

// What a user means by a quantized weight: e.g. a GPTQ group (qweight, qzeros, scales,
// g_idx) is one logical tensor "<base>.weight". Its parts are records of the model that
// convert consumes instead of copying.
struct LogicalTensor {
  std::string name;
  std::string scheme;                // "fp8", "gptq", "awq", "bnb-nf4", ... (docs/formats/quantized)
  std::string variant;               // the parameters in words: "e4m3, 128x128 blocks, F32 scale_inv"
  std::vector<uint64_t> shape;       // [out_features, in_features] (nn.Linear), or [experts, out, in]
  uint64_t elements = 0;
  DType natural = DType::F32;        // what the producer's own dequantizer returns
  uint64_t stored_bytes = 0;         // all parts together
  std::vector<std::pair<std::string, uint32_t>> parts;  // role ("qweight", "scales", ...) -> record
  std::shared_ptr<const LogicalOp> op;  // made by its scheme (src/schemes)
  // Set when the parts do not add up (a missing companion, a scale grid that fits no
  // layout): inspect shows it, converting this tensor fails with it.
  std::string error;
  double bits_per_weight() const { return elements ? 8.0 * static_cast<double>(stored_bytes) / static_cast<double>(elements) : 0; }
};

struct ModelFile {
  std::string name;
  uint64_t size = 0;
  uint64_t header_bytes = 0;  // bytes before the data section (safetensors: 8 + n)
};

// The parsed header objects of a format, kept for writers that reuse them (GGUF→GGUF
// keeps the source's KVs). Each format derives its own; Model::format says which.
struct FormatState {
  virtual ~FormatState() = default;
};

// The container a model was read from. Its name, extensions and content sniff are one
// row of the format registry (session/registry.h); the name is also here, for reports.
enum class ModelFormat : uint8_t { safetensors, gguf, npy, npz, pth };
std::string_view model_format_name(ModelFormat format);  // "safetensors", "gguf", "npy", "npz", "pth"

struct Model {
  ModelFormat format = ModelFormat::safetensors;
  std::vector<ModelFile> files;
  std::vector<TensorRecord> tensors;                         // in file, then offset order
  std::vector<std::pair<std::string, std::string>> metadata; // in file order
  std::string config_json;  // a sibling config.json, minified; empty when absent
  // The quantizer's own sibling config (quantize_config.json, else quant_config.json:
  // session/open.h) as written, minified, and its file name; empty when absent.
  std::string quant_config_json, quant_config_file;
  std::string index_name;   // the *.index.json a sharded model was opened through
  bool sharded = false;     // tensors live in more than one file
  bool big_endian = false;  // multi-byte tensor data is big-endian (a big-endian GGUF)
  std::vector<std::string> warnings;  // problems that did not stop the parse
  // The limits the model was opened with: plans made from it (and so every read of its
  // tensors: inflating, gathering) keep to the same bounds.
  ParseLimits limits;
  // Format-specific facts, produced by the format's module: a JSON object for the
  // model-info document ("details"; GGUF: version, alignment, every KV with its type)
  // and the same for people as (label, value) lines, long arrays summarised.
  std::string details_json;
  std::vector<std::pair<std::string, std::string>> details_text;
  std::shared_ptr<const FormatState> format_state;
  // Quantized weights found by scheme detection (schemes/detect.h), and for every record
  // the logical tensor it is a part of (-1: none). Empty when nothing is quantized.
  std::vector<LogicalTensor> logical;
  std::vector<int32_t> part_of;
  static constexpr int32_t kNotPart = -1;
  // A companion consumed without output of its own (an FP8 layer's k_scale / v_scale).
  static constexpr int32_t kConsumedCompanion = -2;

  bool is_part(size_t record) const { return record < part_of.size() && part_of[record] >= 0; }
  bool is_consumed(size_t record) const { return record < part_of.size() && part_of[record] != kNotPart; }
  // Parameters as a user counts them: a quantized weight's elements once, its scales,
  // zeros, g_idx and maps not at all.
  uint64_t parameter_count() const;
  uint64_t tensor_bytes() const;
  const TensorRecord* find(std::string_view name) const;
};

}  // namespace amn
