#include "schemes/forget.h"

#include <array>

#include "core/ggml_type.h"

#include "schemes/forget_bnb.h"
#include "schemes/forget_ct.h"
#include "schemes/forget_fp8.h"
#include "schemes/forget_gguf.h"
#include "schemes/forget_mlx.h"
#include "schemes/forget_mxfp4.h"
#include "schemes/forget_nvfp4.h"

namespace amn {
namespace {

using namespace std::string_view_literals;

// One row per scheme `forget --scheme` names (docs/cli.md "amn forget"). The rows not
// available yet are named so that asking for them says so, rather than "unknown".
constexpr std::array kSchemes = {
    ForgetSchemeRow{"nf4"sv, "bitsandbytes quantize_4bit (NF4)"sv, true},
    ForgetSchemeRow{"fp4"sv, "bitsandbytes quantize_4bit (FP4)"sv, true},
    ForgetSchemeRow{"int8"sv, "bitsandbytes LLM.int8() (int8_vectorwise_quant)"sv, true},
    ForgetSchemeRow{"fp8-block"sv, "transformers FineGrainedFP8 (E4M3, 128x128 blocks)"sv, true},
    ForgetSchemeRow{"fp8-channel"sv, "compressed-tensors float-quantized, per channel (llm-compressor)"sv, true},
    ForgetSchemeRow{"fp8-tensor"sv, "compressed-tensors float-quantized, per tensor (llm-compressor)"sv, true},
    ForgetSchemeRow{"mxfp4"sv, "transformers quantize_to_mxfp4 (OCP MX FP4, gpt-oss _blocks/_scales)"sv, true},
    ForgetSchemeRow{"nvfp4"sv, "compressed-tensors nvfp4-pack-quantized (llm-compressor NVFP4A16)"sv, true},
    ForgetSchemeRow{"mlx"sv, "MLX mx.quantize (affine, mxfp4, nvfp4, mxfp8; mlx-lm weight/scales[/biases])"sv, true},
};

}  // namespace

std::span<const ForgetSchemeRow> forget_scheme_rows() { return kSchemes; }

Status no_bnb_settings(const ForgetSettings& s) {
  if (!s.blocksize && !s.double_quant && s.torch_threads == 1) return {};
  return make_error(ErrorCode::invalid_argument, s.scheme + " has no blocksize or double quantization (bitsandbytes 4-bit only)");
}

bool is_forgettable_dtype(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::F32; }

Result<std::unique_ptr<Forgetter>> make_forgetter(const ForgetSettings& s) {
  if ((s.bits || s.group_size || !s.mode.empty()) && (s.gguf || s.scheme != "mlx")) {
    const char* key = s.bits ? "bits" : s.group_size ? "group size" : "mode";
    return make_error(ErrorCode::invalid_argument, key + std::string(": only mlx takes it, not ") + s.scheme);
  }
  if (s.gguf) return make_gguf_forgetter(s);
  for (const auto& row : kSchemes) {
    if (row.name != s.scheme) continue;
    if (!row.available) {
      return make_error(ErrorCode::unsupported, "scheme '" + s.scheme + "' (" + std::string(row.producer) +
                                                    ") is not built yet");
    }
    if (s.scheme == "nf4" || s.scheme == "fp4" || s.scheme == "int8") return make_bnb_forgetter(s);
    if (s.scheme == "fp8-block") return make_fp8_forgetter(s);
    if (s.scheme == "fp8-channel" || s.scheme == "fp8-tensor") return make_ct_forgetter(s);
    if (s.scheme == "nvfp4") return make_nvfp4_forgetter(s);
    if (s.scheme == "mxfp4") return make_mxfp4_forgetter(s);
    if (s.scheme == "mlx") return make_mlx_forgetter(s);
  }
  std::string names;
  for (const auto& row : kSchemes) names += (names.empty() ? "" : ", ") + std::string(row.name);
  if (ggml_type_from_name(s.scheme)) {
    return make_error(ErrorCode::invalid_argument, "scheme '" + s.scheme + "' is a GGUF type: it needs GGUF output");
  }
  return make_error(ErrorCode::invalid_argument, "unknown scheme '" + s.scheme + "' (" + names + ")");
}

}  // namespace amn
