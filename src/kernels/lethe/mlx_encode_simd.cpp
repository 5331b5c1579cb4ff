// MLX affine encoding in Highway (encode_simd.h) for 2, 3, 4, 5, 6 and 8 bits, compiled
// here once per Highway target (foreach_target.h re-includes this file); the same bytes as
// the reference (mlx_encode.cpp) on every target:
//  - ranges: lane-wise max / min written as MLX's std::max / std::min compare (a NaN never
//    replaces the running value), then across lanes. Only a zero's sign could depend on
//    the order, and it reaches neither scale nor bias (mlx_affine_params_of_range).
//  - codes: rint((w - bias) / scale) (ties to even), std::max(q, 0) and std::min(q,
//    n_bins) (NaN kept), NaN -> 0 (MlxCode: clamped, then rounded by an add), packed LSB first (4 bits: the
//    even element low, loaded apart from the odd one; 2, 3, 5 and 6 bits: the codes
//    stored as bytes, then every 8 of them packed into `bits` bytes in a u64 lane).
//  - --reuse-scales: the same codes with the stored scale and bias, then the reference's
//    correction: mx.dequantize's round(round(c * scale) + bias) in the scales' dtype
//    (RoundToBF16 / RoundToF16, unfused) for q, q - 1 and q + 1; q if it gives the value
//    exactly, else q - 1, else q + 1 if they do (within [0, n_bins]). Groups whose scale
//    and bias bound the rounding error in (w - bias) / scale below 0.5 for every value a
//    code dequantizes to skip the correction, which cannot change a code there
//    (ReuseCannotCorrect: with F32 scales, every group but degenerate ones); for other
//    finite scales and biases one neighbour is enough (MlxReuseCodeFinite: dequantization
//    is monotonic in the code).
// On x86-64 several targets are built and chosen at run time; on aarch64 and WASM the one
// static target is a direct call. Selection: kernels/cast.h (force_impl, AMN_FORCE_IMPL).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/lethe/mlx_encode_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include <cstring>
#include <limits>

#include "hwy/highway.h"
#include "kernels/lethe/encode-inl.h"
#include "kernels/lethe/encode_simd.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace lethe {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR
HWY_NOINLINE bool MlxRanges(const float*, uint64_t, uint64_t, uint32_t, float*, float*) { return false; }
HWY_NOINLINE void MlxCodes(const float*, uint64_t, uint64_t, uint32_t, const float*, const float*, uint8_t*) {}
HWY_NOINLINE bool MlxReuseCodes(const float*, uint64_t, uint64_t, uint32_t, DType, const float*, const float*, uint8_t*) {
  return false;
}
#else

HWY_NOINLINE bool MlxRanges(const float* HWY_RESTRICT values, uint64_t groups, uint64_t group, uint32_t bits,
                            float* HWY_RESTRICT w_min, float* HWY_RESTRICT w_max) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const bool known = bits == 2 || bits == 3 || bits == 4 || bits == 5 || bits == 6 || bits == 8;
  if (!known || group % (2 * N) != 0) return false;
  const auto inf = hn::Set(df, std::numeric_limits<float>::infinity());
  for (uint64_t g = 0; g < groups; ++g) {
    const float* w = values + g * group;
    auto hi = hn::Neg(inf), lo = inf;
    for (uint64_t j = 0; j < group; j += N) {
      const auto x = hn::LoadU(df, w + j);
#if HWY_TARGET == HWY_WASM
      // The same compares as pmax / pmin (one maxps / minps each under V8, where a select
      // is three instructions): pmax(a, b) = a < b ? b : a, pmin(a, b) = b < a ? b : a.
      hi = decltype(hi){wasm_f32x4_pmax(hi.raw, x.raw)};
      lo = decltype(lo){wasm_f32x4_pmin(lo.raw, x.raw)};
#else
      hi = hn::IfThenElse(hn::Lt(hi, x), x, hi);  // std::max(w_max, x)
      lo = hn::IfThenElse(hn::Lt(x, lo), x, lo);  // std::min(w_min, x)
#endif
    }
    w_max[g] = hn::GetLane(hn::MaxOfLanes(df, hi));
    w_min[g] = hn::GetLane(hn::MinOfLanes(df, lo));
  }
  return true;
}

