// The forget encoders' Highway kernels (bnb_encode_simd.cpp, fp8_encode_simd.cpp), for the
// reference files that dispatch to them (bnb_encode.cpp, fp8_encode.cpp, fp8_ct_encode.cpp,
// torch_ops.cpp). Each writes exactly the reference's bytes on every target (tests_native/
// test_lethe_simd.cpp); the dispatchers skip them when the reference is forced
// (kernels/cast.h: force_impl, AMN_FORCE_IMPL=scalar). A kernel that returns a count did
// that much (blocks or rows); the reference does the rest (Highway's one-lane target does
// nothing and returns 0).
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace amn::lethe::simd {

// lethe::absmax.
float absmax(const float* values, uint64_t count);

// quantize_4bit's first `blocks` blocks, all full (len == blocksize), with the codebook's
// 15 sorted midpoints `bounds` and `order` (argsort of the codes): absmax from absmax_in
// when given, else computed and written to absmax_out. Returns the blocks done (0 or
// blocks).
uint64_t bnb4_full_blocks(const float* bounds, const uint8_t* order, const float* in, uint64_t blocks,
                          uint64_t blocksize, const float* absmax_in, float* absmax_out, uint8_t* packed,
                          bool fp4_signed_zero);

// bnb_int8_quantize_row_with_scb's codes: the row's `scale` (f32(1 / SCB) * 127) given,
// and its amax |x| as lethe::absmax returns it when known (else null: the kernel finds it).
// Returns false when not done.
bool bnb_int8_row(const float* row, uint64_t cols, float scale, const float* amax, int8_t* out);

// fp8_block_scales' amax per tile of `rows` rows (values at the band's first row): the
// sign-cleared bits of each tile's largest |x| (> 0x7F800000: the tile holds a NaN),
// tile_cols entries per tile row. Returns false when not done.
bool fp8_tile_absmax_bits(const float* values, uint64_t cols, uint64_t rows, uint64_t block_rows,
                          uint64_t block_cols, uint32_t* bits);

// fp8_block_quantize_rows. Returns false when not done.
bool fp8_block_rows(const float* values, uint64_t cols, uint64_t rows, uint64_t block_rows, uint64_t block_cols,
                    const float* scale, uint8_t* out);

// ct_fp8_quantize_rows. Returns false when not done.
bool ct_fp8_rows(const float* values, uint64_t cols, uint64_t rows, DType src, const float* scale, bool per_row,
                 bool add_zero_point, uint8_t* out);

// nvfp4_block_scales. Returns false when not done.
bool nvfp4_scales(const float* values, uint64_t cols, uint64_t rows, DType src, float global_scale, uint8_t* scale_e4m3);

// nvfp4_quantize_rows. Returns false when not done.
bool nvfp4_rows(const float* values, uint64_t cols, uint64_t rows, const uint8_t* scale_e4m3, float global_scale,
                uint8_t* packed, bool signed_zero);

// mxfp4_quantize_rows. Returns false when not done.
bool mxfp4_rows(const float* values, uint64_t rows, uint64_t cols, uint8_t* blocks, uint8_t* scales, bool reuse);

// bitsandbytes quantize_blockwise, one block: the first values' max |x| (NaN passed
// over, from 0) to *am; returns how many it took (whole vectors), the caller goes on.
uint64_t bnb_blockwise_absmax(const float* in, uint64_t n, float* am);
// The codes of the first values times `inv`: lut[norm_to_lut_index(x * inv)], `lut` 65536
// bytes and 3 of padding; returns how many.
uint64_t bnb_blockwise_codes(const float* in, uint64_t n, float inv, const uint8_t* lut, uint8_t* codes);
// torch_mean_f32's cascade_sum_run on n >= 8 values: the sum its 8-lane vector path makes.
// False when not done.
bool bnb_cascade_sum(const float* x, int64_t n, float* sum);

// MLX affine, `groups` groups of `group` values: each one's max and min as MLX's std::max /
// std::min find them (NaN passed over). False (nothing done) unless bits is 2, 3, 4, 5, 6
// or 8 and the group fills whole pairs of vectors.
bool mlx_ranges(const float* values, uint64_t groups, uint64_t group, uint32_t bits, float* w_min, float* w_max);
// Their packed codes with each group's F32 scale and bias (after mlx_ranges said true).
void mlx_codes(const float* values, uint64_t groups, uint64_t group, uint32_t bits, const float* scale,
               const float* bias, uint8_t* packed);
// --reuse-scales: the same with the stored scales and biases (as F32; scales' dtype t),
// each code corrected to a neighbour that dequantizes to the value exactly. False
// (nothing done) on the bits and groups mlx_ranges refuses.
bool mlx_reuse_codes(const float* values, uint64_t groups, uint64_t group, uint32_t bits, DType t, const float* scale,
                     const float* bias, uint8_t* packed);

// MLX fp modes (mlx_fp_quantize_rows), `groups` groups of `group` values: each one's
// max(abs(w)) as MLX reduces it (NaN if the group holds one). False (nothing done) unless
// the group fills whole vectors.
bool mlx_fp_amax(const float* values, uint64_t groups, uint64_t group, float* amax);
// Their codes with each group's divisor (in dtype t): E4M3 bytes (`fp8`), else E2M1
// argmin codes over differences rounded to `code_dtype`, packed two per byte, even low.
// `reuse` (--reuse-scales): each group's stored scale as F32, a value that a code's value
// times it gives exactly taking that code; nullptr otherwise. False (nothing done) on the
// groups mlx_fp_amax refuses.
bool mlx_fp_codes(const float* values, uint64_t groups, uint64_t group, DType t, DType code_dtype, bool fp8,
                  const float* divisor, const float* reuse, uint8_t* codes);
// Each group's scale byte and divisor from its amax (mlx_fp_encode.cpp group_scale): nvfp4
// an E4M3 scale; else an E8M0 one, its exponent from `thresholds` (the reference's
// mlx_fp_exponent_thresholds(t)). False (nothing done) when thresholds is null for them.
bool mlx_fp_scales(const float* amax, uint64_t groups, bool nvfp4, float maxval, DType t, const int32_t* thresholds,
                   uint8_t* scale_bytes, float* divisor);

}  // namespace amn::lethe::simd
