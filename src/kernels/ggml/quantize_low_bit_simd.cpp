// ggml's TQ1_0, TQ2_0, Q1_0 and Q2_0 encoders (quantize_row_<type>_ref) with Highway.
// Bit-exact with the scalar restatements (quantize_tq.cpp, quantize_q1_0_q2_0.cpp):
// - per element, the same IEEE operations in its own lane: x * id, C's lroundf / roundf
//   (half away from zero, from Trunc; lroundf's NaN and out-of-range give 0 as glibc's
//   LONG_MIN does in its low bits), the clamps, and the packing arithmetic on the
//   integers (TQ1_0's base-3 bytes wrap as uint8 at every step, as ggml's do);
// - a block's largest magnitude is exact in any order (Q2_0's `a > amax` never takes a
//   NaN); TQ1_0 / TQ2_0 fold with MAX(amax, |x|), which restarts after a NaN, so a block
//   holding one goes to the scalar code;
// - Q1_0's scale is a sum of 128 magnitudes in order, which is order-sensitive: each lane
//   sums a whole block in ggml's order (blocks side by side, read with a gather), as the
//   K-quant searches run one sub-block per lane (quantize_k_simd.cpp).
// Compiled once per Highway target; Highway's one-lane target leaves it to the scalar code.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/ggml/quantize_low_bit_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include <cmath>
#include <cstddef>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/ggml/blocks.h"
#include "kernels/ggml/quantize_low_bit_simd.h"
#include "kernels/ggml/quantize_search.h"
#include "kernels/ggml/quantize_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace ggml {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
// The trit of every lane: (int)lroundf(x * id) + 1, lroundf giving 0 for NaN and values
// outside (-2^31, 2^31).
template <class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> Trits(D d, hn::Vec<D> x, float id) {
  const hn::RebindToSigned<D> di;
  const auto v = hn::Mul(x, hn::Set(d, id));
  const auto in_range = hn::And(hn::Gt(v, hn::Set(d, -2147483648.0f)), hn::Lt(v, hn::Set(d, 2147483648.0f)));
  const auto r = hn::IfThenElseZero(hn::RebindMask(di, in_range), hn::ConvertTo(di, RoundAway(v)));
  return hn::Add(r, hn::Set(di, 1));
}

// The largest |x| of 256 values as MAX(amax, |x|) folds it, when none is NaN; false when
// one is (the fold then depends on where).
HWY_INLINE bool TernaryAbsMax(const float* HWY_RESTRICT x, float& amax) {
  const DF d;
  const int N = static_cast<int>(hn::Lanes(d));
  auto m = hn::Zero(d);
  auto numbers = hn::Eq(m, m);
  for (int j = 0; j < QK_K; j += N) {
    const auto v = hn::LoadU(d, x + j);
    numbers = hn::And(numbers, hn::Eq(v, v));
    m = hn::Max(m, hn::Abs(v));
  }
  amax = hn::GetLane(hn::MaxOfLanes(d, m));
  return hn::AllTrue(d, numbers);
}

// TQ1_0's bytes of n trits each: lane m packs x[m], x[m + stride], ... (the first most
// significant; q = q * 3 + trit as uint8), times 3 once more when shift_once, then the
// base-3 fraction of 256 rounded up: (q * 256 + 242) / 243, whose quotient F32 division
// gets exactly (q * 256 + 242 < 2^24, and no quotient lies within 2^-15 of the next
// integer). `count` bytes, a multiple of the tag's lanes.
template <class D>
HWY_INLINE void PackTrits(D d, const float* HWY_RESTRICT x, int count, int stride, int n, float id, bool shift_once,
                          uint8_t* HWY_RESTRICT out) {
  const hn::RebindToSigned<D> di;
  const int N = static_cast<int>(hn::Lanes(d));
  const auto byte = hn::Set(di, 0xFF);
  for (int m = 0; m < count; m += N) {
    auto q = hn::Zero(di);
    for (int k = 0; k < n; ++k) {
      q = hn::And(hn::Add(hn::Add(hn::Add(q, q), q), Trits(d, hn::LoadU(d, x + m + k * stride), id)), byte);
    }
    if (shift_once) q = hn::And(hn::Add(hn::Add(q, q), q), byte);
    const auto num = hn::ConvertTo(d, hn::Add(hn::ShiftLeft<8>(q), hn::Set(di, 242)));
    StoreLowBytes<hn::RebindToSigned<D>>(hn::ConvertTo(di, hn::Div(num, hn::Set(d, 243.0f))), out + m);
  }
}