// The code of each lane, in i32 lanes. std::max(rint(d), 0) then std::min(.., n_bins) is
// rint of d clamped the same way (0 and n_bins are integers, rint is monotonic; -0.0 and a
// d in (-0.5, 0) give code 0 either way; NaN passes both); the clamped d in [0, 255] is
// rounded by adding 2^23 (the sum's spacing is 1: to nearest, ties to even as rint, 2^23
// being even), and the sum's bits are 0x4B000000 + the code. No Round, no conversion.
template <class DF, class VF = hn::VFromD<DF>>
HWY_INLINE hn::VFromD<hn::RebindToSigned<DF>> MlxCode(DF df, VF w, VF scale, VF bias, VF n_bins) {
  const hn::RebindToSigned<DF> di;
  const auto d = hn::Div(hn::Sub(w, bias), scale);
#if HWY_TARGET == HWY_WASM
  // d < 0 ? 0 : d, then n_bins < c ? n_bins : c, as pmax / pmin (see MlxRanges).
  const VF c{wasm_f32x4_pmin(wasm_f32x4_pmax(d.raw, wasm_f32x4_splat(0.0f)), n_bins.raw)};
#else
  auto c = hn::IfThenElse(hn::Lt(d, hn::Zero(df)), hn::Zero(df), d);  // std::max(q, 0.0f)
  c = hn::IfThenElse(hn::Lt(n_bins, c), n_bins, c);                    // std::min(q, n_bins)
#endif
  const auto q = hn::Sub(hn::BitCast(di, hn::Add(c, hn::Set(df, 8388608.0f))), hn::Set(di, 0x4B000000));
  return hn::IfThenElseZero(hn::RebindMask(di, hn::Eq(d, d)), q);  // NaN -> 0
}

// One group's codes at 2, 3, 5 or 6 bits: a piece's codes as bytes, then each 8 of them
// (one u64 lane) packed LSB first into kBits bytes by three pairwise merges (bytes into
// u16, u16 into u32, u32 into u64), each lane's low kBits bytes stored. `c`: kPiece +
// HWY_MAX_BYTES aligned bytes (a vector may reach past a piece's codes; those lanes are
// dropped).
constexpr size_t kPiece = 256;  // codes at a time; group is a multiple of 32 (and of 2N)
template <uint32_t kBits, class DF, class Code>
HWY_INLINE void PackedCodes(DF df, const float* HWY_RESTRICT w, uint64_t group, uint8_t* HWY_RESTRICT c,
                            uint8_t* HWY_RESTRICT out, const Code& code) {
  const hn::Rebind<uint8_t, DF> d8;
  const hn::ScalableTag<uint64_t> d64;
  const hn::Repartition<uint8_t, decltype(d64)> d8full;
  const size_t N = hn::Lanes(df), L = hn::Lanes(d64);
  HWY_ALIGN uint64_t words[HWY_MAX_BYTES / 8];
  for (uint64_t j0 = 0; j0 < group; j0 += kPiece) {
    const size_t n = group - j0 < kPiece ? size_t(group - j0) : kPiece;
    for (size_t j = 0; j < n; j += N) hn::StoreU(hn::DemoteTo(d8, code(hn::LoadU(df, w + j0 + j))), d8, c + j);
    for (size_t k = 0; k < n; k += 8 * L) {
      auto x = hn::BitCast(d64, hn::Load(d8full, c + k));
      x = hn::Or(hn::And(x, hn::Set(d64, 0x00FF00FF00FF00FFull)),
                 hn::ShiftRight<8 - kBits>(hn::And(x, hn::Set(d64, 0xFF00FF00FF00FF00ull))));
      x = hn::Or(hn::And(x, hn::Set(d64, 0x0000FFFF0000FFFFull)),
                 hn::ShiftRight<16 - 2 * kBits>(hn::And(x, hn::Set(d64, 0xFFFF0000FFFF0000ull))));
      x = hn::Or(hn::And(x, hn::Set(d64, 0x00000000FFFFFFFFull)),
                 hn::ShiftRight<32 - 4 * kBits>(hn::And(x, hn::Set(d64, 0xFFFFFFFF00000000ull))));
      hn::Store(x, d64, words);
      const size_t lanes = (n - k) / 8 < L ? (n - k) / 8 : L;
      for (size_t l = 0; l < lanes; ++l, out += kBits) std::memcpy(out, &words[l], kBits);  // little-endian
    }
  }
}

