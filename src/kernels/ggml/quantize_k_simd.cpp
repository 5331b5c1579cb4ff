// ggml's make_qkx2_quants, make_qkx3_quants, make_qx_quants and make_q3_quants
// (quantize_search.cpp) on several sub-blocks at once, one sub-block per vector lane:
// the searches of every K-quant, with and without an importance matrix, which spend most of those
// encoders' time. Each lane
// runs the reference's operations in the reference's order on its own sub-block (a
// multiply and an add never fused: -ffp-contract=off, and no MulAdd here; divisions and
// square roots are IEEE in every Highway target), so every lane's result is the scalar
// search's, bit for bit (tests_native/test_ggml_quantize.cpp, fixtures/ggml_quant).
// Compiled once per Highway target (foreach_target.h re-includes this file).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/ggml/quantize_k_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "hwy/highway.h"
#include "kernels/ggml/quantize_search.h"
#include "kernels/ggml/quantize_simd-inl.h"

#ifndef AMN_KERNELS_GGML_QUANTIZE_K_SIMD_LOOPS
#define AMN_KERNELS_GGML_QUANTIZE_K_SIMD_LOOPS
// The scalar searches block after block: Highway's one-lane target, and every target
// when the reference is forced (the wrappers at the end of this file).
namespace amn::ggml::scalar_loops {
inline void qkx(int count, int n, int nmax, const float* x, const float* weights, uint8_t* L, float* scales,
                float* the_mins, float rmin, float rdelta, int nstep, bool use_mad, bool qkx3) {
  uint8_t Laux[32];
  const auto search = qkx3 ? make_qkx3_quants : make_qkx2_quants;
  for (int k = 0; k < count; ++k) {
    scales[k] = search(n, nmax, x + k * n, weights + k * n, L + k * n, &the_mins[k], Laux, rmin, rdelta, nstep, use_mad);
  }
}
inline void qx(int count, int n, int nmax, const float* x, const float* qw, int8_t* L, float* scales) {
  for (int k = 0; k < count; ++k) scales[k] = make_qx_quants(n, nmax, x + k * n, L + k * n, 1, qw ? qw + k * n : nullptr);
}
inline void q3(int count, int n, int nmax, const float* x, int8_t* L, float* scales) {
  for (int k = 0; k < count; ++k) scales[k] = make_q3_quants(n, nmax, x + k * n, L + k * n, true);
}
}  // namespace amn::ggml::scalar_loops
#endif

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace ggml {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ggml's nearest_int in every lane: the F32 mantissa bits of x + 1.5 * 2^23.
template <class D, class V>
HWY_INLINE auto NearestInt(D d, V x) {
  const hn::RebindToSigned<D> di;
  const auto bits = hn::BitCast(di, hn::Add(x, hn::Set(d, 12582912.f)));
  return hn::Sub(hn::And(bits, hn::Set(di, 0x007fffff)), hn::Set(di, 0x00400000));
}

// Copies sub-blocks k0 .. k0 + N - 1 (each n values) into lanes: lane k of row i of xt is
// sub-block k's element i, and of wt its weight, weight(at, x[at]) for the element at
// x[at]. Spare lanes (k >= lanes) repeat sub-block `first`.
template <class Weight>
HWY_INLINE void SubBlocksToLanes(int n, int N, int k0, int lanes, int first, const float* HWY_RESTRICT x,
                                 float* HWY_RESTRICT xt, float* HWY_RESTRICT wt, const Weight& weight) {
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < N; ++k) {
      const int at = (k < lanes ? k0 + k : first) * n + i;
      xt[i * N + k] = x[at];
      wt[i * N + k] = weight(at, x[at]);
    }
  }
}

// make_qkx2_quants(n, nmax, x + k * n, weights + k * n, L + k * n, &the_mins[k], ...)
// for k < count, returning each scale in scales[k]; with qkx3, make_qkx3_quants (the
// same search with given weights but for its test of a flat sub-block, max <= min
// instead of max == min). n at most 32.
// use_mad is a template argument: V8 does not unswitch loops, so as a run-time flag it
// was a compare and two jumps per element of the error sums in WASM.
//
// kTame (WASM, and SSE4 so that the native tests run it; AVX2, AVX-512 and NEON keep
// the integer path): while every non-flat lane of a group is "tame", a step finds its
// levels in floats. The reference's level is clamp(nearest_int(f), 0, nmax) with
// f = iscale * (x - min); nearest_int is f rounded to nearest, ties to even, while
// |f| < 2^22, and rounding is monotone and keeps integers, so for such f the level is
// Round(clamp(f, 0, nmax)) (f32x4.nearest, one roundps): no mask, offset or int-float
// conversion, and two constants held instead of five. Tame (is_tame below): finite
// values, and |f| under 2^20 for every element and step at the present min. A min the
// fit moved far above the lowest value, a range that overflows or vanishes, NaN or an
// infinity send the step through the integer path; flat lanes, whose results are never
// read, do not count. On these targets x - min is also kept per element (updated when
// the min moves) and the best levels are found again at the end from the iscale and
// min that found them, instead of copied at every better step. Under V8 (16 xmm
// registers) this keeps the two groups' sums out of memory.
#if HWY_TARGET != HWY_SCALAR
// A 4x4 transpose of 32-bit lanes: on return, vector j holds lane j of the four inputs.
template <class D>
HWY_INLINE void Transpose4(D d, hn::Vec<D>& v0, hn::Vec<D>& v1, hn::Vec<D>& v2, hn::Vec<D>& v3) {
  const hn::Repartition<uint64_t, D> d64;
  const auto t0 = hn::BitCast(d64, hn::InterleaveLower(d, v0, v1));  // 00 10 01 11
  const auto t1 = hn::BitCast(d64, hn::InterleaveLower(d, v2, v3));  // 20 30 21 31
  const auto t2 = hn::BitCast(d64, hn::InterleaveUpper(d, v0, v1));  // 02 12 03 13
  const auto t3 = hn::BitCast(d64, hn::InterleaveUpper(d, v2, v3));  // 22 32 23 33
  v0 = hn::BitCast(d, hn::InterleaveLower(d64, t0, t1));
  v1 = hn::BitCast(d, hn::InterleaveUpper(d64, t0, t1));
  v2 = hn::BitCast(d, hn::InterleaveLower(d64, t2, t3));
  v3 = hn::BitCast(d, hn::InterleaveUpper(d64, t2, t3));
}

