// iq_best_neighbour (quantize_iq_simd.h): the IQ1 / IQ2 / IQ3 neighbour search, one
// candidate per lane. Each lane computes its candidate's d2 as ggml does
// (q from the level, diff = scale * q - xval[i], d2 += weight[i] * diff * diff, i in
// order; Mul and Add, never MulAdd), so every lane's value is the reference's; then the
// first smallest below FLT_MAX in candidate order is kept, as ggml's strict `<` from
// FLT_MAX keeps it (a NaN never wins).
// This loop is where ggml's IQ2/IQ3 encoders spend nearly all their time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/ggml/quantize_iq_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "kernels/ggml/quantize_iq_simd.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace ggml {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// kXg: q is xg[level] (IQ1's three values) rather than 2 level + 1.
template <int kGroup, int kBits, bool kXg>
HWY_INLINE int Best(const uint16_t* HWY_RESTRICT points, int n, const float* HWY_RESTRICT xval,
                    const float* HWY_RESTRICT weight, float scale, const float* HWY_RESTRICT xg) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint16_t, decltype(df)> du16;
  const int N = static_cast<int>(hn::Lanes(df));
  const auto mask = hn::Set(di, (1 << kBits) - 1);
  const auto one = hn::Set(di, 1);
  const auto vscale = hn::Set(df, scale);
  const auto xg0 = hn::Set(df, kXg ? xg[0] : 0.0f), xg1 = hn::Set(df, kXg ? xg[1] : 0.0f),
             xg2 = hn::Set(df, kXg ? xg[2] : 0.0f);
  hn::Vec<decltype(df)> x[kGroup], w[kGroup];
  for (int i = 0; i < kGroup; ++i) {
    x[i] = hn::Set(df, xval[i]);
    w[i] = hn::Set(df, weight[i]);
  }
  // Per lane the smallest d2 below FLT_MAX and the first candidate with it.
  auto best = hn::Set(df, 3.40282347e+38f);
  auto best_j = hn::Zero(di);
  auto j_vec = hn::Iota(di, 0);
  const auto step = hn::Set(di, N), count = hn::Set(di, n);
  for (int j = 0; j < n; j += N) {
    const auto u = hn::PromoteTo(di, hn::LoadU(du16, points + j));
    auto d2 = hn::Zero(df);
    for (int i = 0; i < kGroup; ++i) {
      const auto level = hn::And(hn::ShiftRightSame(u, kBits * i), mask);
      hn::Vec<decltype(df)> q;
      if constexpr (kXg) {
        q = hn::IfThenElse(hn::RebindMask(df, hn::Eq(level, hn::Zero(di))), xg0,
                           hn::IfThenElse(hn::RebindMask(df, hn::Eq(level, one)), xg1, xg2));
      } else {
        q = hn::ConvertTo(df, hn::Add(hn::Add(level, level), one));
      }
      const auto diff = hn::Sub(hn::Mul(vscale, q), x[i]);
      d2 = hn::Add(d2, hn::Mul(hn::Mul(w[i], diff), diff));
    }
    if (n <= N) {  // one vector: the reference's scan over the stored values is quicker
      HWY_ALIGN float d2s[hn::MaxLanes(df)];
      hn::Store(d2, df, d2s);
      float best_d2 = 3.40282347e+38f;
      int best_at = 0;
      for (int k = 0; k < n; ++k) {
        if (d2s[k] < best_d2) best_d2 = d2s[k], best_at = k;
      }
      return best_at;
    }
    const auto better = hn::And(hn::Lt(d2, best), hn::RebindMask(df, hn::Lt(j_vec, count)));
    best = hn::IfThenElse(better, d2, best);
    best_j = hn::IfThenElse(hn::RebindMask(di, better), j_vec, best_j);
    j_vec = hn::Add(j_vec, step);
  }
  // The first of the lanes' minima: the smallest candidate index among the lanes at the
  // overall minimum.
  const float m = hn::GetLane(hn::MinOfLanes(df, best));
  if (!(m < 3.40282347e+38f)) return 0;
  const auto at_min = hn::RebindMask(di, hn::Eq(best, hn::Set(df, m)));
  return hn::GetLane(hn::MinOfLanes(di, hn::IfThenElse(at_min, best_j, hn::Set(di, n))));
}

