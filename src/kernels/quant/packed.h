// Integer weight quantization kernels, part 1: what the integer families share
// (GPTQ, AWQ, compressed-tensors, MLX: kernels/quant/{gptq,awq,mlx}.h) and the
// compressed-tensors integer schemes (pack-quantized W4A16/W8A16, naive/int-quantized).
//
// Every kernel writes rows of the logical weight, [out_features, in_features] row-major
// (the nn.Linear orientation) whatever the packed layout, directly in the requested
// float type (F16, BF16, F32), for a range of output rows, so a converter can run it in
// pieces. No allocation, no I/O; tensor bytes are little-endian and may be unaligned.
//
// Exactness. GPTQ, AWQ and compressed-tensors compute (q - z) * scale: for F16 / BF16
// scales that product is exact in F32, so every target gets it rounded once
// (kRoundOnce below; GPTQModel's convert_gptq_file arithmetic). In the scales' dtype (the
// natural one) that is bit-identical to the producer's own dequantize function
// (dequantize_weight, dequantize_gemm, decompress_weight); F32 is the exact product.
// MLX affine computes two array ops, each rounded to the scales' dtype (its "canonical"
// dtype); that kernel repeats those steps and casts the result to the requested type
// with PyTorch's casts (kernels/cast.h). docs/formats/quantized/*.md per family.
// Codes of at most 4 bits (packed compressed-tensors, GPTQ, AWQ, MLX) go through table
// lookups in Highway (kernels/quant/packed_lut.h: each group's 16 outputs computed by
// the reference arithmetic, so the same bytes on every target) unless the reference is
// forced (kernels/cast.h force_impl, AMN_FORCE_IMPL=scalar); 5 to 8 bits (and naive
// int8 weights) repeat the reference's float operations in Highway vectors
// (packed_lut.h affine_runs), except scattered groups (g_idx, act-order), which run the
// reference loops.
//
// Row pieces and inputs. The kernels index every tensor by absolute output row, so the
// plain call passes whole tensors. MLX and compressed-tensors rows are contiguous: a
// caller holding only rows [b, e) may pass those slices with out_features = e - b and
// rows [0, e - b) (compressed-tensors with a packed weight_zero_point: b a multiple of
// 32 / bits, the zero-point slice starting at word row b / (32 / bits); g_idx whole).
// GPTQ and AWQ output rows are qweight columns: they need whole qweight/qzeros/scales.
//
// Validation. Every dequantize_* function first validates its parameters and the
// tensors' byte sizes (and, for g_idx, every index) and returns the error instead of
// reading out of bounds; validate_* does only that, for callers that check once.
// Errors: ErrorCode::invalid_argument for impossible parameters (bits, dtypes, row
// ranges), ErrorCode::parse for tensors that do not fit the parameters.
// Layouts: docs/formats/quantized/compressed-tensors.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "core/dtype.h"
#include "core/error.h"

namespace amn::quant {

// F16, BF16 or F32: the scale dtypes the kernels accept, and the output types.
bool is_quant_float(DType t);

// Rounds `count` f32 values to `canonical` (F16/BF16: round to nearest even, PyTorch's
// conversion; F32: as is), then casts the rounded values to `out` with PyTorch's casts,
// writing count * sizeof(out) bytes. The last step of every integer kernel.
void store_rounded(DType canonical, DType out, const float* values, size_t count, uint8_t* dst);
// The canonical dtype of the families whose product is exact in F32 (GPTQ, AWQ,
// compressed-tensors): the F32 value rounded once, to the requested type.
inline constexpr DType kRoundOnce = DType::F32;

// Reads a little-endian float of type t (F16/BF16/F32) at element index i of bytes.
float load_quant_float(DType t, const uint8_t* bytes, uint64_t i);
// Elements [first, first + count) of the same, into out (one loop per dtype: the vector
// paths' scales and biases per window, without a call per element).
void load_quant_floats(DType t, const uint8_t* bytes, uint64_t first, size_t count, float* out);

// Helpers the family kernels share.
uint32_t load_u32(const uint8_t* bytes, uint64_t word);
inline uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }
std::optional<uint64_t> checked_mul3(uint64_t a, uint64_t b, uint64_t c);
// `what` has `actual` bytes where the parameters need `expected` (0 when they overflow).
Status check_tensor_bytes(std::string_view what, uint64_t actual, std::optional<uint64_t> expected);
// The scale dtype, output type, row range and destination size of a *_rows call.
Status check_rows_call(DType scale_dtype, DType out, uint64_t rows, uint64_t cols, uint64_t row_begin,
                       uint64_t row_end, size_t dst_bytes);
// Values computed per row piece before store_rounded (stack buffers of this many floats).
inline constexpr size_t kQuantChunk = 256;

// ---- compressed-tensors integer schemes ----

// compressed-tensors `config_groups.*.weights` plus the tensors' shapes.
struct CtIntParams {
  uint32_t bits = 4;              // num_bits, 1..8
  bool packed = true;             // pack-quantized (weight_packed I32) or naive/int-quantized (weight I8)
  uint64_t out_features = 0;      // weight_shape[0] (pack-quantized) or weight.shape[0]
  uint64_t in_features = 0;       // weight_shape[1] or weight.shape[1]
  uint64_t scale_rows = 0;        // weight_scale.shape[0]: 1 or out_features
  uint64_t scale_cols = 0;        // weight_scale.shape[1]: groups (1 for channel / tensor)
  DType scale_dtype = DType::BF16;
  bool has_zero_point = false;    // weight_zero_point present (asymmetric)
  bool has_g_idx = false;         // weight_g_idx present (activation order)
};

struct CtIntTensors {
  std::span<const uint8_t> weight;      // packed: I32 [out, ceil(in / (32 / bits))]; naive: I8 [out, in]
  std::span<const uint8_t> scale;       // [scale_rows, scale_cols], scale_dtype
  std::span<const uint8_t> zero_point;  // packed: I32 [ceil(out / (32 / bits)), scale_cols]; naive: I8 [scale_rows, scale_cols]
  std::span<const uint8_t> g_idx;       // I32 [in], or empty
};

// Expected byte size of weight_packed / packed weight_zero_point for these params.
uint64_t ct_packed_weight_bytes(const CtIntParams& p);
uint64_t ct_packed_zero_point_bytes(const CtIntParams& p);

Status validate_ct_int(const CtIntParams& p, const CtIntTensors& t);

// Writes rows [row_begin, row_end) of the [out, in] weight to dst, in `out` type:
// (row_end - row_begin) * in_features * sizeof(out) bytes.
// value = round_out(scale * (q - zero_point)): the exact F32 product rounded once to `out`
// (in the scale dtype, compressed-tensors' dequantize).
Status dequantize_ct_int_rows(const CtIntParams& p, const CtIntTensors& t, uint64_t row_begin,
                              uint64_t row_end, DType out, std::span<uint8_t> dst);

}  // namespace amn::quant
