// ggml's quantized block layouts and the constants their dequantizers read: format
// facts, mirrored from ggml/src/ggml-common.h of ggml-org/ggml as carried by
// ngxson/llama.cpp at commit 3f545beccee69d9975f466ec7e45fd9aacd8ba90 (2026-08-22).
// Field names and order are ggml's; sizes are static_asserted against the traits row of
// each type (core/ggml_type.h, which holds ggml's sizes). Formulas: docs/formats/ggml-blocks.md.
//
// Blocks are read from unaligned little-endian bytes by copying one block into one of
// these structs (memcpy), so the structs may have ggml's natural alignment.
//
// F32 arithmetic and contraction. ggml builds its dequantizers (ggml-quants.c, part of
// ggml-base) with the project's default flags: -O3, no -march (ggml's -march=native
// applies to the ggml-cpu backend only). On x86-64 that means no FMA, so ggml's
// reference output has every operation rounded separately, which is what our
// -ffp-contract=off build computes. The question is moot anyway: in every dequantizer
// the only multiply that is followed by an add (Q4_1, Q5_1: q*d + m; Q2_K, Q4_K, Q5_K:
// dl*q - ml) multiplies a small integer by an F16 value or by the product of an F16
// value and a 6-bit integer, which is exact in F32, so fusing it cannot change the
// result. Checked: ggml-base rebuilt with -march=native (GCC 12, FMA used by the
// quantizers) dequantizes the fixtures to the same bytes (fixtures/ggml/README.md).
// What differs under -march=native is the quantizers' output, which we never compute.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/ggml_type.h"
#include "kernels/cast.h"

