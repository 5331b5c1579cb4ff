// IQ4_NL and IQ4_XS encoders: ggml's quantize_iq4_nl / quantize_iq4_xs, both through
// quantize_row_iq4_nl_impl (ntry 7; IQ4_NL one block of 32, IQ4_XS a super-block of 256
// with eight 6-bit sub-scales).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/ggml/quantize_iq.h"
#include "kernels/ggml/quantize_iq4_simd.h"
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

// The importance weights of a super-block: qw * sqrt(sigma2 + x^2) with an imatrix, x^2
// without; sigma2 = 2 * mean(x^2) over the super-block.
void iq4_weights(int super_block_size, const float* x, const float* quant_weights, float* weight) {
  float sigma2 = 0;
  for (int j = 0; j < super_block_size; ++j) sigma2 += x[j] * x[j];
  sigma2 *= 2.f / float(super_block_size);
  for (int ib = 0; ib < super_block_size / 32; ++ib) {
    quant::importance_weights(32, x + 32 * ib, quant_weights ? quant_weights + 32 * ib : nullptr, sigma2,
                              weight + 32 * ib);
  }
}

// The rest of quantize_row_iq4_nl_impl once every block's scale is known: IQ4_XS's
// super-block scale and 6-bit sub-scales, and every element's level at its block's scale.
void iq4_finish(int super_block_size, const float* x, const float* scales, Iq4Out& out) {
  const int8_t* values = kvalues_iq4nl;
  constexpr int block_size = 32;
  uint8_t L[QK_K];
  float max_scale = 0, amax_scale = 0;
  for (int ib = 0; ib < super_block_size / block_size; ++ib) {
    const float abs_d = std::fabs(scales[ib]);
    if (abs_d > amax_scale) {
      amax_scale = abs_d;
      max_scale = scales[ib];
    }
  }
  out.d = fp32_to_fp16(0.f);

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

// quantize_row_iq4_nl_impl's search (ntry 7) on each of `count` blocks of 32. The start
// scale maps the signed extreme (the first of the largest magnitude) to the end of the
// codebook (-max/-127); then 2 * 7 + 1 scales (itry + values[0]) / max are tried, each
// one's least-squares d kept when it improves sumqx^2 / sumq2 (strictly: earlier tries
// win ties). A block whose largest magnitude is below kGroupMaxEps gets 0.
void iq4_block_scales(int count, const float* x, const float* weight, float* scales) {
  const int8_t* values = kvalues_iq4nl;
  constexpr int block_size = 32;
  for (int ib = 0; ib < count; ++ib) {
    const float* xb = x + ib * block_size;
    const float* wb = weight + ib * block_size;
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
      const float q = values[quant::best_index_int8(16, values, id * xb[j])];
      sumqx += wb[j] * q * xb[j];
      sumq2 += wb[j] * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int itry = -kNtry; itry <= kNtry; ++itry) {
      id = float(itry + values[0]) / max;
      sumqx = sumq2 = 0;
      for (int j = 0; j < block_size; ++j) {
        const float q = values[quant::best_index_int8(16, values, id * xb[j])];
        sumqx += wb[j] * q * xb[j];
        sumq2 += wb[j] * q * q;
      }
      if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
        d = sumqx / sumq2;
        best = d * sumqx;
      }
    }
    scales[ib] = d;
  }
}

namespace {
// The searches of `count` blocks: a block per lane unless the reference is forced
// (kernels/cast.h: AMN_FORCE_IMPL=scalar) or the target has one lane.
void block_scales(int count, const float* x, const float* weight, float* scales) {
  if (reference_impl_forced() || !iq4_block_scales_simd(count, x, weight, scales)) {
    iq4_block_scales(count, x, weight, scales);
  }
}
}  // namespace

size_t quantize_iq4_nl(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  constexpr int64_t kBatch = 16;  // blocks searched together (each its own super-block)
  const int64_t nblock = n_per_row / 32;
  size_t out_i = 0;
  for (int64_t row = 0; row < nrows; ++row, src += n_per_row) {
    for (int64_t ib0 = 0; ib0 < nblock; ib0 += kBatch) {
      const int count = int(std::min(kBatch, nblock - ib0));
      float weight[kBatch * 32], scales[kBatch];
      for (int k = 0; k < count; ++k) {
        const int64_t ib = ib0 + k;
        iq4_weights(32, src + 32 * ib, imatrix ? imatrix + 32 * ib : nullptr, weight + 32 * k);
      }
      block_scales(count, src + 32 * ib0, weight, scales);
      for (int k = 0; k < count; ++k) {
        Iq4Out o;
        iq4_finish(32, src + 32 * (ib0 + k), scales + k, o);
        block_iq4_nl b{};
        b.d = o.d;
        std::memcpy(b.qs, o.q4, sizeof b.qs);
        quant::store_block(dst, out_i++, b);
      }
    }
  }
  return out_i * sizeof(block_iq4_nl);
}

size_t quantize_iq4_xs(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  const int64_t nblock = n_per_row / QK_K;
  size_t out_i = 0;
  for (int64_t row = 0; row < nrows; ++row, src += n_per_row) {
    for (int64_t ibl = 0; ibl < nblock; ++ibl) {
      const float* x = src + QK_K * ibl;
      float weight[QK_K], scales[QK_K / 32];
      iq4_weights(QK_K, x, imatrix ? imatrix + QK_K * ibl : nullptr, weight);
      block_scales(QK_K / 32, x, weight, scales);
      Iq4Out o;
      iq4_finish(QK_K, x, scales, o);
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