void Tq1Blocks(const float* HWY_RESTRICT x, uint8_t* HWY_RESTRICT out, size_t blocks) {
  const DF d;
  for (size_t b = 0; b < blocks; ++b, x += QK_K, out += sizeof(block_tq1_0)) {
    float amax;
    if (!TernaryAbsMax(x, amax)) {
      quantize_tq1_0_block(x, out);
      continue;
    }
    const float id = amax != 0.0f ? 1.0f / amax : 0.0f;
    const uint16_t h = fp32_to_fp16(amax);
    std::memcpy(out + offsetof(block_tq1_0, d), &h, 2);
    uint8_t* qs = out + offsetof(block_tq1_0, qs);
    PackTrits(d, x, 32, 32, 5, id, false, qs);             // 160 values, 32 bytes
    PackTrits(d, x + 160, 16, 16, 5, id, false, qs + 32);  // 80 values, 16 bytes
    PackTrits(hn::CappedTag<float, 4>(), x + 240, 4, 4, 4, id, true, out + offsetof(block_tq1_0, qh));
  }
}

// TQ2_0: byte m of each run of 128 values holds trit(x[m + 32n]) & 3 at bits 2n.
void Tq2Blocks(const float* HWY_RESTRICT x, uint8_t* HWY_RESTRICT out, size_t blocks) {
  const DF d;
  const DI di;
  const int N = static_cast<int>(hn::Lanes(d));
  const auto three = hn::Set(di, 3);
  for (size_t b = 0; b < blocks; ++b, x += QK_K, out += sizeof(block_tq2_0)) {
    float amax;
    if (!TernaryAbsMax(x, amax)) {
      quantize_tq2_0_block(x, out);
      continue;
    }
    const float id = amax != 0.0f ? 1.0f / amax : 0.0f;
    const uint16_t h = fp32_to_fp16(amax);
    std::memcpy(out + offsetof(block_tq2_0, d), &h, 2);
    for (int run = 0; run < 2; ++run) {
      const float* xr = x + 128 * run;
      for (int m = 0; m < 32; m += N) {
        const auto t0 = hn::And(Trits(d, hn::LoadU(d, xr + m), id), three);
        const auto t1 = hn::And(Trits(d, hn::LoadU(d, xr + m + 32), id), three);
        const auto t2 = hn::And(Trits(d, hn::LoadU(d, xr + m + 64), id), three);
        const auto t3 = hn::And(Trits(d, hn::LoadU(d, xr + m + 96), id), three);
        const auto q = hn::Or(hn::Or(t0, hn::ShiftLeft<2>(t1)), hn::Or(hn::ShiftLeft<4>(t2), hn::ShiftLeft<6>(t3)));
        StoreLowBytes(q, out + offsetof(block_tq2_0, qs) + 32 * run + m);
      }
    }
  }
}