namespace amn::ggml {

static_assert(std::endian::native == std::endian::little,
              "ggml blocks are little-endian and read with memcpy");

using ggml_half = uint16_t;  // IEEE binary16 bits, converted with amn::scalar::f16_to_f32

inline constexpr int QK_K = 256;  // elements of a K-quant / IQ super-block

// ---- legacy blocks: 32 elements, one scale (and min) ----

struct block_q4_0 {
  ggml_half d;      // scale
  uint8_t qs[16];   // 4-bit quants: element j in the low nibble of qs[j], j+16 in the high
};
static_assert(sizeof(block_q4_0) == ggml_traits(GgmlType::Q4_0)->block_bytes);

struct block_q4_1 {
  ggml_half d;      // scale
  ggml_half m;      // min (added)
  uint8_t qs[16];   // 4-bit quants, nibbles as Q4_0
};
static_assert(sizeof(block_q4_1) == ggml_traits(GgmlType::Q4_1)->block_bytes);

struct block_q5_0 {
  ggml_half d;      // scale
  uint8_t qh[4];    // 5th bit of each quant: bit j of the little-endian uint32 for element j
  uint8_t qs[16];   // low 4 bits, nibbles as Q4_0
};
static_assert(sizeof(block_q5_0) == ggml_traits(GgmlType::Q5_0)->block_bytes);

struct block_q5_1 {
  ggml_half d;      // scale
  ggml_half m;      // min (added)
  uint8_t qh[4];    // 5th bits, as Q5_0
  uint8_t qs[16];   // low 4 bits, as Q5_0
};
static_assert(sizeof(block_q5_1) == ggml_traits(GgmlType::Q5_1)->block_bytes);

struct block_q8_0 {
  ggml_half d;      // scale
  int8_t qs[32];    // quants
};
static_assert(sizeof(block_q8_0) == ggml_traits(GgmlType::Q8_0)->block_bytes);

struct block_q8_1 {
  ggml_half d;      // scale
  ggml_half s;      // d * sum(qs): for dot products, not read when dequantizing
  int8_t qs[32];    // quants
};
static_assert(sizeof(block_q8_1) == ggml_traits(GgmlType::Q8_1)->block_bytes);

// ---- K-quants: super-blocks of 256 ----

struct block_q2_K {
  uint8_t scales[16];  // per 16 elements: scale in the low nibble, min in the high
  uint8_t qs[64];      // 2-bit quants, four per byte
  ggml_half d;         // super-block scale of the scales
  ggml_half dmin;      // super-block scale of the mins
};
static_assert(sizeof(block_q2_K) == ggml_traits(GgmlType::Q2_K)->block_bytes);

struct block_q3_K {
  uint8_t hmask[32];   // high (3rd) bit of each quant; set means "no -4"
  uint8_t qs[64];      // low 2 bits, four per byte
  uint8_t scales[12];  // sixteen 6-bit scales, biased by 32, packed
  ggml_half d;         // super-block scale
};
static_assert(sizeof(block_q3_K) == ggml_traits(GgmlType::Q3_K)->block_bytes);

inline constexpr int K_SCALE_SIZE = 12;

struct block_q4_K {
  ggml_half d;                   // super-block scale of the scales
  ggml_half dmin;                // super-block scale of the mins
  uint8_t scales[K_SCALE_SIZE];  // eight 6-bit scales and eight 6-bit mins, packed
  uint8_t qs[128];               // 4-bit quants
};
static_assert(sizeof(block_q4_K) == ggml_traits(GgmlType::Q4_K)->block_bytes);

struct block_q5_K {
  ggml_half d;                   // super-block scale of the scales
  ggml_half dmin;                // super-block scale of the mins
  uint8_t scales[K_SCALE_SIZE];  // scales and mins, packed as Q4_K
  uint8_t qh[32];                // 5th bit of each quant
  uint8_t qs[128];               // low 4 bits
};
static_assert(sizeof(block_q5_K) == ggml_traits(GgmlType::Q5_K)->block_bytes);

struct block_q6_K {
  uint8_t ql[128];    // low 4 bits of the quants
  uint8_t qh[64];     // high 2 bits
  int8_t scales[16];  // per 16 elements, 8-bit signed
  ggml_half d;        // super-block scale
};
static_assert(sizeof(block_q6_K) == ggml_traits(GgmlType::Q6_K)->block_bytes);

struct block_q8_K {
  float d;            // scale (F32, not F16)
  int8_t qs[256];     // quants
  int16_t bsums[16];  // sums of groups of 16 quants: for dot products, not read here
};
static_assert(sizeof(block_q8_K) == ggml_traits(GgmlType::Q8_K)->block_bytes);

// ---- IQ ("importance") quants: grids of magnitudes + sign bits ----

struct block_iq2_xxs {
  ggml_half d;        // super-block scale
  uint16_t qs[32];    // per 32 elements two uint32: 4 grid indices (8 bits each), then
                      // 4 x 7 sign bits and a 4-bit scale (bits 28..31)
};
static_assert(sizeof(block_iq2_xxs) == ggml_traits(GgmlType::IQ2_XXS)->block_bytes);

struct block_iq2_xs {
  ggml_half d;        // super-block scale
  uint16_t qs[32];    // per 8 elements: 9-bit grid index | 7 sign bits << 9
  uint8_t scales[8];  // per 32 elements two 4-bit scales (16 elements each)
};
static_assert(sizeof(block_iq2_xs) == ggml_traits(GgmlType::IQ2_XS)->block_bytes);

struct block_iq2_s {
  ggml_half d;        // super-block scale
  uint8_t qs[64];     // 32 low bytes of the 10-bit grid indices, then 32 bytes of signs
  uint8_t qh[8];      // per 32 elements: 2 high bits of each of the 4 indices
  uint8_t scales[8];  // per 32 elements two 4-bit scales
};
static_assert(sizeof(block_iq2_s) == ggml_traits(GgmlType::IQ2_S)->block_bytes);

struct block_iq3_xxs {
  ggml_half d;        // super-block scale
  uint8_t qs[96];     // 64 grid indices (8 bits, 4 elements each), then per 32 elements
                      // a uint32: 4 x 7 sign bits and a 4-bit scale (bits 28..31)
};
static_assert(sizeof(block_iq3_xxs) == ggml_traits(GgmlType::IQ3_XXS)->block_bytes);

inline constexpr int IQ3S_N_SCALE = QK_K / 64;

struct block_iq3_s {
  ggml_half d;                   // super-block scale
  uint8_t qs[64];                // low 8 bits of the 9-bit grid indices
  uint8_t qh[8];                 // 9th bits, one byte per 32 elements
  uint8_t signs[32];             // one sign bit per element
  uint8_t scales[IQ3S_N_SCALE];  // per 64 elements two 4-bit scales
};
static_assert(sizeof(block_iq3_s) == ggml_traits(GgmlType::IQ3_S)->block_bytes);

struct block_iq1_s {
  ggml_half d;        // super-block scale
  uint8_t qs[32];     // low 8 bits of the 11-bit grid indices
  uint16_t qh[8];     // per 32 elements: 4 x 3 high index bits, 3-bit scale (bits 12..14),
                      // delta sign (bit 15)
};
static_assert(sizeof(block_iq1_s) == ggml_traits(GgmlType::IQ1_S)->block_bytes);

struct block_iq1_m {
  uint8_t qs[32];     // low 8 bits of the 11-bit grid indices
  uint8_t qh[16];     // per 16 elements: 3 high index bits + delta sign, for two groups of 8
  uint8_t scales[8];  // 3-bit scales (per 16 elements); the F16 super-block scale is
                      // spread over the top 4 bits of the four uint16 words
};
static_assert(sizeof(block_iq1_m) == ggml_traits(GgmlType::IQ1_M)->block_bytes);

struct block_iq4_nl {
  ggml_half d;        // scale
  uint8_t qs[16];     // 4-bit indices into kvalues_iq4nl, nibbles as Q4_0
};
static_assert(sizeof(block_iq4_nl) == ggml_traits(GgmlType::IQ4_NL)->block_bytes);

struct block_iq4_xs {
  ggml_half d;          // super-block scale
  uint16_t scales_h;    // high 2 bits of the eight 6-bit scales
  uint8_t scales_l[4];  // low 4 bits of the eight scales
  uint8_t qs[128];      // 4-bit indices into kvalues_iq4nl
};
static_assert(sizeof(block_iq4_xs) == ggml_traits(GgmlType::IQ4_XS)->block_bytes);

// ---- ternary ----

struct block_tq1_0 {
  uint8_t qs[48];     // 5 trits per byte (base 3, as a fixed-point fraction of 256)
  uint8_t qh[4];      // 4 trits per byte, same encoding
  ggml_half d;        // scale
};
static_assert(sizeof(block_tq1_0) == ggml_traits(GgmlType::TQ1_0)->block_bytes);

struct block_tq2_0 {
  uint8_t qs[64];     // 2 bits per element (0, 1, 2 -> -1, 0, +1)
  ggml_half d;        // scale
};
static_assert(sizeof(block_tq2_0) == ggml_traits(GgmlType::TQ2_0)->block_bytes);

// ---- FP4 microscaling, 1- and 2-bit ----

struct block_mxfp4 {
  uint8_t e;          // E8M0 shared exponent
  uint8_t qs[16];     // E2M1 values, nibbles as Q4_0
};
static_assert(sizeof(block_mxfp4) == ggml_traits(GgmlType::MXFP4)->block_bytes);

struct block_nvfp4 {
  uint8_t d[4];       // UE4M3 scale per 16 elements
  uint8_t qs[32];     // E2M1 values; per 16 elements 8 bytes, nibbles as Q4_0
};
static_assert(sizeof(block_nvfp4) == ggml_traits(GgmlType::NVFP4)->block_bytes);

struct block_q1_0 {
  ggml_half d;        // scale: a set bit is +d, a clear bit -d
  uint8_t qs[16];     // one bit per element, element j at bit j%8 of byte j/8
};
static_assert(sizeof(block_q1_0) == ggml_traits(GgmlType::Q1_0)->block_bytes);

struct block_q2_0 {
  ggml_half d;        // scale
  uint8_t qs[16];     // 2 bits per element, element j at bits 2*(j%4) of byte j/4: q-1
};
static_assert(sizeof(block_q2_0) == ggml_traits(GgmlType::Q2_0)->block_bytes);

// ---- constants (ggml-common.h, same commit) ----

// kmask_iq2xs: bit j selects the sign of element j of a group of 8.
inline constexpr uint8_t kmask_iq2xs[8] = {1, 2, 4, 8, 16, 32, 64, 128};

// ksigns_iq2xs: 7 stored sign bits -> 8 sign bits; the 8th makes the parity even.
inline constexpr uint8_t ksigns_iq2xs[128] = {
    0,   129, 130, 3,   132, 5,   6,   135, 136, 9,   10,  139, 12,  141, 142, 15,
    144, 17,  18,  147, 20,  149, 150, 23,  24,  153, 154, 27,  156, 29,  30,  159,
    160, 33,  34,  163, 36,  165, 166, 39,  40,  169, 170, 43,  172, 45,  46,  175,
    48,  177, 178, 51,  180, 53,  54,  183, 184, 57,  58,  187, 60,  189, 190, 63,
    192, 65,  66,  195, 68,  197, 198, 71,  72,  201, 202, 75,  204, 77,  78,  207,
    80,  209, 210, 83,  212, 85,  86,  215, 216, 89,  90,  219, 92,  221, 222, 95,
    96,  225, 226, 99,  228, 101, 102, 231, 232, 105, 106, 235, 108, 237, 238, 111,
    240, 113, 114, 243, 116, 245, 246, 119, 120, 249, 250, 123, 252, 125, 126, 255,
};

constexpr bool ksigns_have_even_parity() {
  for (int i = 0; i < 128; ++i) {
    if (ksigns_iq2xs[i] != (i | (std::popcount(unsigned(i)) % 2) << 7)) return false;
  }
  return true;
}
static_assert(ksigns_have_even_parity());

// kvalues_iq4nl: the 16 non-linear levels of IQ4_NL and IQ4_XS.
inline constexpr int8_t kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                             1,    13,   25,  38,  53,  69,  89,  113};

