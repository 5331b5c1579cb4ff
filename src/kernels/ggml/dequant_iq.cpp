// The IQ quants: IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S IQ1_S IQ1_M (grid codebooks) and
// IQ4_NL IQ4_XS (a 16-level non-linear table). Each kernel mirrors ggml's
// dequantize_row_<type> (ggml/src/ggml-quants.c), same operations in the same order.
#include "kernels/ggml/blocks.h"
#include "kernels/ggml/dequantize.h"

namespace amn::ggml {
namespace {

// ggml writes db * magnitude * (sign bit ? -1.f : 1.f). Multiplying by -1 is exact, the
// same as negating, except for the sign of a NaN (NaN * -1 keeps it on x86): compilers
// may emit either (GCC emits the negation, and ggml's NaN bits vary with its compiler;
// test_ggml_dequant accepts any NaN there). We define it as the negation, so that every
// target and the SIMD kernels (dequant_iq-inl.h) agree on the bits.
float signed_by(float v, uint8_t signs, int j) { return (signs & kmask_iq2xs[j]) ? -v : v; }

// One group of 8 from a 64-bit grid entry: (db * magnitude), negated by the sign bit.
void put_grid8(float* y, float db, uint64_t entry, uint8_t signs) {
  for (int j = 0; j < 8; ++j) y[j] = signed_by(db * float(grid_byte(entry, j)), signs, j);
}

// Two 32-bit grid entries (4 magnitudes each) sharing one sign byte.
void put_grid4x2(float* y, float db, uint32_t entry1, uint32_t entry2, uint8_t signs) {
  for (int j = 0; j < 4; ++j) {
    y[j + 0] = signed_by(db * float(grid_byte(entry1, j)), signs, j + 0);
    y[j + 4] = signed_by(db * float(grid_byte(entry2, j)), signs, j + 4);
  }
}

// IQ1 grids hold signed bytes (-1, 0, +1): dl * (g + delta).
void put_grid1(float* y, float dl, uint64_t entry, float delta) {
  for (int j = 0; j < 8; ++j) y[j] = dl * (float(int8_t(grid_byte(entry, j))) + delta);
}

}  // namespace

// dequantize_row_iq2_xxs: per 32, db = d * (0.5 + s) * 0.25; four grid entries.
void dequantize_iq2_xxs(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i) {
    const auto b = load_block<block_iq2_xxs>(in, i);
    const float d = fp16_to_f32(b.d);
    for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
      uint32_t aux32[2];
      std::memcpy(aux32, b.qs + 4 * ib32, sizeof aux32);
      const float db = d * (0.5f + float(aux32[1] >> 28)) * 0.25f;
      for (int l = 0; l < 4; ++l) {
        const uint8_t index = uint8_t(aux32[0] >> (8 * l));
        put_grid8(out, db, iq2xxs_grid[index], ksigns_iq2xs[(aux32[1] >> 7 * l) & 127]);
        out += 8;
      }
    }
  }
}

// dequantize_row_iq2_xs: 9-bit grid index and 7 sign bits per 8; two scales per 32.
void dequantize_iq2_xs(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i) {
    const auto b = load_block<block_iq2_xs>(in, i);
    const float d = fp16_to_f32(b.d);
    for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
      float db[2];
      db[0] = d * (0.5f + float(b.scales[ib32] & 0xf)) * 0.25f;
      db[1] = d * (0.5f + float(b.scales[ib32] >> 4)) * 0.25f;
      for (int l = 0; l < 4; ++l) {
        const uint16_t q = b.qs[4 * ib32 + l];
        put_grid8(out, db[l / 2], iq2xs_grid[q & 511], ksigns_iq2xs[q >> 9]);
        out += 8;
      }
    }
  }
}

// dequantize_row_iq2_s: 10-bit grid index, 8 explicit sign bits per 8; two scales per 32.
void dequantize_iq2_s(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i) {
    const auto b = load_block<block_iq2_s>(in, i);
    const float d = fp16_to_f32(b.d);
    const uint8_t* qs = b.qs;
    const uint8_t* signs = b.qs + QK_K / 8;
    for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
      float db[2];
      db[0] = d * (0.5f + float(b.scales[ib32] & 0xf)) * 0.25f;
      db[1] = d * (0.5f + float(b.scales[ib32] >> 4)) * 0.25f;
      for (int l = 0; l < 4; ++l) {
        const int index = qs[l] | ((b.qh[ib32] << (8 - 2 * l)) & 0x300);
        put_grid8(out, db[l / 2], iq2s_grid[index], signs[l]);
        out += 8;
      }
      qs += 4;
      signs += 4;
    }
  }
}

// dequantize_row_iq3_xxs: per 32, db = d * (0.5 + s) * 0.5; 8 grid entries of 4.
void dequantize_iq3_xxs(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i) {
    const auto b = load_block<block_iq3_xxs>(in, i);
    const float d = fp16_to_f32(b.d);
    const uint8_t* qs = b.qs;
    const uint8_t* scales_and_signs = b.qs + QK_K / 4;
    for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
      uint32_t aux32;
      std::memcpy(&aux32, scales_and_signs + 4 * ib32, sizeof aux32);
      const float db = d * (0.5f + float(aux32 >> 28)) * 0.5f;
      for (int l = 0; l < 4; ++l) {
        const uint8_t signs = ksigns_iq2xs[(aux32 >> 7 * l) & 127];
        put_grid4x2(out, db, iq3xxs_grid[qs[2 * l + 0]], iq3xxs_grid[qs[2 * l + 1]], signs);
        out += 8;
      }
      qs += 8;
    }
  }
}