// mx.dequantize's round(round(c * scale) + bias) in the scales' dtype, lane by lane.
enum class Round { kF32, kBF16, kF16 };
template <Round kRound, class DF, class VF = hn::VFromD<DF>>
HWY_INLINE VF RoundTo(DF df, VF v) {
  if constexpr (kRound == Round::kBF16) return RoundToBF16(df, v);
  if constexpr (kRound == Round::kF16) return RoundToF16(df, v);
  return v;
}

// --reuse-scales: MlxCode, then the reference's correction: a value that the code's
// neighbour (not the code itself) dequantizes to exactly takes that neighbour, q - 1 before
// q + 1. The NaN bits RoundTo gives never matter: a NaN equals nothing.
template <Round kRound, class DF, class VF = hn::VFromD<DF>>
HWY_INLINE hn::VFromD<hn::RebindToSigned<DF>> MlxReuseCode(DF df, VF w, VF scale, VF bias, VF n_bins) {
  const hn::RebindToSigned<DF> di;
  const auto q = MlxCode(df, w, scale, bias, n_bins);
  const auto qf = hn::ConvertTo(df, q);
  const auto one = hn::Set(df, 1.0f);
  const auto back = [&](VF c) { return RoundTo<kRound>(df, hn::Add(RoundTo<kRound>(df, hn::Mul(c, scale)), bias)); };
  const auto exact = hn::Eq(back(qf), w);
  const auto down = hn::And(hn::Lt(hn::Zero(df), qf), hn::Eq(back(hn::Sub(qf, one)), w));
  const auto up = hn::And(hn::Lt(qf, n_bins), hn::Eq(back(hn::Add(qf, one)), w));
#if HWY_TARGET == HWY_WASM
  // The same as integer arithmetic on the masks (-1 where true): WASM's selects are
  // v128.bitselect, three instructions on x86 each.
  const auto take_down = hn::AndNot(exact, down), take_up = hn::AndNot(hn::Or(exact, down), up);
  return hn::Sub(hn::Add(q, hn::VecFromMask(di, hn::RebindMask(di, take_down))),
                 hn::VecFromMask(di, hn::RebindMask(di, take_up)));
#else
  auto r = hn::IfThenElse(hn::RebindMask(di, up), hn::Add(q, hn::Set(di, 1)), q);
  r = hn::IfThenElse(hn::RebindMask(di, down), hn::Sub(q, hn::Set(di, 1)), r);
  return hn::IfThenElse(hn::RebindMask(di, exact), q, r);
#endif
}

// When the reference's --reuse-scales correction cannot change any code of a group with
// scale s and bias b (as F32; scales' dtype t): then every value w that some code c in
// [0, n_bins] dequantizes to (w = R(R(c * s) + b), R rounding to t after each F32 op) has
// d = (w - b) / s within 0.5 of c, so rint of the clamped d is c itself, and a neighbour
// of q = MlxCode(w) never dequantizes to w unless q does. The bound on |d - c|, from
// |R(fl(x)) - x| <= rho |x| + 2 eta per rounded op (rho = u + uR + u uR; u = 2^-24, uR the
// dtype's unit roundoff; eta the largest absolute error of a subnormal result):
//   |w - b - c s| <= E1 = rho (2A + rho A + |b|) + 6 eta, A = n_bins |s| >= |c s|;
//   |d - c| <= (1 + u) (E1 (1 + u) + u A + eta) / |s| + u n_bins + eta
//            <= (1 + u)^2 rho (2n + rho n + r) + 7.01 e + 2.01 u n + eta,
// with n = n_bins, r = |b| / |s| and e = eta / |s| <= eta / s_min. Required below 0.25
// (half the 0.5 the argument needs): r < K, K found once per call in double; per group
// |s| >= s_min, |b| <= k |s| in F32 (k below K by more than the product's rounding), and
// |s| < s_max, so that every value stays finite (2 (A + |b|) below the dtype's largest).
// With F32 scales this holds for any bias within about 2^22 scales (every group MLX's
// own quantize makes); with BF16 / F16 scales only for few bits.
struct ReuseCannotCorrect {
  float s_min = 0, s_max = 0, k = -1;  // k < 0: no group
  ReuseCannotCorrect(float n_bins, DType t) {
    const double n = n_bins, u = 0x1p-24;
    const double uR = t == DType::BF16 ? 0x1p-8 : t == DType::F16 ? 0x1p-11 : 0.0;
    const double eta = t == DType::F16 ? 0x1p-25 : t == DType::BF16 ? 0x1p-134 : 0x1p-150;
    const double min = t == DType::F16 ? 0x1p-15 : t == DType::BF16 ? 0x1p-120 : 0x1p-126;
    const double max = t == DType::F16 ? 65504.0 : 3.38e38;  // BF16's largest finite is 3.3895e38
    const double rho = u + uR + u * uR;
    const double room = 0.25 - 7.01 * (eta / min) - 2.01 * u * n - eta;
    const double K = room / ((1 + u) * (1 + u) * rho) - 2 * n - rho * n;
    if (!(K > 0)) return;
    s_min = static_cast<float>(min);
    s_max = static_cast<float>(max / (2 * (n + K)) * (1 - 0x1p-20));
    k = static_cast<float>(K * (1 - 0x1p-20));
  }
  bool operator()(float s, float b) const {
    const float as = s < 0 ? -s : s, ab = b < 0 ? -b : b;
    return as >= s_min && as < s_max && ab <= k * as;  // NaN fails every compare
  }
};

