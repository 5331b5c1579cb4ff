// What ggml's block dequantizers share: the constants and grids they read (ggml's
// ggml-common.h of ggml-org/ggml as carried by ngxson/llama.cpp at commit
// 3f545beccee69d9975f466ec7e45fd9aacd8ba90, 2026-08-22), reading a block, and the F16
// conversion. The block structs themselves are format facts: they sit beside each type's
// traits row in core/ggml_type.h. Formulas: docs/formats/ggml-blocks.md.
//
// Blocks are read from unaligned little-endian bytes by copying one block into its struct
// (load_block: memcpy), so the structs may have ggml's natural alignment.
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
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/ggml_type.h"
#include "kernels/cast.h"

namespace amn::ggml {

static_assert(std::endian::native == std::endian::little,
              "ggml blocks are little-endian and read with memcpy");

// ---- constants (ggml-common.h) ----

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

// ggml's get_scale_min_k4: the 6-bit scale and min of sub-block j (0..7) of a Q4_K /
// Q5_K super-block.
inline void get_scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = uint8_t((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
  }
}

// Q3_K's sixteen 6-bit scales (biased by 32), as dequantize_row_q3_K unpacks them: low 4
// bits in bytes 0..7, high 2 bits in bytes 8..11.
inline void unpack_q3_k_scales(const uint8_t* packed, int8_t* scales) {
  constexpr uint32_t kmask1 = 0x03030303;
  constexpr uint32_t kmask2 = 0x0f0f0f0f;
  uint32_t aux[4];
  std::memcpy(aux, packed, 12);
  const uint32_t tmp = aux[2];
  aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
  aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
  aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
  aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
  std::memcpy(scales, aux, 16);
}

// IQ1_M's F16 super-block scale, assembled from the top nibbles of its four scale words.
inline uint16_t iq1_m_scale(const uint16_t* sc) {
  return uint16_t((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
}

// Block i of `in` (unaligned bytes).
template <class Block>
Block load_block(const uint8_t* in, size_t i) {
  Block b;
  std::memcpy(&b, in + i * sizeof(Block), sizeof b);
  return b;
}

// ggml's GGML_FP16_TO_FP32 (equal to the project's scalar F16 -> F32 on every input).
inline float fp16_to_f32(ggml_half h) { return scalar::f16_to_f32(h); }

// ggml_e8m0_to_fp32_half (MXFP4's scale): 2^(e - 128), subnormal for e < 2 (E8M0 NaN 0xFF
// not special).
inline float e8m0_to_f32_half(uint8_t e) {
  const uint32_t bits = e < 2 ? uint32_t(0x00200000) << e : uint32_t(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// ggml_ue4m3_to_fp32 (NVFP4's scales): unsigned E4M3 (bias 7, bit 7 ignored), halved to
// match the doubled kvalues_fp4; 0 and 0x7F read as 0. ldexp of these values is exact.
inline float ue4m3_to_f32_half(uint8_t x) {
  if (x == 0 || x == 0x7F) return 0.0f;
  const int exp = (x >> 3) & 0xF;
  const int man = x & 0x7;
  float raw;
  if (exp == 0) {
    raw = std::ldexp(float(man), -9);
  } else {
    raw = std::ldexp(1.0f + float(man) / 8.0f, exp - 7);
  }
  return raw * 0.5f;
}

}  // namespace amn::ggml