HWY_NOINLINE void IqBestNeighbours(int group, const float* HWY_RESTRICT xg, IqNeighbourSearch* HWY_RESTRICT searches,
                                   int count) {
  for (int k = 0; k < count; ++k) {
    IqNeighbourSearch& s = searches[k];
    if (xg) s.best = Best<8, 2, true>(s.points, s.n, s.xval, s.weight, s.scale, xg);
    else if (group == 8) s.best = Best<8, 2, false>(s.points, s.n, s.xval, s.weight, s.scale, xg);
    else s.best = Best<4, 3, false>(s.points, s.n, s.xval, s.weight, s.scale, xg);
  }
}

HWY_NOINLINE void IqTrialLevels(int trials, const float* HWY_RESTRICT id, int n, const float* HWY_RESTRICT xval,
                                int nlevels, int group, int32_t* HWY_RESTRICT levels, int32_t* HWY_RESTRICT points) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const int N = static_cast<int>(hn::Lanes(df));
  const int bits = group == 8 ? 2 : 3;
  const auto half = hn::Set(df, 0.5f), one = hn::Set(df, 1.0f), magic = hn::Set(df, 12582912.f);
  const auto top = hn::Set(di, nlevels - 1), zero = hn::Zero(di);
  for (int t0 = 0; t0 < trials; t0 += N) {
    const auto vid = hn::LoadU(df, id + t0);
    for (int k = 0; k < n / group; ++k) {
      auto u = zero;
      for (int e = 0; e < group; ++e) {
        const int i = group * k + e;
        const auto v = hn::Mul(half, hn::Sub(hn::Mul(vid, hn::Set(df, xval[i])), one));
        // ggml's nearest_int: the low mantissa bits of v + 1.5 * 2^23.
        auto l = hn::Sub(hn::And(hn::BitCast(di, hn::Add(v, magic)), hn::Set(di, 0x007fffff)), hn::Set(di, 0x00400000));
        l = hn::Min(hn::Max(l, zero), top);
        hn::StoreU(l, di, levels + i * kIqTrialStride + t0);
        u = hn::Or(u, hn::ShiftLeftSame(l, bits * e));
      }
      hn::StoreU(u, di, points + k * kIqTrialStride + t0);
    }
  }
}

HWY_NOINLINE void IqTrialSums(int trials, int n, const float* HWY_RESTRICT weight, const float* HWY_RESTRICT xval,
                              const int32_t* HWY_RESTRICT levels, float* HWY_RESTRICT sumqx,
                              float* HWY_RESTRICT sumq2) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const int N = static_cast<int>(hn::Lanes(df));
  const auto one = hn::Set(di, 1);
  for (int t0 = 0; t0 < trials; t0 += N) {
    auto qx = hn::Zero(df), q2 = hn::Zero(df);
    for (int i = 0; i < n; ++i) {
      const auto l = hn::LoadU(di, levels + i * kIqTrialStride + t0);
      const auto q = hn::ConvertTo(df, hn::Add(hn::Add(l, l), one));
      const auto w = hn::Set(df, weight[i]);
      qx = hn::Add(qx, hn::Mul(hn::Mul(w, hn::Set(df, xval[i])), q));
      q2 = hn::Add(q2, hn::Mul(hn::Mul(w, q), q));
    }
    hn::StoreU(qx, df, sumqx + t0);
    hn::StoreU(q2, df, sumq2 + t0);
  }
}

// The reference's running best over candidates computed in lanes (lanes in candidate
// order, each lane's candidates in order): its sequential `if (sumq2 > 0 && sumqx *
// sumqx > best * sumq2)` runs only at the next lane where one passes against the best so
// far (a lane before it fails in order too, the best being unchanged until there), found
// in vector lanes again after each such lane.
struct Running {
  float best;
  float scale = 0;
  int won = -1;  // the candidate id chosen last
};

