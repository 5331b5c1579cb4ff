// IQ4_NL / IQ4_XS's scale search (quantize_row_iq4_nl_impl, ntry 7: iq4_block_scales in
// quantize_iq4.cpp) on several blocks of 32 at once, one block per vector lane, as the
// K-quant searches run (quantize_k_simd.cpp). The search is order-sensitive (each try's
// sums, the best kept so far), so each lane runs its block's whole search in ggml's
// operation order: the same products and sums, no multiply-add fused (-ffp-contract=off,
// no MulAdd), IEEE divisions. ggml's best_index_int8 (a binary search over the 16
// ascending codebook values) becomes a branch-free choice with the same result: the
// largest value <= x and the next one, the lower kept only when strictly nearer; x at or
// below the first value gives the first, at or above the last (or NaN, which the binary
// search walks to the top) the last.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/ggml/quantize_iq4_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include <algorithm>

#include "hwy/highway.h"
#include "kernels/ggml/blocks.h"
#include "kernels/ggml/quantize_iq4_simd.h"
#include "kernels/ggml/quantize_search.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace ggml {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
// kvalues_iq4nl[best_index_int8(16, kvalues_iq4nl, x)] in every lane, as a float.
template <class D>
HWY_INLINE hn::Vec<D> NearestValue(D d, hn::Vec<D> x) {
  const int8_t* v = kvalues_iq4nl;
  auto lo = hn::Set(d, float(v[0]));
  auto hi = hn::Set(d, float(v[1]));
  for (int i = 1; i < 15; ++i) {
    const auto at_or_below = hn::Le(hn::Set(d, float(v[i])), x);
    lo = hn::IfThenElse(at_or_below, hn::Set(d, float(v[i])), lo);
    hi = hn::IfThenElse(at_or_below, hn::Set(d, float(v[i + 1])), hi);
  }
  const auto mid = hn::IfThenElse(hn::Lt(hn::Sub(x, lo), hn::Sub(hi, x)), lo, hi);
  const auto first = hn::Set(d, float(v[0])), last = hn::Set(d, float(v[15]));
  // NaN takes the top value, as best_index_int8's search gives it. Not Ne(x, x): Highway
  // 1.0.3 compares with _CMP_NEQ_OQ on AVX2 / AVX-512, false for NaN.
  const auto top = hn::Or(hn::Ge(x, last), hn::Not(hn::Eq(x, x)));
  return hn::IfThenElse(hn::Le(x, first), first, hn::IfThenElse(top, last, mid));
}
#endif

// iq4_block_scales, a block per lane; false on Highway's one-lane target.
HWY_NOINLINE bool Iq4BlockScales(int count, const float* HWY_RESTRICT x, const float* HWY_RESTRICT weight,
                                 float* HWY_RESTRICT scales) {
#if HWY_TARGET == HWY_SCALAR
  (void)count, (void)x, (void)weight, (void)scales;
  return false;
#else
  constexpr int kNtry = 7, n = 32;
  const hn::CappedTag<float, 8> d;
  const int N = static_cast<int>(hn::Lanes(d));
  // Lane k of row i is block k's element i (the blocks transposed).
  HWY_ALIGN float xt[n * 8];
  HWY_ALIGN float wt[n * 8];
  HWY_ALIGN float out[8];
  const auto zero = hn::Zero(d);
  for (int k0 = 0; k0 < count; k0 += N) {
    const int lanes = std::min(N, count - k0);
    for (int i = 0; i < n; ++i) {
      for (int k = 0; k < N; ++k) {
        const int from = k0 + (k < lanes ? k : 0);  // spare lanes repeat the first block
        xt[i * N + k] = x[from * n + i];
        wt[i * N + k] = weight[from * n + i];
      }
    }
    // The first value of the largest magnitude (ggml's strict `ax > amax`).
    auto amax = zero, vmax = zero;
    for (int i = 0; i < n; ++i) {
      const auto xi = hn::Load(d, xt + i * N);
      const auto ax = hn::Abs(xi);
      const auto above = hn::Gt(ax, amax);
      amax = hn::IfThenElse(above, ax, amax);
      vmax = hn::IfThenElse(above, xi, vmax);
    }
    const auto flat = hn::Lt(amax, hn::Set(d, kGroupMaxEps));
    // sumqx and sumq2 at inverse scale id: (w * q) * x and (w * q) * q, summed in order.
    auto sums = [&](hn::Vec<decltype(d)> id, hn::Vec<decltype(d)>& sumqx, hn::Vec<decltype(d)>& sumq2) {
      sumqx = sumq2 = zero;
      for (int i = 0; i < n; ++i) {
        const auto xi = hn::Load(d, xt + i * N);
        const auto q = NearestValue(d, hn::Mul(id, xi));
        const auto wq = hn::Mul(hn::Load(d, wt + i * N), q);
        sumqx = hn::Add(sumqx, hn::Mul(wq, xi));
        sumq2 = hn::Add(sumq2, hn::Mul(wq, q));
      }
    };
    const auto d0 = hn::Div(hn::Neg(vmax), hn::Set(d, float(kvalues_iq4nl[0])));
    hn::Vec<decltype(d)> sumqx, sumq2;
    sums(hn::Div(hn::Set(d, 1.0f), d0), sumqx, sumq2);
    auto scale = hn::IfThenElseZero(hn::Gt(sumq2, zero), hn::Div(sumqx, sumq2));
    auto best = hn::Mul(scale, sumqx);
    for (int itry = -kNtry; itry <= kNtry; ++itry) {
      sums(hn::Div(hn::Set(d, float(itry + kvalues_iq4nl[0])), vmax), sumqx, sumq2);
      const auto better = hn::And(hn::Gt(sumq2, zero), hn::Gt(hn::Mul(sumqx, sumqx), hn::Mul(best, sumq2)));
      scale = hn::IfThenElse(better, hn::Div(sumqx, sumq2), scale);
      best = hn::IfThenElse(better, hn::Mul(scale, sumqx), best);
    }
    hn::Store(hn::IfThenZeroElse(flat, scale), d, out);
    for (int k = 0; k < lanes; ++k) scales[k0 + k] = out[k];
  }
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

HWY_EXPORT(Iq4BlockScales);

bool iq4_block_scales_simd(int count, const float* x, const float* weight, float* scales) {
  return HWY_DYNAMIC_DISPATCH(Iq4BlockScales)(count, x, weight, scales);
}

}  // namespace ggml
}  // namespace amn
#endif  // HWY_ONCE