template <bool kUseMad>
HWY_INLINE void Qkx2Lanes(int count, int n, int nmax, const float* HWY_RESTRICT x, const float* HWY_RESTRICT weights,
                          uint8_t* HWY_RESTRICT L, float* HWY_RESTRICT scales, float* HWY_RESTRICT the_mins,
                          float rmin, float rdelta, int nstep, bool qkx3) {
  const hn::CappedTag<float, 8> d;
  const hn::RebindToSigned<decltype(d)> di;
  using VF = hn::Vec<decltype(d)>;
  using MF = hn::Mask<decltype(d)>;
  const int N = static_cast<int>(hn::Lanes(d));
  // G vectors of N sub-blocks side by side (as QxSubBlocks: two on WASM, one elsewhere).
  constexpr int G = HWY_TARGET == HWY_WASM ? 2 : 1;
  constexpr bool kTame = HWY_TARGET == HWY_WASM || HWY_TARGET == HWY_SSE4;
  static_assert(!kTame || hn::MaxLanes(decltype(d)()) == 4, "the Rows below hold four lanes");
  // Where kTame (four lanes), sub-blocks go into lanes and levels out of them by 4x4
  // transposes instead of a scalar load and store per value.
  const bool quad = kTame && n % 4 == 0;
  // A level as stored (float where kTame, else int32) and as a float.
  using Level = std::conditional_t<kTame, float, int32_t>;
  const auto store_level = [&](hn::Vec<decltype(di)> l, auto* p) {  // auto: a discarded branch is not compiled
    if constexpr (kTame) {
      hn::Store(hn::ConvertTo(d, l), d, p);
    } else {
      hn::Store(l, di, p);
    }
  };
  const auto store_level_f = [&](VF lf, auto* p) {  // lf: a whole number 0 .. nmax
    if constexpr (kTame) {
      hn::Store(lf, d, p);
    } else {
      hn::Store(hn::ConvertTo(di, lf), di, p);
    }
  };
  const auto load_level = [&](const auto* p) {
    if constexpr (kTame) {
      return hn::Load(d, p);
    } else {
      return hn::ConvertTo(d, hn::Load(di, p));
    }
  };
  const auto select_level = [&](MF better, const auto* from, auto* to) {  // to = better ? from : to (not kTame)
    hn::Store(hn::IfThenElse(hn::RebindMask(di, better), hn::Load(di, from), hn::Load(di, to)), di, to);
  };
  // Lane k of row i is sub-block k's element i (the sub-blocks transposed): group g's
  // values, weights, candidate levels and, where kTame, x - min per element, as the tame
  // pass reads it (kept with the min, so that pass holds neither min nor a subtraction).
  // Where kTame, one row's arrays side by side (a Row), not one array per kind: in WASM
  // each load's address is then one per-row address plus a constant under 1024, which
  // wasm-opt folds into the load (an array per kind put 1024 bytes or more between them,
  // an i32.add per load, a lea under V8). Elsewhere an array per kind, as before (the
  // Rows were 8 % slower on AVX-512).
  struct Row {  // four lanes (WASM, SSE4)
    alignas(16) float x[4];
    alignas(16) float w[4];
    alignas(16) Level aux[4];
    alignas(16) float xm[4];
  };
  Row rows[kTame ? 32 : 1][G];
  HWY_ALIGN float xt[kTame ? 1 : G][kTame ? 1 : 32 * 8];
  HWY_ALIGN float wt[kTame ? 1 : G][kTame ? 1 : 32 * 8];
  HWY_ALIGN Level laux[kTame ? 1 : G][kTame ? 1 : 32 * 8];
  const auto X = [&](int g, int i) -> float* { return kTame ? rows[i][g].x : xt[g] + i * N; };
  const auto W = [&](int g, int i) -> float* { return kTame ? rows[i][g].w : wt[g] + i * N; };
  const auto AUX = [&](int g, int i) -> Level* { return kTame ? rows[i][g].aux : laux[g] + i * N; };
  const auto XM = [&](int g, int i) -> float* { return rows[kTame ? i : 0][g].xm; };
  HWY_ALIGN Level lt[G][32 * 8];
  HWY_ALIGN float out_scale[8];
  HWY_ALIGN float out_min[8];
  HWY_ALIGN int32_t out_flat[8];
  const auto zero = hn::Zero(d);
  const auto izero = hn::Zero(di);
  const auto inmax = hn::Set(di, nmax);
  // Where kTame, the largest |c| of the steps' iscale = c / (max - min), each c as the
  // step computes it: c is monotone in is (each rounding is), so it is at an end.
  const auto c_of = [&](int is) { return rmin + rdelta * is + nmax; };
  const float c_max = kTame ? std::max(std::fabs(c_of(0)), std::fabs(c_of(std::max(nstep, 0)))) : 0.f;
  for (int k00 = 0; k00 < count; k00 += G * N) {
    VF vmin[G], vmax[G], xlo[G], sum_w[G], sum_x[G], iscale[G], scale[G], best_error[G];
    VF best_iscale[G], best_min[G];  // where kTame: what the best levels were found with
    MF flat[G], finite[G];
    bool group_tame[G];  // where kTame: every lane of group g tame at its present min
    // Whether f = iscale * (x - min) is under 2^20 in magnitude for every x of each
    // non-flat lane of group g, every step's iscale and the present min: each step's
    // iscale is c / (max - min) with |c| <= c_max, and f is two monotone roundings of x
    // and of iscale, so |f| is at most the larger of its values at x = max and x = min x
    // with iscale = c_max / (max - min). Not tame: a value that is not finite, a range
    // that overflows or vanishes, a min the fit moved far above the lowest value.
    const auto is_tame = [&](int g) {
      if constexpr (kTame) {
        const auto limit = hn::Set(d, 1048576.f);  // 2^20
        const auto range = hn::Sub(vmax[g], vmin[g]);
        const auto iscale_max = hn::Div(hn::Set(d, c_max), range);
        const auto f_hi = hn::Abs(hn::Mul(iscale_max, range));
        const auto f_lo = hn::Abs(hn::Mul(iscale_max, hn::Sub(xlo[g], vmin[g])));
        const auto lane_tame = hn::And(finite[g], hn::And(hn::Lt(f_hi, limit), hn::Lt(f_lo, limit)));
        return c_max < 1048576.f && hn::AllTrue(d, hn::Or(flat[g], lane_tame));
      }
      return false;
    };
    for (int g = 0; g < G; ++g) {
      const int k0 = k00 + g * N;
      const int lanes = std::max(0, std::min(N, count - k0));
      // Spare lanes repeat the first sub-block.
      const auto sub_block = [&](int k) { return (k < lanes ? k0 + k : k00) * n; };
      if (quad) {  // four sub-blocks' elements i .. i + 3 at once
        const int at[4] = {sub_block(0), sub_block(1), sub_block(2), sub_block(3)};
        for (int i = 0; i < n; i += 4) {
          for (const float* from : {x, weights}) {
            auto v0 = hn::LoadU(d, from + at[0] + i), v1 = hn::LoadU(d, from + at[1] + i);
            auto v2 = hn::LoadU(d, from + at[2] + i), v3 = hn::LoadU(d, from + at[3] + i);
            Transpose4(d, v0, v1, v2, v3);
            const auto row = [&](int r) { return from == x ? X(g, i + r) : W(g, i + r); };
            hn::Store(v0, d, row(0));
            hn::Store(v1, d, row(1));
            hn::Store(v2, d, row(2));
            hn::Store(v3, d, row(3));
          }
        }
      } else {
        for (int i = 0; i < n; ++i) {
          for (int k = 0; k < N; ++k) {
            X(g, i)[k] = x[sub_block(k) + i];
            W(g, i)[k] = weights[sub_block(k) + i];
          }
        }
      }
      vmin[g] = hn::Load(d, X(g, 0));
      vmax[g] = vmin[g];
      sum_w[g] = hn::Load(d, W(g, 0));
      sum_x[g] = hn::Mul(sum_w[g], vmin[g]);
      if constexpr (kTame) finite[g] = hn::Lt(hn::Abs(vmin[g]), hn::Set(d, HUGE_VALF));
    }
    for (int i = 1; i < n; ++i) {
      for (int g = 0; g < G; ++g) {
        const auto xi = hn::Load(d, X(g, i));
        const auto wi = hn::Load(d, W(g, i));
        vmin[g] = hn::IfThenElse(hn::Lt(xi, vmin[g]), xi, vmin[g]);
        vmax[g] = hn::IfThenElse(hn::Gt(xi, vmax[g]), xi, vmax[g]);
        sum_w[g] = hn::Add(sum_w[g], wi);
        sum_x[g] = hn::Add(sum_x[g], hn::Mul(wi, xi));
        if constexpr (kTame) finite[g] = hn::And(finite[g], hn::Lt(hn::Abs(xi), hn::Set(d, HUGE_VALF)));
      }
    }
    for (int g = 0; g < G; ++g) {
      xlo[g] = vmin[g];
      vmin[g] = hn::IfThenElse(hn::Gt(vmin[g], zero), zero, vmin[g]);
      flat[g] = qkx3 ? hn::Le(vmax[g], vmin[g]) : hn::Eq(vmax[g], vmin[g]);  // all levels 0, scale 0 (below)
      iscale[g] = hn::Div(hn::Set(d, static_cast<float>(nmax)), hn::Sub(vmax[g], vmin[g]));
      scale[g] = hn::Div(hn::Set(d, 1.f), iscale[g]);
      best_error[g] = zero;
      best_iscale[g] = iscale[g];
      best_min[g] = vmin[g];
      group_tame[g] = is_tame(g);
    }
    for (int i = 0; i < n; ++i) {
      for (int g = 0; g < G; ++g) {
        const auto xi = hn::Load(d, X(g, i));
        const auto l = hn::Max(izero, hn::Min(inmax, NearestInt(d, hn::Mul(iscale[g], hn::Sub(xi, vmin[g])))));
        if constexpr (kTame) {
          hn::Store(hn::Sub(xi, vmin[g]), d, XM(g, i));
        } else {
          store_level(l, lt[g] + i * N);
        }
        auto diff = hn::Sub(hn::Add(hn::Mul(scale[g], hn::ConvertTo(d, l)), vmin[g]), xi);
        diff = kUseMad ? hn::Abs(diff) : hn::Mul(diff, diff);
        best_error[g] = hn::Add(best_error[g], hn::Mul(hn::Load(d, W(g, i)), diff));
      }
    }
    for (int is = 0; nstep >= 1 && is <= nstep; ++is) {
      // ggml's min moves with each better fit, and the next step's range with it.
      VF sum_l[G], sum_l2[G], sum_xl[G], this_scale[G], this_min[G], cur_error[G];
      MF positive[G];
      bool tame = kTame;
      for (int g = 0; g < G; ++g) {
        iscale[g] = hn::Div(hn::Set(d, rmin + rdelta * is + nmax), hn::Sub(vmax[g], vmin[g]));
        sum_l[g] = sum_l2[g] = sum_xl[g] = zero;
        tame = tame && group_tame[g];
      }
      if (tame) {
        const auto fnmax = hn::Set(d, static_cast<float>(nmax));
        for (int i = 0; i < n; ++i) {
          for (int g = 0; g < G; ++g) {
            const auto xi = hn::Load(d, X(g, i));
            const auto lf = hn::Round(hn::Min(hn::Max(hn::Mul(iscale[g], hn::Load(d, XM(g, i))), zero), fnmax));
            store_level_f(lf, AUX(g, i));
            const auto wl = hn::Mul(hn::Load(d, W(g, i)), lf);
            sum_l[g] = hn::Add(sum_l[g], wl);
            sum_l2[g] = hn::Add(sum_l2[g], hn::Mul(wl, lf));
            sum_xl[g] = hn::Add(sum_xl[g], hn::Mul(wl, xi));
          }
        }
      } else {
        for (int i = 0; i < n; ++i) {
          for (int g = 0; g < G; ++g) {
            const auto xi = hn::Load(d, X(g, i));
            const auto l = hn::Max(izero, hn::Min(inmax, NearestInt(d, hn::Mul(iscale[g], hn::Sub(xi, vmin[g])))));
            store_level(l, AUX(g, i));
            const auto lf = hn::ConvertTo(d, l);
            const auto wl = hn::Mul(hn::Load(d, W(g, i)), lf);
            sum_l[g] = hn::Add(sum_l[g], wl);
            sum_l2[g] = hn::Add(sum_l2[g], hn::Mul(wl, lf));
            sum_xl[g] = hn::Add(sum_xl[g], hn::Mul(wl, xi));
          }
        }
      }
      bool any = false;
      for (int g = 0; g < G; ++g) {
        const auto D = hn::Sub(hn::Mul(sum_w[g], sum_l2[g]), hn::Mul(sum_l[g], sum_l[g]));
        positive[g] = hn::Gt(D, zero);
        any = any || !hn::AllFalse(d, positive[g]);
        // Lanes without a positive D compute values no one reads (better is false there).
        this_scale[g] = hn::Div(hn::Sub(hn::Mul(sum_w[g], sum_xl[g]), hn::Mul(sum_x[g], sum_l[g])), D);
        this_min[g] = hn::Div(hn::Sub(hn::Mul(sum_l2[g], sum_x[g]), hn::Mul(sum_l[g], sum_xl[g])), D);
        const auto min_above = hn::Gt(this_min[g], zero);
        this_min[g] = hn::IfThenElse(min_above, zero, this_min[g]);
        this_scale[g] = hn::IfThenElse(min_above, hn::Div(sum_xl[g], sum_l2[g]), this_scale[g]);
        cur_error[g] = zero;
      }
      if (!any) continue;
      for (int i = 0; i < n; ++i) {
        for (int g = 0; g < G; ++g) {
          const auto xi = hn::Load(d, X(g, i));
          auto diff = hn::Sub(hn::Add(hn::Mul(this_scale[g], load_level(AUX(g, i))), this_min[g]), xi);
          diff = kUseMad ? hn::Abs(diff) : hn::Mul(diff, diff);
          cur_error[g] = hn::Add(cur_error[g], hn::Mul(hn::Load(d, W(g, i)), diff));
        }
      }
      for (int g = 0; g < G; ++g) {
        const auto better = hn::AndNot(flat[g], hn::And(positive[g], hn::Lt(cur_error[g], best_error[g])));
        if (hn::AllFalse(d, better)) continue;
        best_error[g] = hn::IfThenElse(better, cur_error[g], best_error[g]);
        scale[g] = hn::IfThenElse(better, this_scale[g], scale[g]);
        if constexpr (kTame) {
          best_iscale[g] = hn::IfThenElse(better, iscale[g], best_iscale[g]);
          best_min[g] = hn::IfThenElse(better, vmin[g], best_min[g]);
        }
        vmin[g] = hn::IfThenElse(better, this_min[g], vmin[g]);
        group_tame[g] = is_tame(g);
        for (int i = 0; i < n; ++i) {
          if constexpr (kTame) {
            hn::Store(hn::Sub(hn::Load(d, X(g, i)), vmin[g]), d, XM(g, i));
          } else {
            select_level(better, AUX(g, i), lt[g] + i * N);
          }
        }
      }
    }
    if constexpr (kTame) {
      // The best levels, found again once from what found them (every candidate's levels
      // are clamp(nearest_int(iscale * (x - min))) of its iscale and min), instead of
      // copied at each better step.
      const auto level = [&](int g, int i) {
        const auto xi = hn::Load(d, X(g, i));
        return hn::Max(izero, hn::Min(inmax, NearestInt(d, hn::Mul(best_iscale[g], hn::Sub(xi, best_min[g])))));
      };
      if (quad) {  // and written out four rows at a time, transposed back
        const hn::Rebind<uint8_t, decltype(di)> d8;
        for (int g = 0; g < G; ++g) {
          const int k0 = k00 + g * N;
          const int lanes = std::max(0, std::min(N, count - k0));
          const auto live = hn::RebindMask(di, hn::Not(flat[g]));  // flat sub-blocks: levels 0
          for (int i = 0; i < n; i += 4) {
            auto v0 = hn::IfThenElseZero(live, level(g, i)), v1 = hn::IfThenElseZero(live, level(g, i + 1));
            auto v2 = hn::IfThenElseZero(live, level(g, i + 2)), v3 = hn::IfThenElseZero(live, level(g, i + 3));
            Transpose4(di, v0, v1, v2, v3);
            const hn::Vec<decltype(di)> by_sub_block[4] = {v0, v1, v2, v3};
            for (int k = 0; k < lanes; ++k) hn::StoreU(hn::DemoteTo(d8, by_sub_block[k]), d8, L + (k0 + k) * n + i);
          }
        }
      } else {
        for (int i = 0; i < n; ++i) {
          for (int g = 0; g < G; ++g) store_level(level(g, i), lt[g] + i * N);
        }
      }
    }
    for (int g = 0; g < G; ++g) {
      const int k0 = k00 + g * N;
      const int lanes = std::max(0, std::min(N, count - k0));
      hn::Store(scale[g], d, out_scale);
      hn::Store(vmin[g], d, out_min);
      hn::Store(hn::VecFromMask(di, hn::RebindMask(di, flat[g])), di, out_flat);
      for (int k = 0; k < lanes; ++k) {
        uint8_t* Lk = L + (k0 + k) * n;
        const bool is_flat = out_flat[k] != 0;
        for (int i = 0; !quad && i < n; ++i) Lk[i] = is_flat ? 0 : static_cast<uint8_t>(lt[g][i * N + k]);
        // A flat sub-block keeps its first min (the search never ran for it in ggml).
        scales[k0 + k] = is_flat ? 0.f : out_scale[k];
        the_mins[k0 + k] = -out_min[k];
      }
    }
  }
}
#endif