// MlxReuseCode for a finite scale and bias, with one neighbour tried instead of two:
// mx.dequantize's back(c) = R(R(c * scale) + bias) is then monotonic in c (each rounding
// is; no NaN can arise), non-decreasing for a positive scale, non-increasing for a
// negative one. So if w lies above back(q) only the code on the side where back grows can
// give w (q + 1 for a positive scale: back(q - 1) <= back(q) < w), below it only the
// other, and where back(q) is w (or w is NaN) no step is taken. The neighbour is clamped
// to [0, n_bins]; a clamped one is q, whose back(q) is not w. The reference's codes.
template <Round kRound, class DF, class VF = hn::VFromD<DF>>
HWY_INLINE hn::VFromD<hn::RebindToSigned<DF>> MlxReuseCodeFinite(DF df, VF w, VF scale, VF bias, VF n_bins) {
  const hn::RebindToSigned<DF> di;
  const auto q = MlxCode(df, w, scale, bias, n_bins);
  const auto qf = hn::ConvertTo(df, q);
  const auto back = [&](VF c) { return RoundTo<kRound>(df, hn::Add(RoundTo<kRound>(df, hn::Mul(c, scale)), bias)); };
  const auto p = back(qf);
  // +1 where w > back(q), -1 where w < back(q) (masks are -1), negated for a negative scale.
  const auto toward = hn::Sub(hn::VecFromMask(di, hn::RebindMask(di, hn::Lt(w, p))),
                              hn::VecFromMask(di, hn::RebindMask(di, hn::Lt(p, w))));
  const auto negative = hn::VecFromMask(di, hn::RebindMask(di, hn::Lt(scale, hn::Zero(df))));
  const auto step = hn::Sub(hn::Xor(toward, negative), negative);
  const auto c = hn::Add(qf, hn::ConvertTo(df, step));
#if HWY_TARGET == HWY_WASM
  const VF neighbour{wasm_f32x4_pmin(wasm_f32x4_pmax(c.raw, wasm_f32x4_splat(0.0f)), n_bins.raw)};  // see MlxRanges
#else
  const auto neighbour = hn::Min(hn::Max(c, hn::Zero(df)), n_bins);  // no NaN here
#endif
  const auto hit = hn::RebindMask(di, hn::Eq(back(neighbour), w));
  return hn::Add(q, hn::And(step, hn::VecFromMask(di, hit)));
}

