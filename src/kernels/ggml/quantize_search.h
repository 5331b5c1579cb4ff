// What ggml's block encoders share: the rounding helpers and the scale searches of
// ggml-quants.c (ngxson/llama.cpp at the commit named in blocks.h), restated in the same
// operation order so that every F32 result rounds as ggml's does. The encoders are built
// with -ffp-contract=off (CMakeLists.txt): ggml's reference output comes from a build
// without FMA (baseline x86-64), where every multiply and add rounds separately, and a
// fused multiply-add would change Q2_K, Q4_K and Q5_K bytes (blocks.h).
#pragma once
#include <climits>
#include <cstdint>

#include "core/bytes.h"  // bit_cast

namespace amn::ggml {

// ggml's GROUP_MAX_EPS: a group whose largest magnitude is below it is all zero.
inline constexpr float kGroupMaxEps = 1e-15f;

// ggml's nearest_int: round to nearest (ties to even) through the F32 mantissa of
// x + 1.5 * 2^23. ggml asserts |x| <= 4194303; beyond it (or for NaN) the result is
// whatever those bits give, computed the same way here. Inline: every encoder's inner
// loops call it.
inline int nearest_int(float x) {
  const float val = x + 12582912.f;
  return (bit_cast<int>(val) & 0x007fffff) - 0x00400000;
}

// C's conversion of a float to a narrow integer as ggml's x86-64 build performs it: to
// int32 by truncation (cvttss2si, INT32_MIN for NaN and out-of-range values, where C
// leaves the result undefined), then the low bits. Every target does the same here.
inline int32_t trunc_to_i32(float x) {
  if (!(x >= -2147483648.0f && x < 2147483648.0f)) return INT32_MIN;
  return static_cast<int32_t>(x);
}

// ggml's MAX and MIN macros on floats (which differ from std::max/min for NaN and for
// signed zeros: the second argument wins a tie).
inline float ggml_max(float a, float b) { return a > b ? a : b; }
inline float ggml_min(float a, float b) { return a < b ? a : b; }

// ggml's GGML_FP32_TO_FP16 (ggml_compute_fp32_to_fp16): round to nearest even; NaN
// becomes the quiet NaN 0x7E00 with the input's sign.
uint16_t fp32_to_fp16(float f);

// ggml's GGML_FP32_TO_BF16 (ggml_compute_fp32_to_bf16): round to nearest even; NaN keeps
// its top bits and is made quiet.
uint16_t fp32_to_bf16(float f);

// ggml's GGML_FP16_TO_FP32.
float fp16_to_fp32(uint16_t h);

// The searches of ggml-quants.c, same names and arguments (see there for what each
// minimises): symmetric (qx, q3), with a min (qkx2, qkx3), and the positive scales of
// scales (qp).
float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type, const float* qw);
float make_q3_quants(int n, int nmax, const float* x, int8_t* L, bool do_rmse);
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min,
                       uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad);
float make_qkx3_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min,
                       uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad);
float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* quant_weights);

// make_qkx2_quants on `count` sub-blocks of n (at most 32) values each, one after the
// other in x, weights and L: scales[k] and the_mins[k] are sub-block k's return value
// and *the_min. The same bytes, several sub-blocks at once (quantize_k_simd.cpp).
void make_qkx2_quants_blocks(int count, int n, int nmax, const float* x, const float* weights, uint8_t* L,
                             float* scales, float* the_mins, float rmin, float rdelta, int nstep, bool use_mad);
// make_qkx3_quants likewise (weights given).
void make_qkx3_quants_blocks(int count, int n, int nmax, const float* x, const float* weights, uint8_t* L,
                             float* scales, float* the_mins, float rmin, float rdelta, int nstep, bool use_mad);
// make_qx_quants with rmse_type 1 on `count` sub-blocks of n (at most 32): qw (laid out
// as x) or null for ggml's default weights x^2; scales[k] is sub-block k's return value.
void make_qx_quants_blocks(int count, int n, int nmax, const float* x, const float* qw, int8_t* L, float* scales);
// make_q3_quants with do_rmse on `count` sub-blocks of n (at most 32).
void make_q3_quants_blocks(int count, int n, int nmax, const float* x, int8_t* L, float* scales);

// Q3_K's last pass over a super-block (quantize_k.cpp's q3_k_finish after the scales are
// stored) with the current Highway target: dsub[j] is sub-block j's stored scale (0: the
// search's levels L stay); each level nearest_int(x / dsub[j]) clamped to [-4, 3], plus
// 4; the levels' bit 2 into hmask (32 bytes) and their low 2 bits into qs (64 bytes). False,
// nothing written, on Highway's one-lane target.
bool q3_k_finish_simd(const float* x, const float* dsub, const int8_t* L, uint8_t* hmask, uint8_t* qs);

// Q2_K's requantization of a super-block with its stored scales (quantize_k.cpp's
// q2_k_finish) with the current Highway target:
// `subs` sub-blocks of n (16 or 32) values; for each with d[j] != 0, L's levels become
// clamp(nearest_int((x + dm[j]) / d[j]), 0, nmax); the others keep theirs. False, nothing
// written, where the target leaves it to the scalar code (all but WASM and SSE4).
bool k_requantize_simd(const float* x, int subs, int n, const float* d, const float* dm, int nmax, uint8_t* L);

}  // namespace amn::ggml