HWY_NOINLINE void Qkx2SubBlocks(int count, int n, int nmax, const float* HWY_RESTRICT x,
                                const float* HWY_RESTRICT weights, uint8_t* HWY_RESTRICT L,
                                float* HWY_RESTRICT scales, float* HWY_RESTRICT the_mins, float rmin,
                                float rdelta, int nstep, bool use_mad, bool qkx3) {
#if HWY_TARGET == HWY_SCALAR
  scalar_loops::qkx(count, n, nmax, x, weights, L, scales, the_mins, rmin, rdelta, nstep, use_mad, qkx3);
#else
  if (use_mad) {
    Qkx2Lanes<true>(count, n, nmax, x, weights, L, scales, the_mins, rmin, rdelta, nstep, qkx3);
  } else {
    Qkx2Lanes<false>(count, n, nmax, x, weights, L, scales, the_mins, rmin, rdelta, nstep, qkx3);
  }
#endif
}

// make_qx_quants(n, nmax, x + k * n, L + k * n, 1, qw ? qw + k * n : nullptr) for
// k < count (rmse_type 1: the weights are qw's, or x^2), each scale in scales[k]. n at
// most 32.
HWY_NOINLINE void QxSubBlocks(int count, int n, int nmax, const float* HWY_RESTRICT x,
                              const float* HWY_RESTRICT qw, int8_t* HWY_RESTRICT L, float* HWY_RESTRICT scales) {
#if HWY_TARGET == HWY_SCALAR
  scalar_loops::qx(count, n, nmax, x, qw, L, scales);
#else
  const hn::CappedTag<float, 8> d;
  const hn::RebindToSigned<decltype(d)> di;
  using VF = hn::Vec<decltype(d)>;
  const int N = static_cast<int>(hn::Lanes(d));
  // G vectors of N sub-blocks side by side, each its own lanes' search. WASM: two, since
  // each lane's sums are a chain of dependent adds, as long per vector of 4 lanes under
  // V8 as per vector of 8 natively; two independent chains fill the wait (measured:
  // docs/benchmarks.md). Elsewhere one.
  constexpr int G = HWY_TARGET == HWY_WASM ? 2 : 1;
  HWY_ALIGN float xt[G][32 * 8];
  HWY_ALIGN float wt[G][32 * 8];
  HWY_ALIGN int32_t lt[G][32 * 8];
  HWY_ALIGN float out_scale[8];
  HWY_ALIGN int32_t out_zero[8];
  const auto zero = hn::Zero(d);
  const auto lo = hn::Set(di, -nmax);
  const auto hi = hn::Set(di, nmax - 1);
  for (int k00 = 0; k00 < count; k00 += G * N) {
    VF vmax[G], amax[G], iscale[G], sumlx[G], suml2[G], scale[G], best[G];
    hn::Mask<decltype(d)> all_zero[G], better[G];
    for (int g = 0; g < G; ++g) {
      const int k0 = k00 + g * N;
      const int lanes = std::max(0, std::min(N, count - k0));
      SubBlocksToLanes(n, N, k0, lanes, k00, x, xt[g], wt[g],
                       [qw](int at, float xi) { return qw ? qw[at] : xi * xi; });
      vmax[g] = zero, amax[g] = zero;
    }
    for (int i = 0; i < n; ++i) {
      for (int g = 0; g < G; ++g) {
        const auto xi = hn::Load(d, xt[g] + i * N);
        const auto ax = hn::Abs(xi);
        const auto above = hn::Gt(ax, amax[g]);
        amax[g] = hn::IfThenElse(above, ax, amax[g]);
        vmax[g] = hn::IfThenElse(above, xi, vmax[g]);
      }
    }
    for (int g = 0; g < G; ++g) {
      all_zero[g] = hn::Lt(amax[g], hn::Set(d, kGroupMaxEps));
      iscale[g] = hn::Div(hn::Set(d, static_cast<float>(-nmax)), vmax[g]);
      sumlx[g] = suml2[g] = zero;
    }
    for (int i = 0; i < n; ++i) {
      for (int g = 0; g < G; ++g) {
        const auto xi = hn::Load(d, xt[g] + i * N);
        const auto l = hn::Max(lo, hn::Min(hi, NearestInt(d, hn::Mul(iscale[g], xi))));
        hn::Store(l, di, lt[g] + i * N);
        const auto lf = hn::ConvertTo(d, l);
        const auto wi = hn::Load(d, wt[g] + i * N);
        sumlx[g] = hn::Add(sumlx[g], hn::Mul(hn::Mul(wi, xi), lf));
        suml2[g] = hn::Add(suml2[g], hn::Mul(hn::Mul(wi, lf), lf));
      }
    }
    for (int g = 0; g < G; ++g) {
      // C's `suml2 ? ... : 0`: true for NaN too (hn::Ne is ordered).
      scale[g] = hn::IfThenZeroElse(hn::Eq(suml2[g], zero), hn::Div(sumlx[g], suml2[g]));
      best[g] = hn::Mul(scale[g], sumlx[g]);
    }
    for (int is = -9; is <= 9; ++is) {
      if (is == 0) continue;
      for (int g = 0; g < G; ++g) {
        iscale[g] = hn::Div(hn::Set(d, -(nmax + 0.1f * is)), vmax[g]);
        sumlx[g] = suml2[g] = zero;
      }
      for (int i = 0; i < n; ++i) {
        for (int g = 0; g < G; ++g) {
          const auto xi = hn::Load(d, xt[g] + i * N);
          const auto lf = hn::ConvertTo(d, hn::Max(lo, hn::Min(hi, NearestInt(d, hn::Mul(iscale[g], xi)))));
          const auto wi = hn::Load(d, wt[g] + i * N);
          sumlx[g] = hn::Add(sumlx[g], hn::Mul(hn::Mul(wi, xi), lf));
          suml2[g] = hn::Add(suml2[g], hn::Mul(hn::Mul(wi, lf), lf));
        }
      }
      for (int g = 0; g < G; ++g) {
        better[g] = hn::AndNot(all_zero[g], hn::And(hn::Gt(suml2[g], zero),
                                                    hn::Gt(hn::Mul(sumlx[g], sumlx[g]), hn::Mul(best[g], suml2[g]))));
        if (hn::AllFalse(d, better[g])) continue;
        const auto ibetter = hn::RebindMask(di, better[g]);
        for (int i = 0; i < n; ++i) {
          const auto xi = hn::Load(d, xt[g] + i * N);
          const auto l = hn::Max(lo, hn::Min(hi, NearestInt(d, hn::Mul(iscale[g], xi))));
          hn::Store(hn::IfThenElse(ibetter, l, hn::Load(di, lt[g] + i * N)), di, lt[g] + i * N);
        }
        scale[g] = hn::IfThenElse(better[g], hn::Div(sumlx[g], suml2[g]), scale[g]);
        best[g] = hn::IfThenElse(better[g], hn::Mul(scale[g], sumlx[g]), best[g]);
      }
    }
    for (int g = 0; g < G; ++g) {
      const int k0 = k00 + g * N;
      const int lanes = std::max(0, std::min(N, count - k0));
      hn::Store(scale[g], d, out_scale);
      hn::Store(hn::VecFromMask(di, hn::RebindMask(di, all_zero[g])), di, out_zero);
      for (int k = 0; k < lanes; ++k) {
        int8_t* Lk = L + (k0 + k) * n;
        const bool is_zero = out_zero[k] != 0;
        for (int i = 0; i < n; ++i) Lk[i] = is_zero ? 0 : static_cast<int8_t>(lt[g][i * N + k] + nmax);
        scales[k0 + k] = is_zero ? 0.f : out_scale[k];
      }
    }
  }
#endif
}

