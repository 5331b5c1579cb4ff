// ggml's MXFP4 and NVFP4 encoders (quantize_row_mxfp4_ref, quantize_row_nvfp4_ref),
// vectorized along each block: every element's search for its nearest of the 16 E2M1
// codes (best_index_mxfp4) runs in its own lane, the codes tried in ggml's order with
// ggml's strict `err < best_err`, so a tie keeps the earlier code as the scalar loop does
// (and NaN, never less, keeps code 0). The products kvalue * scale are the scalar code's
// (one F32 multiply each, computed once per block), the errors |product - x| one IEEE
// subtraction each. A block's largest magnitude is exact in any order (quantize_simd-inl.h);
// the scale bytes come from the scalar code's own rules (mxfp4_exponent, f32_to_ue4m3).
// Compiled once per Highway target; Highway's one-lane target leaves it to the scalar code.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/ggml/quantize_fp4_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include <cstddef>

#include "hwy/highway.h"
#include "kernels/ggml/blocks.h"
#include "kernels/ggml/quantize_fp4_simd.h"
#include "kernels/ggml/quantize_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace ggml {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
// best_index_mxfp4 of every lane; kd[i] = kvalues_fp4[i] * the scale (kd[8 + k] = -kd[k]
// exactly, kd[0] = kd[8] = 0 in magnitude). The search runs on |x| over the 8 codes of
// non-negative value only, and the sign picks the half afterwards; this is the 16-code
// scan's answer, ties included: for x >= 0 each code 8 + k errs by fl(kd[k] + x) >=
// fl(|kd[k] - x|), the error of code k, which comes first, so the minimum and its first
// index are among codes 0-7. For x < 0 the halves swap roles, except that codes 0 and 8
// both err by |x| and code 0 comes first: a code k > 0 errs by fl(kd[k] + |x|) >= |x|, so
// the answer is code 0 when the search on |x| ends at 0, else 8 + that index. NaN (all
// compares false) stays at code 0. Half the compares; best_err as Min (the same
// `err < best_err` select), and since each better code has a larger index than the best so
// far, the index as a max (two cheap ops on WASM, where a select is three).
template <class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> NearestCode(D d, hn::Vec<D> x, const hn::Vec<D>* kd) {
  const hn::RebindToSigned<D> di;
  const auto a = hn::Abs(x);
  auto best = hn::Zero(di);
  auto best_err = a;  // |kd[0] - |x||, kd[0] = 0
  for (int i = 1; i < 8; ++i) {
    const auto err = hn::Abs(hn::Sub(kd[i], a));
    best = hn::Max(best, hn::And(hn::BitCast(di, hn::VecFromMask(d, hn::Lt(err, best_err))), hn::Set(di, i)));
    best_err = hn::Min(err, best_err);
  }
  // best | 8 where x's sign is set and best > 0
  const auto neg8 = hn::ShiftLeft<3>(hn::ShiftRight<31>(hn::BitCast(hn::RebindToUnsigned<D>(), x)));
  return hn::Or(best, hn::IfThenElseZero(hn::Gt(best, hn::Zero(di)), hn::BitCast(di, neg8)));
}

// kN values at scale e: byte j holds code(x[j]) low and code(x[j + kN/2]) high. The lanes
// are capped at kN/2 (NVFP4's halves of 8).
template <int kN>
HWY_INLINE void PackCodes(const float* HWY_RESTRICT x, float e, uint8_t* HWY_RESTRICT qs) {
  const hn::CappedTag<float, kN / 2> d;
  const int N = static_cast<int>(hn::Lanes(d));
  hn::Vec<decltype(d)> kd[8];
  for (int i = 0; i < 8; ++i) kd[i] = hn::Set(d, float(kvalues_fp4[i]) * e);
  for (int j = 0; j < kN / 2; j += N) {
    const auto lo = NearestCode(d, hn::LoadU(d, x + j), kd);
    const auto hi = NearestCode(d, hn::LoadU(d, x + kN / 2 + j), kd);
    StoreLowBytes<hn::RebindToSigned<decltype(d)>>(hn::Or(lo, hn::ShiftLeft<4>(hi)), qs + j);
  }
}

void MxFp4Blocks(const float* HWY_RESTRICT x, uint8_t* HWY_RESTRICT out, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, x += 32, out += sizeof(block_mxfp4)) {
    const uint8_t e = mxfp4_exponent(hn::GetLane(AbsMax(x, 32)));
    out[offsetof(block_mxfp4, e)] = e;
    PackCodes<32>(x, e8m0_to_f32_half(e), out + offsetof(block_mxfp4, qs));
  }
}

void NvFp4Blocks(const float* HWY_RESTRICT x, uint8_t* HWY_RESTRICT out, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, out += sizeof(block_nvfp4)) {
    for (int s = 0; s < 4; ++s, x += 16) {
      const uint8_t ue = f32_to_ue4m3(hn::GetLane(AbsMax(x, 16)) / 6.0f);
      out[offsetof(block_nvfp4, d) + s] = ue;
      PackCodes<16>(x, ue4m3_to_f32_half(ue), out + offsetof(block_nvfp4, qs) + s * 8);
    }
  }
}
#endif  // HWY_TARGET != HWY_SCALAR

// The per-target entry point: false (nothing written) for another type, and on Highway's
// one-lane target.
HWY_NOINLINE bool QuantizeFp4(GgmlType type, const float* HWY_RESTRICT x, uint8_t* HWY_RESTRICT out, size_t blocks) {
#if HWY_TARGET == HWY_SCALAR
  (void)type, (void)x, (void)out, (void)blocks;
  return false;
#else
  if (type == GgmlType::MXFP4) MxFp4Blocks(x, out, blocks);
  else if (type == GgmlType::NVFP4) NvFp4Blocks(x, out, blocks);
  else return false;
  return true;
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

HWY_EXPORT(QuantizeFp4);

bool quantize_fp4_simd(GgmlType type, const float* x, uint8_t* out, size_t blocks) {
  return HWY_DYNAMIC_DISPATCH(QuantizeFp4)(type, x, out, blocks);
}

}  // namespace ggml
}  // namespace amn
#endif  // HWY_ONCE