// dequantize_row_iq3_s: 9-bit grid indices, explicit signs; per 64 two scales 1 + 2s.
void dequantize_iq3_s(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i) {
    const auto b = load_block<block_iq3_s>(in, i);
    const float d = fp16_to_f32(b.d);
    const uint8_t* qs = b.qs;
    const uint8_t* qh = b.qh;
    const uint8_t* signs = b.signs;
    for (int ib32 = 0; ib32 < QK_K / 32; ib32 += 2) {
      const float db1 = d * float(1 + 2 * (b.scales[ib32 / 2] & 0xf));
      const float db2 = d * float(1 + 2 * (b.scales[ib32 / 2] >> 4));
      for (int half = 0; half < 2; ++half) {
        const float db = half == 0 ? db1 : db2;
        for (int l = 0; l < 4; ++l) {
          const int index1 = qs[2 * l + 0] | ((qh[half] << (8 - 2 * l)) & 256);
          const int index2 = qs[2 * l + 1] | ((qh[half] << (7 - 2 * l)) & 256);
          put_grid4x2(out, db, iq3s_grid[index1], iq3s_grid[index2], signs[l]);
          out += 8;
        }
        qs += 8;
        signs += 4;
      }
      qh += 2;
    }
  }
}

// dequantize_row_iq1_s: 11-bit grid indices; per 32, dl = d * (2s + 1) and delta +-1/8.
void dequantize_iq1_s(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i) {
    const auto b = load_block<block_iq1_s>(in, i);
    const float d = fp16_to_f32(b.d);
    const uint8_t* qs = b.qs;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const uint16_t qh = b.qh[ib];
      const float dl = d * float(2 * ((qh >> 12) & 7) + 1);
      const float delta = qh & 0x8000 ? -IQ1S_DELTA : IQ1S_DELTA;
      for (int l = 0; l < 4; ++l) {
        put_grid1(out, dl, iq1s_grid[qs[l] | (((qh >> 3 * l) & 7) << 8)], delta);
        out += 8;
      }
      qs += 4;
    }
  }
}

// dequantize_row_iq1_m: as IQ1_S with a scale per 16 and a delta sign per 8; the F16
// super-block scale is assembled from the top nibbles of the four scale words.
void dequantize_iq1_m(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i) {
    const auto b = load_block<block_iq1_m>(in, i);
    uint16_t sc[4];
    std::memcpy(sc, b.scales, sizeof sc);
    const float d = fp16_to_f32(iq1_m_scale(sc));
    const uint8_t* qs = b.qs;
    const uint8_t* qh = b.qh;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const float dl1 = d * float(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 0x7) + 1);
      const float dl2 = d * float(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 0x7) + 1);
      const uint16_t idx[4] = {
          uint16_t(qs[0] | ((qh[0] << 8) & 0x700)), uint16_t(qs[1] | ((qh[0] << 4) & 0x700)),
          uint16_t(qs[2] | ((qh[1] << 8) & 0x700)), uint16_t(qs[3] | ((qh[1] << 4) & 0x700))};
      const float delta[4] = {
          qh[0] & 0x08 ? -IQ1S_DELTA : IQ1S_DELTA, qh[0] & 0x80 ? -IQ1S_DELTA : IQ1S_DELTA,
          qh[1] & 0x08 ? -IQ1S_DELTA : IQ1S_DELTA, qh[1] & 0x80 ? -IQ1S_DELTA : IQ1S_DELTA};
      for (int l = 0; l < 4; ++l) {
        put_grid1(out, l < 2 ? dl1 : dl2, iq1s_grid[idx[l]], delta[l]);
        out += 8;
      }
      qs += 4;
      qh += 2;
    }
  }
}

// dequantize_row_iq4_nl: d * kvalues_iq4nl[q].
void dequantize_iq4_nl(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i, out += 32) {
    const auto b = load_block<block_iq4_nl>(in, i);
    const float d = fp16_to_f32(b.d);
    for (int j = 0; j < 16; ++j) {
      out[j + 0] = d * float(kvalues_iq4nl[b.qs[j] & 0xf]);
      out[j + 16] = d * float(kvalues_iq4nl[b.qs[j] >> 4]);
    }
  }
}

// dequantize_row_iq4_xs: per 32, dl = d * (ls - 32) with a 6-bit ls; dl * kvalues_iq4nl[q].
void dequantize_iq4_xs(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i) {
    const auto b = load_block<block_iq4_xs>(in, i);
    const float d = fp16_to_f32(b.d);
    const uint8_t* qs = b.qs;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const int ls = ((b.scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((b.scales_h >> 2 * ib) & 3) << 4);
      const float dl = d * float(ls - 32);
      for (int j = 0; j < 16; ++j) {
        out[j + 0] = dl * float(kvalues_iq4nl[qs[j] & 0xf]);
        out[j + 16] = dl * float(kvalues_iq4nl[qs[j] >> 4]);
      }
      out += 32;
      qs += 16;
    }
  }
}

// This file's kernels, for the dispatch table (dequantize.cpp): the one place they are named.
std::span<const Kernel> iq_kernels() {
  static constexpr Kernel kKernels[] = {
      {GgmlType::IQ2_XXS, dequantize_iq2_xxs},
      {GgmlType::IQ2_XS, dequantize_iq2_xs},
      {GgmlType::IQ2_S, dequantize_iq2_s},
      {GgmlType::IQ3_XXS, dequantize_iq3_xxs},
      {GgmlType::IQ3_S, dequantize_iq3_s},
      {GgmlType::IQ1_S, dequantize_iq1_s},
      {GgmlType::IQ1_M, dequantize_iq1_m},
      {GgmlType::IQ4_NL, dequantize_iq4_nl},
      {GgmlType::IQ4_XS, dequantize_iq4_xs},
  };
  return kKernels;
}

}  // namespace amn::ggml