// make_q3_quants(n, nmax, x + k * n, L + k * n, true) for k < count (Q3_K's reference
// search), each scale in scales[k]. n at most 32. A lane whose pass changed nothing
// stops there, as ggml's loop breaks.
HWY_NOINLINE void Q3SubBlocks(int count, int n, int nmax, const float* HWY_RESTRICT x, int8_t* HWY_RESTRICT L,
                              float* HWY_RESTRICT scales) {
#if HWY_TARGET == HWY_SCALAR
  scalar_loops::q3(count, n, nmax, x, L, scales);
#else
  // Up to 16 lanes, and two groups of lanes side by side (Q3_K's quantize_q3_k passes two
  // super-blocks' 32 searches at once): each group's pass is bound by the latency of its
  // element-to-element chain (every update of sumlx feeds the next division), and the two
  // groups' chains are independent, so they overlap.
  constexpr int G = 2;
  const hn::CappedTag<float, 16> d;
  const hn::RebindToSigned<decltype(d)> di;
  using V = hn::Vec<decltype(d)>;
  using M = hn::Mask<decltype(d)>;
  const int N = static_cast<int>(hn::Lanes(d));
  HWY_ALIGN float xt[G][32 * 16];
  HWY_ALIGN int32_t lt[G][32 * 16];
  HWY_ALIGN float out_scale[16];
  HWY_ALIGN int32_t out_zero[16];
  const auto zero = hn::Zero(d);
  const auto lo = hn::Set(di, -nmax);
  const auto hi = hn::Set(di, nmax - 1);
  for (int k0 = 0; k0 < count; k0 += G * N) {
    int lanes[G];
    for (int g = 0; g < G; ++g) lanes[g] = std::max(0, std::min(N, count - k0 - g * N));
    for (int g = 0; g < G; ++g) {
      for (int i = 0; i < n; ++i) {
        // Spare lanes (and an empty second group) repeat the first sub-block.
        for (int k = 0; k < N; ++k) xt[g][i * N + k] = x[(k < lanes[g] ? k0 + g * N + k : k0) * n + i];
      }
    }
    V sumlx[G], suml2[G];
    M all_zero[G], active[G];
    for (int g = 0; g < G; ++g) {
      auto vmax = zero, amax = zero;
      for (int i = 0; i < n; ++i) {
        const auto xi = hn::Load(d, xt[g] + i * N);
        const auto ax = hn::Abs(xi);
        const auto above = hn::Gt(ax, amax);
        amax = hn::IfThenElse(above, ax, amax);
        vmax = hn::IfThenElse(above, xi, vmax);
      }
      all_zero[g] = hn::Lt(amax, hn::Set(d, kGroupMaxEps));
      const auto iscale = hn::Div(hn::Set(d, static_cast<float>(-nmax)), vmax);
      sumlx[g] = suml2[g] = zero;
      for (int i = 0; i < n; ++i) {
        const auto xi = hn::Load(d, xt[g] + i * N);
        const auto l = hn::Max(lo, hn::Min(hi, NearestInt(d, hn::Mul(iscale, xi))));
        hn::Store(l, di, lt[g] + i * N);
        const auto lf = hn::ConvertTo(d, l);
        const auto w = hn::Mul(xi, xi);
        sumlx[g] = hn::Add(sumlx[g], hn::Mul(hn::Mul(w, xi), lf));
        suml2[g] = hn::Add(suml2[g], hn::Mul(hn::Mul(w, lf), lf));
      }
      active[g] = hn::Not(all_zero[g]);
    }
    for (int itry = 0; itry < 5 && !(hn::AllFalse(d, active[0]) && hn::AllFalse(d, active[1])); ++itry) {
      M changed[G] = {hn::FirstN(d, 0), hn::FirstN(d, 0)};  // no lane
      for (int i = 0; i < n; ++i) {
        for (int g = 0; g < G; ++g) {
          const auto xi = hn::Load(d, xt[g] + i * N);
          const auto w = hn::Mul(xi, xi);
          const auto li = hn::Load(di, lt[g] + i * N);
          const auto lf = hn::ConvertTo(d, li);
          auto slx = hn::Sub(sumlx[g], hn::Mul(hn::Mul(w, xi), lf));
          auto sl2 = hn::Sub(suml2[g], hn::Mul(hn::Mul(w, lf), lf));
          const auto slx_positive = hn::Gt(slx, zero);
          const auto new_l = hn::Max(lo, hn::Min(hi, NearestInt(d, hn::Div(hn::Mul(xi, sl2), slx))));
          const auto new_lf = hn::ConvertTo(d, new_l);
          const auto may_update = hn::And(hn::And(active[g], slx_positive), hn::RebindMask(d, hn::Ne(new_l, li)));
          // At most elements no lane's level moves, so a branch skips the rest there: the
          // gain test, a store and three selects. A lane it skips would not have changed.
          // The loop is bound by its instruction count, not its chains (four groups of
          // lanes instead of two were slower on AVX-512): Q3_K without a matrix 1.3x in
          // WASM, 1.15x on AVX-512, 1.25x on AVX2, 1.4x on SSE4 (docs/benchmarks.md).
          if (hn::AllFalse(d, may_update)) continue;
          slx = hn::Add(slx, hn::Mul(hn::Mul(w, xi), new_lf));
          sl2 = hn::Add(sl2, hn::Mul(hn::Mul(w, new_lf), new_lf));
          const auto gains = hn::And(hn::Gt(sl2, zero), hn::Gt(hn::Mul(hn::Mul(slx, slx), suml2[g]),
                                                                hn::Mul(hn::Mul(sumlx[g], sumlx[g]), sl2)));
          const auto update = hn::And(may_update, gains);
          if (hn::AllFalse(d, update)) continue;
          hn::Store(hn::IfThenElse(hn::RebindMask(di, update), new_l, li), di, lt[g] + i * N);
          sumlx[g] = hn::IfThenElse(update, slx, sumlx[g]);
          suml2[g] = hn::IfThenElse(update, sl2, suml2[g]);
          changed[g] = hn::Or(changed[g], update);
        }
      }
      for (int g = 0; g < G; ++g) active[g] = hn::And(active[g], changed[g]);
    }
    for (int g = 0; g < G; ++g) {
      hn::Store(hn::IfThenElseZero(hn::Gt(suml2[g], zero), hn::Div(sumlx[g], suml2[g])), d, out_scale);
      hn::Store(hn::VecFromMask(di, hn::RebindMask(di, all_zero[g])), di, out_zero);
      for (int k = 0; k < lanes[g]; ++k) {
        const int at = k0 + g * N + k;
        int8_t* Lk = L + at * n;
        const bool is_zero = out_zero[k] != 0;
        for (int i = 0; i < n; ++i) Lk[i] = is_zero ? 0 : static_cast<int8_t>(lt[g][i * N + k] + nmax);
        scales[at] = is_zero ? 0.f : out_scale[k];
      }
    }
  }
#endif
}

