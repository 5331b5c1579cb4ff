// IQ4_NL and IQ4_XS encoders: ggml's quantize_iq4_nl / quantize_iq4_xs, both through
// quantize_row_iq4_nl_impl (ntry 7; IQ4_NL one block of 32, IQ4_XS a super-block of 256
// with eight 6-bit sub-scales).
#include <cmath>
#include <cstring>

#include "kernels/ggml/quantize_iq.h"
#include "kernels/ggml/quantize_iq_common.h"

namespace amn::ggml {
namespace {

constexpr int kNtry = 7;

// What quantize_row_iq4_nl_impl writes for one super-block.
struct Iq4Out {
  ggml_half d = 0;
  uint16_t scales_h = 0;
  uint8_t scales_l[4] = {};
  uint8_t q4[QK_K / 2] = {};
};

// quantize_row_iq4_nl_impl(super_block_size, 32, x, ..., kvalues_iq4nl, qw, 7). Per block
// of 32: the start scale maps the signed extreme to the end of the codebook (-max/-127);
// then 2 * 7 + 1 scales (itry + values[0]) / max are tried, each one's least-squares d
// kept when it improves sumqx^2 / sumq2 (strictly: earlier tries win ties). Weights:
// qw * sqrt(sigma2 + x^2) with an imatrix, x^2 without.
void quantize_iq4_super_block(int super_block_size, const float* x, const float* quant_weights, Iq4Out& out) {
  const int8_t* values = kvalues_iq4nl;
  constexpr int block_size = 32;
  uint8_t L[QK_K];
  float weight[block_size];
  float scales[QK_K / block_size];

  float sigma2 = 0;
  for (int j = 0; j < super_block_size; ++j) sigma2 += x[j] * x[j];
  sigma2 *= 2.f / float(super_block_size);

  out.d = fp32_to_fp16(0.f);

  float max_scale = 0, amax_scale = 0;
  for (int ib = 0; ib < super_block_size / block_size; ++ib) {
    const float* xb = x + ib * block_size;
    uint8_t* Lb = L + ib * block_size;
    quant::importance_weights(block_size, xb, quant_weights ? quant_weights + ib * block_size : nullptr, sigma2, weight);
    float amax = 0, max = 0;
    for (int j = 0; j < block_size; ++j) {
      const float ax = std::fabs(xb[j]);
      if (ax > amax) {
        amax = ax;
        max = xb[j];
      }
    }
    if (amax < kGroupMaxEps) {
      scales[ib] = 0;
      continue;
    }
    float d = kNtry > 0 ? -max / float(values[0]) : max / float(values[0]);
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < block_size; ++j) {
      const float al = id * xb[j];
      const int l = quant::best_index_int8(16, values, al);
      Lb[j] = uint8_t(l);
      const float q = values[l];
      const float w = weight[j];
      sumqx += w * q * xb[j];
      sumq2 += w * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int itry = -kNtry; itry <= kNtry; ++itry) {
      id = float(itry + values[0]) / max;
      sumqx = sumq2 = 0;
      for (int j = 0; j < block_size; ++j) {
        const float al = id * xb[j];
        const int l = quant::best_index_int8(16, values, al);
        const float q = values[l];
        const float w = weight[j];
        sumqx += w * q * xb[j];
        sumq2 += w * q * q;
      }
      if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
        d = sumqx / sumq2;
        best = d * sumqx;
      }
    }
    scales[ib] = d;
    const float abs_d = std::fabs(d);
    if (abs_d > amax_scale) {
      amax_scale = abs_d;
      max_scale = d;
    }
  }

  if (super_block_size / block_size > 1) {
    // IQ4_XS: the super-block scale d = -max_scale / 32 (signed: the sub-scales are
    // 6-bit l - 32), each sub-block requantized at d * l.
    const float d = -max_scale / 32;
    out.d = fp32_to_fp16(d);
    const float id = d != 0.0f ? 1 / d : 0.f;
    for (int ib = 0; ib < super_block_size / block_size; ++ib) {
      int l = nearest_int(id * scales[ib]);
      l = quant::clamp_int(l, -32, 31);
      const float dl = d * float(l);
      const float idl = dl != 0.0f ? 1 / dl : 0.f;
      uint8_t* Lb = L + ib * block_size;
      const float* xb = x + ib * block_size;
      for (int j = 0; j < block_size; ++j) Lb[j] = uint8_t(quant::best_index_int8(16, values, idl * xb[j]));
      l += 32;
      const uint8_t l_l = uint8_t(l & 0xf);
      const uint8_t l_h = uint8_t(l >> 4);
      if (ib % 2 == 0) out.scales_l[ib / 2] = l_l;
      else out.scales_l[ib / 2] |= uint8_t(l_l << 4);
      out.scales_h = uint16_t(out.scales_h | (l_h << 2 * (ib % 8)));
    }
  } else {
    // IQ4_NL: the block's own d; with ntry > 0 every element is requantized at it.
    out.d = fp32_to_fp16(scales[0]);
    const float id = scales[0] != 0.0f ? 1 / scales[0] : 0;
    for (int j = 0; j < super_block_size; ++j) L[j] = uint8_t(quant::best_index_int8(16, values, id * x[j]));
  }

  for (int i = 0; i < super_block_size / 32; ++i) {
    for (int j = 0; j < 16; ++j) out.q4[16 * i + j] = uint8_t(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
  }
}

}  // namespace

size_t quantize_iq4_nl(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  const int64_t nblock = n_per_row / 32;
  size_t out_i = 0;
  for (int64_t row = 0; row < nrows; ++row, src += n_per_row) {
    for (int64_t ibl = 0; ibl < nblock; ++ibl) {
      Iq4Out o;
      quantize_iq4_super_block(32, src + 32 * ibl, imatrix ? imatrix + 32 * ibl : nullptr, o);
      block_iq4_nl b{};
      b.d = o.d;
      std::memcpy(b.qs, o.q4, sizeof b.qs);
      quant::store_block(dst, out_i++, b);
    }
  }
  return out_i * sizeof(block_iq4_nl);
}

size_t quantize_iq4_xs(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  const int64_t nblock = n_per_row / QK_K;
  size_t out_i = 0;
  for (int64_t row = 0; row < nrows; ++row, src += n_per_row) {
    for (int64_t ibl = 0; ibl < nblock; ++ibl) {
      Iq4Out o;
      quantize_iq4_super_block(QK_K, src + QK_K * ibl, imatrix ? imatrix + QK_K * ibl : nullptr, o);
      block_iq4_xs b{};
      b.d = o.d;
      b.scales_h = o.scales_h;
      std::memcpy(b.scales_l, o.scales_l, sizeof b.scales_l);
      std::memcpy(b.qs, o.q4, sizeof b.qs);
      quant::store_block(dst, out_i++, b);
    }
  }
  return out_i * sizeof(block_iq4_xs);
}

}  // namespace amn::ggml