// Q1_0: d = (the sum of 128 |x| in order) / 128, one block per lane; bit j set for x >= 0.
void Q1Blocks(const float* HWY_RESTRICT x, uint8_t* HWY_RESTRICT out, size_t blocks) {
  constexpr int qk = 128;
  const DF d;
  const DI di;
  const int N = static_cast<int>(hn::Lanes(d));
  HWY_ALIGN float sums[16];
  for (size_t b0 = 0; b0 < blocks; b0 += N) {
    const size_t lanes = blocks - b0 < size_t(N) ? blocks - b0 : size_t(N);
    const float* xb = x + b0 * qk;
    if (lanes == size_t(N)) {
      auto index = hn::ShiftLeft<7>(hn::Iota(di, 0));  // lane k: block k, at k * 128
      auto sum = hn::Zero(d);
      for (int j = 0; j < qk; ++j, index = hn::Add(index, hn::Set(di, 1))) {
        sum = hn::Add(sum, hn::Abs(hn::GatherIndex(d, xb, index)));
      }
      hn::Store(sum, d, sums);
    } else {
      for (size_t k = 0; k < lanes; ++k) {
        float s = 0.0f;
        for (int j = 0; j < qk; ++j) s += std::fabs(xb[k * qk + j]);
        sums[k] = s;
      }
    }
    for (size_t k = 0; k < lanes; ++k) {
      const float* xk = xb + k * qk;
      uint8_t* o = out + (b0 + k) * sizeof(block_q1_0);
      const uint16_t h = fp32_to_fp16(sums[k] / float(qk));
      std::memcpy(o + offsetof(block_q1_0, d), &h, 2);
      uint64_t bits[2] = {0, 0};
      for (int j = 0; j < qk; j += N) {
        bits[j / 64] |= uint64_t{MaskBits(d, hn::Ge(hn::LoadU(d, xk + j), hn::Zero(d)))} << (j % 64);
      }
      std::memcpy(o + offsetof(block_q1_0, qs), bits, 16);
    }
  }
}

// Q2_0: d = max |x| of 64; q = clamp((int)roundf(x / d) + 1, 0, 3), 2 bits each, element
// j at bits 2 * (j % 4) of byte j / 4.
void Q2Blocks(const float* HWY_RESTRICT x, uint8_t* HWY_RESTRICT out, size_t blocks) {
  constexpr int qk = 64;
  const DF d;
  const DI di;
  const int N = static_cast<int>(hn::Lanes(d));
  for (size_t b = 0; b < blocks; ++b, x += qk, out += sizeof(block_q2_0)) {
    const float amax = hn::GetLane(AbsMax(x, qk));
    const float id = amax > 0.0f ? 1.0f / amax : 0.0f;
    const uint16_t h = fp32_to_fp16(amax);
    std::memcpy(out + offsetof(block_q2_0, d), &h, 2);
    uint8_t levels[qk];
    for (int j = 0; j < qk; j += N) {
      const auto r = TruncI32(RoundAway(hn::Mul(hn::LoadU(d, x + j), hn::Set(d, id))));
      StoreLowBytes(hn::Min(hn::Max(hn::Add(r, hn::Set(di, 1)), hn::Zero(di)), hn::Set(di, 3)), levels + j);
    }
    for (int i = 0; i < qk / 4; ++i) {  // four levels, little-endian, into one byte
      uint32_t w;
      std::memcpy(&w, levels + 4 * i, 4);
      out[offsetof(block_q2_0, qs) + i] = uint8_t(w | w >> 6 | w >> 12 | w >> 18);
    }
  }
}
#endif  // HWY_TARGET != HWY_SCALAR

// The per-target entry point: false (nothing written) for another type, and on Highway's
// one-lane target.
HWY_NOINLINE bool QuantizeLowBit(GgmlType type, const float* HWY_RESTRICT x, uint8_t* HWY_RESTRICT out,
                                 size_t blocks) {
#if HWY_TARGET == HWY_SCALAR
  (void)type, (void)x, (void)out, (void)blocks;
  return false;
#else
  switch (type) {
    case GgmlType::TQ1_0: Tq1Blocks(x, out, blocks); return true;
    case GgmlType::TQ2_0: Tq2Blocks(x, out, blocks); return true;
    case GgmlType::Q1_0: Q1Blocks(x, out, blocks); return true;
    case GgmlType::Q2_0: Q2Blocks(x, out, blocks); return true;
    default: return false;
  }
#endif
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace ggml
}  // namespace amn
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace amn {
namespace ggml {

HWY_EXPORT(QuantizeLowBit);

bool quantize_low_bit_simd(GgmlType type, const float* x, uint8_t* out, size_t blocks) {
  return HWY_DYNAMIC_DISPATCH(QuantizeLowBit)(type, x, out, blocks);
}

}  // namespace ggml
}  // namespace amn
#endif  // HWY_ONCE