// Q3_K's per-value pass (q3_k_finish_simd in quantize_search.h). Each value's division
// and rounding are independent of the others (IEEE division, ggml's nearest_int bits),
// so lanes run along the sub-blocks; lane l of the loop below is element l of each run
// of 32, whose levels share hmask[l] (bit e / 32 for element e) and, per 128, qs's byte.
HWY_NOINLINE bool Q3KFinish(const float* HWY_RESTRICT x, const float* HWY_RESTRICT dsub,
                            const int8_t* HWY_RESTRICT L, uint8_t* HWY_RESTRICT hmask, uint8_t* HWY_RESTRICT qs) {
#if HWY_TARGET == HWY_SCALAR
  (void)x, (void)dsub, (void)L, (void)hmask, (void)qs;
  return false;
#else
  const DF d;
  const DI di;
  const hn::Rebind<int8_t, DI> d8;
  const int N = static_cast<int>(hn::Lanes(d));
  const auto lo = hn::Set(di, -4), hi = hn::Set(di, 3), four = hn::Set(di, 4), three = hn::Set(di, 3);
  for (int l = 0; l < 32; l += N) {
    auto hm = hn::Zero(di);
    for (int run = 0; run < 2; ++run) {
      auto q = hn::Zero(di);
      for (int k = 0; k < 4; ++k) {
        const int e = 128 * run + 32 * k + l;  // N <= 16 lanes: one sub-block
        const float ds = dsub[e / 16];
        const auto level = ds ? hn::Add(hn::Min(hi, hn::Max(lo, NearestInt(d, hn::Div(hn::LoadU(d, x + e), hn::Set(d, ds))))), four)
                              : hn::PromoteTo(di, hn::LoadU(d8, L + e));
        q = hn::Or(q, hn::ShiftLeftSame(hn::And(level, three), 2 * k));
        hm = hn::Or(hm, hn::ShiftLeftSame(hn::ShiftRight<2>(level), 4 * run + k));
      }
      StoreLowBytes(q, qs + 32 * run + l);
    }
    StoreLowBytes(hm, hmask + l);
  }
  return true;
#endif
}