template <class D>
HWY_INLINE hn::Mask<D> Passes(D d, const Running& r, hn::Vec<D> qx, hn::Vec<D> q2) {
  return hn::And(hn::Gt(q2, hn::Zero(d)), hn::Gt(hn::Mul(qx, qx), hn::Mul(hn::Set(d, r.best), q2)));
}

HWY_INLINE void Consider(Running& r, float sumqx, float sumq2, int id) {
  if (sumq2 > 0 && sumqx * sumqx > r.best * sumq2) {
    r.scale = sumqx / sumq2;
    r.best = r.scale * sumqx;
    r.won = id;
  }
}

// IQ1_S's split search over the prefix sums (encode_iq1_s): for each i1, the i2 = i1 ..
// 32 in lanes, both shifts. Candidate id (i1 * 33 + i2) * 2 + (shift -1).
HWY_NOINLINE int Iq1sBestSplit(const float* HWY_RESTRICT sumx, const float* HWY_RESTRICT sumw,
                               const float* HWY_RESTRICT xp, const float* HWY_RESTRICT xm, float* HWY_RESTRICT scale) {
  constexpr int n = 32;
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const int N = static_cast<int>(hn::Lanes(df));
  HWY_ALIGN float qxp[hn::MaxLanes(df)], q2p[hn::MaxLanes(df)], qxm[hn::MaxLanes(df)], q2m[hn::MaxLanes(df)];
  Running r{-3.40282347e+38f};
  const auto iota = hn::Iota(di, 0);
  const auto last = hn::Set(df, sumx[n]), lastw = hn::Set(df, sumw[n]);
  for (int i1 = 0; i1 <= n; ++i1) {
    const float ax = sumx[i1] - sumx[0], aw = sumw[i1] - sumw[0];
    const auto sx1 = hn::Set(df, sumx[i1]), sw1 = hn::Set(df, sumw[i1]);
    const auto axp = hn::Set(df, ax * xp[0]), axm = hn::Set(df, ax * xm[0]);
    const auto awp = hn::Set(df, aw * xp[0] * xp[0]), awm = hn::Set(df, aw * xm[0] * xm[0]);
    for (int i2 = i1; i2 <= n; i2 += N) {
      const auto sx2 = hn::LoadU(df, sumx + i2), sw2 = hn::LoadU(df, sumw + i2);
      const auto bx = hn::Sub(sx2, sx1), cx = hn::Sub(last, sx2);
      const auto bw = hn::Sub(sw2, sw1), cw = hn::Sub(lastw, sw2);
      const auto p1 = hn::Set(df, xp[1]), p2 = hn::Set(df, xp[2]), m1 = hn::Set(df, xm[1]), m2 = hn::Set(df, xm[2]);
      const auto qx_p = hn::Add(hn::Add(axp, hn::Mul(bx, p1)), hn::Mul(cx, p2));
      const auto q2_p = hn::Add(hn::Add(awp, hn::Mul(hn::Mul(bw, p1), p1)), hn::Mul(hn::Mul(cw, p2), p2));
      const auto qx_m = hn::Add(hn::Add(axm, hn::Mul(bx, m1)), hn::Mul(cx, m2));
      const auto q2_m = hn::Add(hn::Add(awm, hn::Mul(hn::Mul(bw, m1), m1)), hn::Mul(hn::Mul(cw, m2), m2));
      const int count = n + 1 - i2 < N ? n + 1 - i2 : N;
      const auto valid = hn::Lt(iota, hn::Set(di, count));
      bool stored = false;
      for (int from = 0;;) {
        const auto pass = hn::Or(Passes(df, r, qx_p, q2_p), Passes(df, r, qx_m, q2_m));
        const intptr_t l = hn::FindFirstTrue(df, hn::And(pass, hn::RebindMask(df, hn::And(valid, hn::Gt(iota, hn::Set(di, from - 1))))));
        if (l < 0) break;
        if (!stored) {
          hn::Store(qx_p, df, qxp), hn::Store(q2_p, df, q2p), hn::Store(qx_m, df, qxm), hn::Store(q2_m, df, q2m);
          stored = true;
        }
        Consider(r, qxp[l], q2p[l], ((i1 * (n + 1) + i2 + int(l)) * 2) + 1);
        Consider(r, qxm[l], q2m[l], ((i1 * (n + 1) + i2 + int(l)) * 2) + 0);
        from = int(l) + 1;
      }
    }
  }
  *scale = r.scale;
  return r.won;
}

