// FP8 encoders (forget): E4M3 codes with per-tile scales, bit-exact with transformers'
// FineGrainedFP8 quantizer (integrations/finegrained_fp8.py Fp8Quantize.convert at
// 0095b97653938e60bedf484ded6499f486611582), the DeepSeek-V3 layout: `weight` F8_E4M3 and
// `weight_scale_inv` F32 [ceil(rows / br), ceil(cols / bc)]. Fixtures and provenance:
// fixtures/lethe/fp8/README.md. Values are the weight's elements as F32 (Fp8Quantize.convert
// computes in F32: `value.to(torch.float32)` first, so BF16/F16 sources need no rounding of
// intermediates), row-major [rows, cols].
#pragma once
#include <cstdint>

namespace amn::lethe {

// c10's float -> float8_e4m3fn (c10/util/Float8_e4m3fn.h fp8e4m3fn_from_fp32_value): round to
// nearest even; |x| >= 480 (and NaN, +-Inf) -> 0x7F | sign (NaN: e4m3fn has no infinity).
uint8_t f32_to_e4m3fn(float x);

struct Fp8Block {
  uint64_t rows = 128;  // weight_block_size[0]
  uint64_t cols = 128;  // weight_block_size[1]
};

// Scales of the tiles of rows [r0, r1) (r0 a multiple of block.rows; r1 a multiple of it or
// the last row): for each tile, max_abs = amax |x| (NaN propagates);
// scale = max_abs > 0 ? f32(f32(1 / max_abs) * 448) : 1 (`_FP8_MAX / safe_max_abs` is
// reciprocal() * 448; a NaN or zero tile takes 1); scale_inv = f32(1 / scale), what
// `weight_scale_inv` holds. `values` points at row r0; writes ceil((r1 - r0) / block.rows) *
// ceil(cols / block.cols) entries of each of scale and scale_inv, row-major.
// transformers refuses shapes its block does not divide (ValueError); a partial tile here is
// scaled as if padded, which no producer writes: the caller decides (see the README).
void fp8_block_scales(const float* values, uint64_t cols, uint64_t r0, uint64_t r1, Fp8Block block,
                      float* scale, float* scale_inv);

// Codes of rows [r0, r1): clamp(x * scale[tile], -448, 448) -> E4M3 (NaN stays NaN: 0x7F |
// sign). `values` and `out` point at row r0; `scale` at the band's first tile row (the
// multiplying scale, as fp8_block_scales writes it).
void fp8_block_quantize_rows(const float* values, uint64_t cols, uint64_t r0, uint64_t r1, Fp8Block block,
                             const float* scale, uint8_t* out);

// --reuse-scales with a reference's weight_scale_inv only: scale = f32(1 / scale_inv) per
// tile, the closest the stored inverse gives back (not always the producer's own scale).
void fp8_block_scales_from_inv(const float* scale_inv, uint64_t count, float* scale);

}  // namespace amn::lethe