// k_requantize_simd (quantize_search.h): each value's addition, division and rounding
// are independent of the others (IEEE arithmetic, ggml's nearest_int bits), so lanes run
// along a sub-block. Only on WASM (where the scalar loop cost Q2_K about 6 % of its
// time: a division, nearest_int's bits and two compare-moves per value under V8; Q2_K
// 4-8 % faster with this in two runs) and SSE4, so that the native tests run it; AVX2 and AVX-512 keep
// the scalar loop.
HWY_NOINLINE bool KRequantize(const float* HWY_RESTRICT x, int subs, int n, const float* HWY_RESTRICT d,
                              const float* HWY_RESTRICT dm, int nmax, uint8_t* HWY_RESTRICT L) {
#if HWY_TARGET == HWY_WASM || HWY_TARGET == HWY_SSE4
  if (n % 4 != 0) return false;
  const hn::Full128<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const auto izero = hn::Zero(di);
  const auto inmax = hn::Set(di, nmax);
  for (int j = 0; j < subs; ++j) {
    if (!d[j]) continue;
    const auto vd = hn::Set(df, d[j]);
    const auto vdm = hn::Set(df, dm[j]);
    for (int i = 0; i < n; i += 4) {
      const auto y = hn::Div(hn::Add(hn::LoadU(df, x + j * n + i), vdm), vd);
      StoreLowBytes<decltype(di)>(hn::Max(izero, hn::Min(inmax, NearestInt(df, y))), L + j * n + i);
    }
  }
  return true;
#else
  (void)x, (void)subs, (void)n, (void)d, (void)dm, (void)nmax, (void)L;
  return false;
#endif
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace ggml
}  // namespace amn
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kernels/cast.h"