// The codes of `groups` groups, code(df, w, scale, bias, n_bins) giving each lane's.
template <class Code>
HWY_INLINE void CodesWith(const float* HWY_RESTRICT values, uint64_t groups, uint64_t group, uint32_t bits,
                          const float* HWY_RESTRICT scale, const float* HWY_RESTRICT bias,
                          uint8_t* HWY_RESTRICT packed, const Code& code) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  const size_t N = hn::Lanes(df);
  const auto n_bins = hn::Set(df, static_cast<float>((1u << bits) - 1));
  HWY_ALIGN uint8_t c[kPiece + HWY_MAX_BYTES] = {};
  for (uint64_t g = 0; g < groups; ++g) {
    const float* w = values + g * group;
    const auto s = hn::Set(df, scale[g]), b = hn::Set(df, bias[g]);
    const auto one = [&](hn::VFromD<decltype(df)> x) { return code(df, x, s, b, n_bins); };
    if (bits == 8) {
      uint8_t* out = packed + g * group;
      // EachVector: on WASM four vectors to one 16-byte store.
      EachVector(df, w, group, out, [&](hn::VFromD<decltype(df)> x) { return hn::BitCast(du, one(x)); });
    } else if (bits != 4) {
      uint8_t* out = packed + g * group * bits / 8;
      if (bits == 2) PackedCodes<2>(df, w, group, c, out, one);
      else if (bits == 3) PackedCodes<3>(df, w, group, c, out, one);
      else if (bits == 5) PackedCodes<5>(df, w, group, c, out, one);
      else PackedCodes<6>(df, w, group, c, out, one);
    } else {
      uint8_t* out = packed + g * group / 2;
      uint64_t j = 0;
#if HWY_TARGET == HWY_WASM
      // 32 values to one 16-byte store: their codes (below 16) narrowed to bytes in order,
      // then each pair (even low) as a u16 lane x: x | x >> 4 holds lo | hi << 4 in its low
      // byte. No LoadInterleaved2 (two shuffles per 8 values) and one store, not four.
      for (; j + 8 * N <= group; j += 8 * N) {
        const auto bytes = [&](const float* p) {
          const auto a = one(hn::LoadU(df, p)).raw, b = one(hn::LoadU(df, p + N)).raw;
          const auto c = one(hn::LoadU(df, p + 2 * N)).raw, e = one(hn::LoadU(df, p + 3 * N)).raw;
          const v128_t x = wasm_u8x16_narrow_i16x8(wasm_i16x8_narrow_i32x4(a, b), wasm_i16x8_narrow_i32x4(c, e));
          return wasm_v128_and(wasm_v128_or(x, wasm_u16x8_shr(x, 4)), wasm_i16x8_splat(0xFF));
        };
        wasm_v128_store(out + j / 2, wasm_u8x16_narrow_i16x8(bytes(w + j), bytes(w + j + 4 * N)));
      }
#endif
      for (; j < group; j += 2 * N) {
        hn::VFromD<decltype(df)> even, odd;
        hn::LoadInterleaved2(df, w + j, even, odd);
        const auto pair = hn::Or(one(even), hn::ShiftLeft<4>(one(odd)));
        hn::StoreU(hn::DemoteTo(d8, pair), d8, out + j / 2);
      }
    }
  }
}

HWY_NOINLINE void MlxCodes(const float* HWY_RESTRICT values, uint64_t groups, uint64_t group, uint32_t bits,
                           const float* HWY_RESTRICT scale, const float* HWY_RESTRICT bias, uint8_t* HWY_RESTRICT packed) {
  CodesWith(values, groups, group, bits, scale, bias, packed,
            [](auto df, auto w, auto s, auto b, auto n_bins) { return MlxCode(df, w, s, b, n_bins); });
}

// Groups with a non-finite scale or bias: the reference's q - 1, then q + 1.
HWY_NOINLINE void AnyReuseCodes(const float* HWY_RESTRICT values, uint64_t groups, uint64_t group, uint32_t bits,
                                DType t, const float* HWY_RESTRICT scale, const float* HWY_RESTRICT bias,
                                uint8_t* HWY_RESTRICT packed) {
  if (t == DType::BF16)
    CodesWith(values, groups, group, bits, scale, bias, packed,
              [](auto df, auto w, auto s, auto b, auto n) { return MlxReuseCode<Round::kBF16>(df, w, s, b, n); });
  else if (t == DType::F16)
    CodesWith(values, groups, group, bits, scale, bias, packed,
              [](auto df, auto w, auto s, auto b, auto n) { return MlxReuseCode<Round::kF16>(df, w, s, b, n); });
  else
    CodesWith(values, groups, group, bits, scale, bias, packed,
              [](auto df, auto w, auto s, auto b, auto n) { return MlxReuseCode<Round::kF32>(df, w, s, b, n); });
}