// IQ1_M's split search (encode_iq1_m): the splits (i1, i2) in lanes, each summed from
// scratch in sorted order into four accumulators as ggml does. Candidate id
// (i1 * 17 + i2) * 4 + k.
HWY_NOINLINE int Iq1mBestSplit(const float* HWY_RESTRICT xb, const float* HWY_RESTRICT weight,
                               const int* HWY_RESTRICT idx, const float* HWY_RESTRICT xp,
                               const float* HWY_RESTRICT xm, float* HWY_RESTRICT scale) {
  constexpr int n = 16, kSplits = (n + 1) * (n + 2) / 2;
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const int N = static_cast<int>(hn::Lanes(df));
  int32_t split_i1[kSplits + 64], split_i2[kSplits + 64];
  int splits = 0;
  for (int i1 = 0; i1 <= n; ++i1) {
    for (int i2 = i1; i2 <= n; ++i2, ++splits) split_i1[splits] = i1, split_i2[splits] = i2;
  }
  for (int s = splits; s < kSplits + 64; ++s) split_i1[s] = split_i2[s] = n;
  HWY_ALIGN float qx_out[4][hn::MaxLanes(df)], q2_out[4][hn::MaxLanes(df)];
  Running r{-3.40282347e+38f};
  const auto iota = hn::Iota(di, 0);
  // xx_for(k, group): group 0 takes x_p for k < 2, group 1 for even k.
  const float* xx[2][4] = {{xp, xp, xm, xm}, {xp, xm, xp, xm}};
  for (int s0 = 0; s0 < splits; s0 += N) {
    const auto i1v = hn::LoadU(di, split_i1 + s0), i2v = hn::LoadU(di, split_i2 + s0);
    auto qx0 = hn::Zero(df), qx1 = qx0, qx2 = qx0, qx3 = qx0, q20 = qx0, q21 = qx0, q22 = qx0, q23 = qx0;
    for (int j = 0; j < n; ++j) {
      const int i = idx[j];
      const auto jv = hn::Set(di, j);
      const auto below1 = hn::RebindMask(df, hn::Lt(jv, i1v)), below2 = hn::RebindMask(df, hn::Lt(jv, i2v));
      const auto w = hn::Set(df, weight[i]), x = hn::Set(df, xb[i]);
      const int g = i < n / 2 ? 0 : 1;
      auto add = [&](const float* t, hn::Vec<decltype(df)>& qx, hn::Vec<decltype(df)>& q2) {
        const auto xv = hn::IfThenElse(below1, hn::Set(df, t[0]), hn::IfThenElse(below2, hn::Set(df, t[1]), hn::Set(df, t[2])));
        const auto wx = hn::Mul(w, xv);
        qx = hn::Add(qx, hn::Mul(wx, x));
        q2 = hn::Add(q2, hn::Mul(wx, xv));
      };
      add(xx[g][0], qx0, q20);
      add(xx[g][1], qx1, q21);
      add(xx[g][2], qx2, q22);
      add(xx[g][3], qx3, q23);
    }
    const int count = splits - s0 < N ? splits - s0 : N;
    const auto valid = hn::Lt(iota, hn::Set(di, count));
    bool stored = false;
    for (int from = 0;;) {
      const auto pass = hn::Or(hn::Or(Passes(df, r, qx0, q20), Passes(df, r, qx1, q21)),
                               hn::Or(Passes(df, r, qx2, q22), Passes(df, r, qx3, q23)));
      const intptr_t l = hn::FindFirstTrue(df, hn::And(pass, hn::RebindMask(df, hn::And(valid, hn::Gt(iota, hn::Set(di, from - 1))))));
      if (l < 0) break;
      if (!stored) {
        hn::Store(qx0, df, qx_out[0]), hn::Store(qx1, df, qx_out[1]), hn::Store(qx2, df, qx_out[2]);
        hn::Store(qx3, df, qx_out[3]), hn::Store(q20, df, q2_out[0]), hn::Store(q21, df, q2_out[1]);
        hn::Store(q22, df, q2_out[2]), hn::Store(q23, df, q2_out[3]);
        stored = true;
      }
      const int id = split_i1[s0 + l] * (n + 1) + split_i2[s0 + l];
      for (int k = 0; k < 4; ++k) Consider(r, qx_out[k][l], q2_out[k][l], id * 4 + k);
      from = int(l) + 1;
    }
  }
  *scale = r.scale;
  return r.won;
}