namespace amn {
namespace ggml {

HWY_EXPORT(Qkx2SubBlocks);
HWY_EXPORT(QxSubBlocks);
HWY_EXPORT(Q3SubBlocks);
HWY_EXPORT(Q3KFinish);
HWY_EXPORT(KRequantize);

// With the reference forced (kernels/cast.h: AMN_FORCE_IMPL=scalar), each wrapper runs
// the scalar search block by block, as Highway's one-lane target does.
void make_qkx2_quants_blocks(int count, int n, int nmax, const float* x, const float* weights, uint8_t* L,
                             float* scales, float* the_mins, float rmin, float rdelta, int nstep, bool use_mad) {
  if (reference_impl_forced()) {
    return scalar_loops::qkx(count, n, nmax, x, weights, L, scales, the_mins, rmin, rdelta, nstep, use_mad, false);
  }
  HWY_DYNAMIC_DISPATCH(Qkx2SubBlocks)(count, n, nmax, x, weights, L, scales, the_mins, rmin, rdelta, nstep, use_mad,
                                      false);
}

void make_qkx3_quants_blocks(int count, int n, int nmax, const float* x, const float* weights, uint8_t* L,
                             float* scales, float* the_mins, float rmin, float rdelta, int nstep, bool use_mad) {
  if (reference_impl_forced()) {
    return scalar_loops::qkx(count, n, nmax, x, weights, L, scales, the_mins, rmin, rdelta, nstep, use_mad, true);
  }
  HWY_DYNAMIC_DISPATCH(Qkx2SubBlocks)(count, n, nmax, x, weights, L, scales, the_mins, rmin, rdelta, nstep, use_mad,
                                      true);
}

void make_qx_quants_blocks(int count, int n, int nmax, const float* x, const float* qw, int8_t* L, float* scales) {
  if (reference_impl_forced()) return scalar_loops::qx(count, n, nmax, x, qw, L, scales);
  HWY_DYNAMIC_DISPATCH(QxSubBlocks)(count, n, nmax, x, qw, L, scales);
}

void make_q3_quants_blocks(int count, int n, int nmax, const float* x, int8_t* L, float* scales) {
  if (reference_impl_forced()) return scalar_loops::q3(count, n, nmax, x, L, scales);
  HWY_DYNAMIC_DISPATCH(Q3SubBlocks)(count, n, nmax, x, L, scales);
}

bool q3_k_finish_simd(const float* x, const float* dsub, const int8_t* L, uint8_t* hmask, uint8_t* qs) {
  return HWY_DYNAMIC_DISPATCH(Q3KFinish)(x, dsub, L, hmask, qs);
}

bool k_requantize_simd(const float* x, int subs, int n, const float* d, const float* dm, int nmax, uint8_t* L) {
  return HWY_DYNAMIC_DISPATCH(KRequantize)(x, subs, n, d, dm, nmax, L);
}

}  // namespace ggml
}  // namespace amn
#endif