HWY_NOINLINE bool MlxReuseCodes(const float* HWY_RESTRICT values, uint64_t groups, uint64_t group, uint32_t bits,
                                DType t, const float* HWY_RESTRICT scale, const float* HWY_RESTRICT bias,
                                uint8_t* HWY_RESTRICT packed) {
  const size_t N = hn::Lanes(hn::ScalableTag<float>());
  const bool known = bits == 2 || bits == 3 || bits == 4 || bits == 5 || bits == 6 || bits == 8;
  if (!known || group % (2 * N) != 0) return false;
  const float n_bins = static_cast<float>((1u << bits) - 1);
  // Runs of groups alike, by kind: 0 where the correction cannot apply (ReuseCannotCorrect:
  // MlxCode), 1 finite scale and bias (MlxReuseCodeFinite), 2 any other (MlxReuseCode, in
  // a function of its own).
  const ReuseCannotCorrect cannot_correct(n_bins, t);
  const auto kind_of = [&](uint64_t g) {
    if (cannot_correct(scale[g], bias[g])) return 0;
    const float inf = std::numeric_limits<float>::infinity();
    return scale[g] > -inf && scale[g] < inf && bias[g] > -inf && bias[g] < inf ? 1 : 2;
  };
  // The kinds of up to 64 groups first, then their runs (in WASM about 1.2x faster than
  // finding each group's kind as a run goes on).
  int kinds[64];
  for (uint64_t g0 = 0; g0 < groups; g0 += 64) {
    const uint64_t m = groups - g0 < 64 ? groups - g0 : 64;
    for (uint64_t i = 0; i < m; ++i) kinds[i] = kind_of(g0 + i);
    for (uint64_t i = 0; i < m;) {
      const int k = kinds[i];
      uint64_t e = i + 1;
      while (e < m && kinds[e] == k) ++e;
      const uint64_t g = g0 + i, n = e - i;
      const float *v = values + g * group, *s = scale + g, *b = bias + g;
      uint8_t* out = packed + g * group * bits / 8;  // group is a multiple of 8: whole bytes
      if (k == 0)
        CodesWith(v, n, group, bits, s, b, out,
                  [](auto df, auto w, auto s, auto b, auto n) { return MlxCode(df, w, s, b, n); });
      else if (k == 2)
        AnyReuseCodes(v, n, group, bits, t, s, b, out);
      else if (t == DType::BF16)
        CodesWith(v, n, group, bits, s, b, out, [](auto df, auto w, auto s, auto b, auto n) {
          return MlxReuseCodeFinite<Round::kBF16>(df, w, s, b, n);
        });
      else if (t == DType::F16)
        CodesWith(v, n, group, bits, s, b, out, [](auto df, auto w, auto s, auto b, auto n) {
          return MlxReuseCodeFinite<Round::kF16>(df, w, s, b, n);
        });
      else
        CodesWith(v, n, group, bits, s, b, out, [](auto df, auto w, auto s, auto b, auto n) {
          return MlxReuseCodeFinite<Round::kF32>(df, w, s, b, n);
        });
      i = e;
    }
  }
  return true;
}

#endif  // HWY_TARGET == HWY_SCALAR

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace lethe
}  // namespace amn
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace amn {
namespace lethe {

HWY_EXPORT(MlxRanges);
HWY_EXPORT(MlxCodes);
HWY_EXPORT(MlxReuseCodes);

namespace simd {

bool mlx_ranges(const float* values, uint64_t groups, uint64_t group, uint32_t bits, float* w_min, float* w_max) {
  return HWY_DYNAMIC_DISPATCH(MlxRanges)(values, groups, group, bits, w_min, w_max);
}

void mlx_codes(const float* values, uint64_t groups, uint64_t group, uint32_t bits, const float* scale,
               const float* bias, uint8_t* packed) {
  HWY_DYNAMIC_DISPATCH(MlxCodes)(values, groups, group, bits, scale, bias, packed);
}

bool mlx_reuse_codes(const float* values, uint64_t groups, uint64_t group, uint32_t bits, DType t, const float* scale,
                     const float* bias, uint8_t* packed) {
  return HWY_DYNAMIC_DISPATCH(MlxReuseCodes)(values, groups, group, bits, t, scale, bias, packed);
}

}  // namespace simd
}  // namespace lethe
}  // namespace amn
#endif  // HWY_ONCE
