// Forgetting to GGUF block types (`forget --to gguf --scheme Q4_K`): every tensor
// llama-quantize --pure would quantize becomes the ggml type (or llama-quantize's
// fallback for a row the type's blocks do not divide), through ggml's own encoders
// (kernels/ggml/quantize.h).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/source.h"
#include "schemes/forget.h"

namespace amn {

// invalid_argument for a name that is no ggml type, unsupported for a type without an
// encoder here or one that needs an importance matrix.
Result<std::unique_ptr<Forgetter>> make_gguf_forgetter(const ForgetSettings& settings);

// One tensor's op to the ggml `type` (or F32), without an importance matrix. With
// `reference`, the tensor's blocks in a GGUF of that type (row after row), every block
// keeps the reference's scales and only the codes are chosen (kernels/ggml/requantize.h).
std::shared_ptr<const EncodeOp> make_gguf_op(const TensorRecord& t, GgmlType type,
                                             std::shared_ptr<const std::vector<uint8_t>> reference);

// forget --like G with a GGUF G (forget_gguf_like.cpp): every input tensor G has gets
// the ggml type it has in G, as llama-quantize's --tensor-type would give it, and keeps
// G's block scales with `reuse_scales`; a tensor G lacks is kept as stored. Reads G's
// blocks with reuse_scales (need_bytes like any read), only its header without.
// Errors: invalid_argument for `scheme` given (G names the types), or a G with no tensor.
Result<std::unique_ptr<Forgetter>> make_gguf_like_forgetter(const Model& ref, FileSet& files, bool reuse_scales,
                                                            std::string_view scheme);

// The ggml type names --to gguf takes, in type-id order, and as one line ("F16, Q4_0, ...").
std::vector<std::string_view> gguf_forget_types();
std::string gguf_forget_type_names();

// The KVs llama-quantize sets in its output (src/llama-quant.cpp): general.file_type, the
// llama_ftype llama-quantize writes for `type` as its file-type argument (Q4_K means
// Q4_K_M: 15), and general.quantization_version (GGML_QNT_VERSION, 2). nullopt for a
// type no ftype names.
struct GgufFileType {
  uint32_t file_type;
  uint32_t quantization_version;
};
std::optional<GgufFileType> gguf_file_type(std::string_view type);

}  // namespace amn