// The stable ascending order of n values (n a multiple of 4, at most 32): each value's
// place is the count of values below it plus that of equal values before it. False
// (nothing written) when a value is NaN, whose comparisons give no order.
HWY_NOINLINE bool IqSortOrder(const float* HWY_RESTRICT x, int n, int* HWY_RESTRICT idx) {
  const hn::CappedTag<float, 16> df;
  const hn::RebindToSigned<decltype(df)> di;
  const int N = static_cast<int>(hn::Lanes(df));
  for (int j = 0; j < n; j += N) {
    const auto v = hn::LoadU(df, x + j);
    if (!hn::AllTrue(df, hn::Eq(v, v))) return false;
  }
  const auto iota = hn::Iota(di, 0);
  for (int i = 0; i < n; ++i) {
    const auto xi = hn::Set(df, x[i]);
    const auto before = hn::Set(di, i);
    size_t place = 0;
    for (int j = 0; j < n; j += N) {
      const auto xj = hn::LoadU(df, x + j);
      const auto earlier = hn::RebindMask(df, hn::Lt(hn::Add(iota, hn::Set(di, j)), before));
      place += hn::CountTrue(df, hn::Or(hn::Lt(xj, xi), hn::And(hn::Eq(xj, xi), earlier)));
    }
    idx[place] = i;
  }
  return true;
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace ggml
}  // namespace amn
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace amn {
namespace ggml {

HWY_EXPORT(IqBestNeighbours);
HWY_EXPORT(IqTrialLevels);
HWY_EXPORT(Iq1sBestSplit);
HWY_EXPORT(IqSortOrder);

bool iq_sort_order(const float* x, int n, int* idx) { return HWY_DYNAMIC_DISPATCH(IqSortOrder)(x, n, idx); }

HWY_EXPORT(Iq1mBestSplit);

int iq1s_best_split(const float* sumx, const float* sumw, const float* xp, const float* xm, float* scale) {
  return HWY_DYNAMIC_DISPATCH(Iq1sBestSplit)(sumx, sumw, xp, xm, scale);
}

int iq1m_best_split(const float* xb, const float* weight, const int* idx, const float* xp, const float* xm,
                    float* scale) {
  return HWY_DYNAMIC_DISPATCH(Iq1mBestSplit)(xb, weight, idx, xp, xm, scale);
}

HWY_EXPORT(IqTrialSums);

void iq_trial_levels(int trials, const float* id, int n, const float* xval, int nlevels, int group, int32_t* levels,
                     int32_t* points) {
  HWY_DYNAMIC_DISPATCH(IqTrialLevels)(trials, id, n, xval, nlevels, group, levels, points);
}

void iq_trial_sums(int trials, int n, const float* weight, const float* xval, const int32_t* levels, float* sumqx,
                   float* sumq2) {
  HWY_DYNAMIC_DISPATCH(IqTrialSums)(trials, n, weight, xval, levels, sumqx, sumq2);
}

void iq_best_neighbours(int group, const float* xg, IqNeighbourSearch* searches, int count) {
  HWY_DYNAMIC_DISPATCH(IqBestNeighbours)(group, xg, searches, count);
}

int iq_best_neighbour(int group, const uint16_t* points, int n, const float* xval, const float* weight, float scale,
                      const float* xg) {
  IqNeighbourSearch s{points, xval, weight, scale, n, 0};
  iq_best_neighbours(group, xg, &s, 1);
  return s.best;
}

}  // namespace ggml
}  // namespace amn
#endif  // HWY_ONCE