// kvalues_fp4 (kvalues_mxfp4): E2M1 values doubled, shared by MXFP4 and NVFP4 (whose
// scale conversions halve to compensate).
inline constexpr int8_t kvalues_fp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// The offset IQ1_S and IQ1_M add (sign from the block) to every grid value.
inline constexpr float IQ1S_DELTA = 0.125f;

// Grids (grids_iq2.cpp, grids_iq1_iq3.cpp).
extern const uint64_t iq2xxs_grid[256];
extern const uint64_t iq2xs_grid[512];
extern const uint64_t iq2s_grid[1024];
extern const uint32_t iq3xxs_grid[256];
extern const uint32_t iq3s_grid[512];
extern const uint64_t iq1s_grid[2048];

// Byte j (0 = lowest) of a grid entry, as ggml reads it through a uint8_t/int8_t pointer
// on a little-endian machine.
inline uint8_t grid_byte(uint64_t entry, int j) { return uint8_t(entry >> (8 * j)); }

// Block i of `in` (unaligned bytes).
template <class Block>
Block load_block(const uint8_t* in, size_t i) {
  Block b;
  std::memcpy(&b, in + i * sizeof(Block), sizeof b);
  return b;
}

// ggml's GGML_FP16_TO_FP32 (equal to the project's scalar F16 -> F32 on every input).
inline float fp16_to_f32(ggml_half h) { return scalar::f16_to_f32(h); }

}  // namespace amn::ggml
