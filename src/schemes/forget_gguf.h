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
#include "schemes/forget.h"

namespace amn {

// invalid_argument for a name that is no ggml type, unsupported for a type without an
// encoder here or one that needs an importance matrix.
Result<std::unique_ptr<Forgetter>> make_gguf_forgetter(const ForgetSettings& settings);

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
