// bitsandbytes encoders in Highway (encode_simd.h), compiled here once per Highway target
// (foreach_target.h re-includes this file); the same bytes as the reference
// (bnb_encode.cpp) on every target:
//  - NF4 / FP4, full blocks: the block's absmax as AbsMaxBits (a block with a NaN takes the
//    reference's scan), x * (1 / max(absmax, 1e-38)) in f32 lanes, and the code as the
//    reference counts it: how many of the 15 sorted midpoints are not >= the value (NaN:
//    all 15). torch.clamp(-1, 1) is left out: every midpoint lies inside (-1, 1), so the
//    count of a clamped value is the count of the value. Even and odd elements are loaded
//    apart (LoadInterleaved2) so that each u32 lane packs its pair, high nibble first.
//  - LLM.int8(): the F16 round trip as kernels/cast.h rounds (cast-inl.h), the product with
//    the row's scale, Round (ties to even, as nearbyint in the default rounding mode), and
//    torch's float -> int8 (0 for NaN, +-Inf and |r| >= 2^31, else the low byte); a row
//    whose products are all below 2^22 in magnitude (every row whose scale is 127 / its
//    absmax) does the last three with one add of 1.5 * 2^23.
// On x86-64 several targets are built and chosen at run time; on aarch64 and WASM the one
// static target is a direct call. Selection: kernels/cast.h (force_impl, AMN_FORCE_IMPL).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/lethe/bnb_encode_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include <cmath>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/byte_lookup-inl.h"  // LookupBytes16: the swizzle on WASM
#include "kernels/lethe/encode-inl.h"
#include "kernels/lethe/encode_simd.h"
#include "kernels/lethe/torch_ops.h"  // absmax_scan

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace lethe {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR
HWY_NOINLINE uint64_t Bnb4FullBlocks(const float*, const uint8_t*, const float*, uint64_t, uint64_t, const float*,
                                     float*, uint8_t*, bool) {
  return 0;
}
HWY_NOINLINE bool BnbInt8Row(const float*, uint64_t, float, const float*, int8_t*) { return false; }
#else

// How many of the 15 midpoints are not >= v, in i32 lanes. The midpoints are sorted and
// "not >= v" holds for a prefix of them (all of them for NaN), so the count is the lower
// bound a binary search finds. Vectors of 8 lanes or more search: at step k the 2^k
// midpoints the lanes may compare with fit one vector, looked up by the bits found so far
// (4 compares and 3 lookups). With 16 lanes the search's tables hold each midpoint at the
// lane of the bits found so far. 4-lane vectors (SSE4, NEON, WASM) take two steps of four:
// b3, b7, b11 give the group c of four codes (3 compares), then the group's own three
// midpoints b[4c], b[4c + 1], b[4c + 2], byte-swizzled from three 16-byte tables (3 lookups,
// 3 compares): 6 compares where a count takes 15 (FP4: 7 integer compares, by symmetry).
constexpr bool kDirect = HWY_MAX_BYTES / sizeof(float) >= 16 && HWY_TARGET == HWY_AVX3;

template <class DF>
struct Midpoints {
  using VF = hn::VFromD<DF>;
  VF all[15];      // each midpoint in every lane (the count)
  VF step[4];      // the search: {b7}, {b3, b11}, {b1, b5, b9, b13}, {b0, b2, ..., b14}
  // FP4's midpoints are symmetric (b[14 - k] = -b[k], b7 = 0): the count then needs only
  // the 7 positive ones, as bits (CountBelow).
  bool symmetric = true;
  hn::VFromD<hn::RebindToSigned<DF>> positive[7];
  // 4 lanes: fine[j] holds byte p of b[4c + j] at byte 4p + c (a swizzle of index 4p + c
  // in byte p of every lane gives each lane its group's midpoint j); base holds 4p + 3 in
  // byte p of every lane (group 3, before the coarse masks are added).
  using VU8 = hn::VFromD<hn::Repartition<uint8_t, DF>>;
  VU8 fine[3], base;
  Midpoints(DF df, const float* bounds) {
    for (int k = 0; k < 15; ++k) all[k] = hn::Set(df, bounds[k]);
    symmetric = bounds[7] == 0.0f;
    for (int j = 0; j < 7; ++j) {
      uint32_t p, n;
      std::memcpy(&p, &bounds[8 + j], 4);
      std::memcpy(&n, &bounds[6 - j], 4);
      symmetric = symmetric && bounds[8 + j] > 0.0f && p < 0x7F800000u && n == (p | 0x80000000u);
      positive[j] = hn::Set(hn::RebindToSigned<DF>(), static_cast<int32_t>(p));
    }
    if constexpr (HWY_MAX_BYTES < 32) {
      const hn::Repartition<uint8_t, DF> d8;
      HWY_ALIGN uint8_t t[16];
      for (int j = 0; j < 3; ++j) {
        for (int c = 0; c < 4; ++c) {
          uint8_t bytes[4];
          std::memcpy(bytes, &bounds[4 * c + j], 4);
          for (int p = 0; p < 4; ++p) t[4 * p + c] = bytes[p];
        }
        fine[j] = hn::LoadDup128(d8, t);
      }
      for (int k = 0; k < 16; ++k) t[k] = static_cast<uint8_t>(4 * (k % 4) + 3);
      base = hn::LoadDup128(d8, t);
      return;
    }
    HWY_ALIGN float t[HWY_MAX_BYTES / sizeof(float)] = {};
    for (int level = 0; level < 4; ++level) {
      const int stride = 16 >> level;  // midpoints stride / 2 - 1 + j * stride
      // 16 lanes: midpoint j at lane j * stride, looked up by i itself (no shift).
      const int at = kDirect ? stride : 1;
      for (int j = 0; j < (1 << level); ++j) t[j * at] = bounds[stride / 2 - 1 + j * stride];
      step[level] = hn::Load(df, t);
    }
    step[0] = all[7];  // compared in every lane, not looked up
  }
};

template <class DF, class VF = hn::VFromD<DF>>
HWY_INLINE hn::VFromD<hn::RebindToSigned<DF>> CountBelow(DF df, const Midpoints<DF>& b, VF v) {
  const hn::RebindToSigned<DF> di;
  if constexpr (HWY_MAX_BYTES >= 32) {
    // i: the bits found so far; lane i >> (4 - level) of step[level] is the next midpoint.
    auto i = hn::IfThenElseZero(hn::RebindMask(di, hn::Not(hn::Ge(b.step[0], v))), hn::Set(di, 8));
    auto t = hn::TableLookupLanes(b.step[1], hn::IndicesFromVec(df, kDirect ? i : hn::ShiftRight<3>(i)));
    i = hn::Add(i, hn::IfThenElseZero(hn::RebindMask(di, hn::Not(hn::Ge(t, v))), hn::Set(di, 4)));
    t = hn::TableLookupLanes(b.step[2], hn::IndicesFromVec(df, kDirect ? i : hn::ShiftRight<2>(i)));
    i = hn::Add(i, hn::IfThenElseZero(hn::RebindMask(di, hn::Not(hn::Ge(t, v))), hn::Set(di, 2)));
    t = hn::TableLookupLanes(b.step[3], hn::IndicesFromVec(df, kDirect ? i : hn::ShiftRight<1>(i)));
    return hn::Add(i, hn::IfThenElseZero(hn::RebindMask(di, hn::Not(hn::Ge(t, v))), hn::Set(di, 1)));
  } else if (b.symmetric) {
    // With p_j = b[8 + j] > 0 and b[k] = -p_(6-k), "not b >= v" counts: for v > 0 (and
    // NaN) b0..b7 and the p_j < v: 8 + c; for v <= 0 the -p_j < v, i.e. 7 minus the
    // p_j <= |v|. Both c as one integer compare of |v|'s bits (plus 1 for v <= 0: p <= a
    // is p < a's successor; -Inf's successor is above every p) with each p's bits.
    const auto le0 = hn::BitCast(di, hn::VecFromMask(df, hn::Le(v, hn::Zero(df))));  // -1 where v <= 0
    const auto key = hn::Sub(hn::And(hn::BitCast(di, v), hn::Set(di, 0x7FFFFFFF)), le0);
    auto s = hn::Zero(di);  // -c
    for (int j = 0; j < 7; ++j) s = hn::Add(s, hn::VecFromMask(di, hn::Gt(key, b.positive[j])));
    // le0 ? 7 + s : 8 - s
    return hn::Sub(hn::Add(hn::Set(di, 8), hn::Add(le0, le0)), hn::Xor(s, le0));
  } else {
    // In u8 lanes, so that the index and the count keep one value in every byte of a lane
    // (a u32 lane's masks are all ones in each byte: adding one subtracts 1 from each byte).
    // s = -(how many of b3, b7, b11 are >= v): the group is c = 3 + s (NaN: 3). The code is
    // 4c + 3 - (how many of the group's midpoints are >= v) = 15 + 4s + the fine masks,
    // left in every byte of the lane (Bnb4FullBlocks keeps the low one).
    const hn::Repartition<uint8_t, DF> d8;
    const auto ge = [&](VF m) { return hn::BitCast(d8, hn::VecFromMask(df, hn::Ge(m, v))); };
    const auto s = hn::Add(hn::Add(ge(b.all[3]), ge(b.all[7])), ge(b.all[11]));
    const auto idx = hn::Add(b.base, s);
    const auto lookup = [&](int j) {
      return hn::BitCast(df, ::amn::HWY_NAMESPACE::LookupBytes16(b.fine[j], idx));
    };
    const auto s2 = hn::Add(s, s);
    auto code = hn::Add(hn::Add(s2, s2), hn::Set(d8, 15));
    for (int j = 0; j < 3; ++j) code = hn::Add(code, ge(lookup(j)));
    return hn::BitCast(di, code);
  }
}

HWY_NOINLINE uint64_t Bnb4FullBlocks(const float* HWY_RESTRICT bounds, const uint8_t* HWY_RESTRICT order,
                                     const float* HWY_RESTRICT in, uint64_t blocks, uint64_t blocksize,
                                     const float* HWY_RESTRICT absmax_in, float* HWY_RESTRICT absmax_out,
                                     uint8_t* HWY_RESTRICT packed, bool fp4_signed_zero) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  const size_t N = hn::Lanes(df);
  if (blocksize % (2 * N) != 0) return 0;
  const Midpoints<hn::ScalableTag<float>> vb(df, bounds);
  bool identity = true;
  for (int k = 0; k < 16; ++k) identity = identity && order[k] == k;
  // order[count] by a byte shuffle of each lane's low byte (per 128-bit block); the other
  // bytes are cleared.
  const hn::Repartition<uint8_t, decltype(di)> dbytes;
  const auto table = hn::LoadDup128(dbytes, order);
  const auto low = hn::Set(di, 0xFF);
  const auto map = [&](hn::VFromD<decltype(di)> count) {
    if (identity) return count;
    return hn::And(hn::BitCast(di, ::amn::HWY_NAMESPACE::LookupBytes16(table, hn::BitCast(dbytes, count))), low);
  };
  const auto neg_zero = hn::Set(du, 0x80000000u);
#if HWY_MAX_BYTES == 16
  HWY_ALIGN static constexpr uint8_t kLowBytes[16] = {0, 4, 8, 12, 0, 4, 8, 12, 0, 4, 8, 12, 0, 4, 8, 12};
  const auto low_bytes = hn::Load(dbytes, kLowBytes);
#endif
  for (uint64_t b = 0; b < blocks; ++b) {
    const float* x = in + b * blocksize;
    float am;
    if (absmax_in) {
      am = absmax_in[b];
    } else {
      const uint32_t bits = AbsMaxBits(x, blocksize);
      if (bits > 0x7F800000u) {
        am = absmax_scan(x, blocksize);  // the first NaN, as torch's max returns it
      } else {
        std::memcpy(&am, &bits, 4);
      }
      absmax_out[b] = am;
    }
    // 1.0 / absmax.clamp(min=1e-38) (a NaN stays NaN; torch_ops.h)
    const float inv = 1.0f / bnb_absmax_divisor(am);
    const auto vinv = hn::Set(df, inv);
    uint8_t* out = packed + b * blocksize / 2;
    for (uint64_t i = 0; i < blocksize; i += 2 * N) {
      hn::VFromD<decltype(df)> even, odd;
      hn::LoadInterleaved2(df, x + i, even, odd);
      auto ce = CountBelow(df, vb, hn::Mul(even, vinv));
      auto co = CountBelow(df, vb, hn::Mul(odd, vinv));
      if (fp4_signed_zero) {  // -0.0 takes code 8, which is order[8]
        ce = hn::IfThenElse(hn::RebindMask(di, hn::Eq(hn::BitCast(du, even), neg_zero)), hn::Set(di, 8), ce);
        co = hn::IfThenElse(hn::RebindMask(di, hn::Eq(hn::BitCast(du, odd), neg_zero)), hn::Set(di, 8), co);
      }
      const auto pair = hn::Or(hn::ShiftLeft<4>(map(ce)), map(co));
#if HWY_MAX_BYTES == 16
      // Each lane's low byte (CountBelow may leave the code in every byte of a lane; the
      // codes are below 16, so the shift carries nothing into the next byte).
      const auto packed4 = ::amn::HWY_NAMESPACE::LookupBytes16(hn::BitCast(dbytes, pair), low_bytes);
      hn::StoreU(hn::LowerHalf(hn::LowerHalf(packed4)), d8, out + i / 2);
#else
      hn::StoreU(hn::DemoteTo(d8, pair), d8, out + i / 2);
#endif
    }
  }
  return blocks;
}

HWY_NOINLINE bool BnbInt8Row(const float* HWY_RESTRICT row, uint64_t cols, float scale, const float* known_amax,
                             int8_t* HWY_RESTRICT out) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::RebindToUnsigned<decltype(df)> du;
  const auto vscale = hn::Set(df, scale);
  const auto limit = hn::Set(df, 2147483648.0f);
  // A row whose products m are all below 2^22 in magnitude (every row whose scale is 127 /
  // its absmax): m + 1.5 * 2^23 lies in [2^23, 2^24], whose spacing is 1, so the sum is m
  // rounded to an integer, ties to even (1.5 * 2^23 is even), and its bits are 0x4B400000
  // + nearbyint(m): the low byte is the int8. One add for Round, the range check and the
  // conversion (a long sequence on WASM). The bound from the row's amax: rounding to F16
  // and the product are monotonic, so |m| <= f16(amax) * |scale| (a NaN or Inf amax, or a
  // NaN scale, takes the general path). That bound also makes f16(amax) finite: no lane is
  // NaN or rounds past F16's largest value (RoundToF16<true>). The amax is the caller's
  // when it has one (the row's SCB was computed from it): a second pass over the row cost
  // a fifth of the kernel's time in WASM.
  uint32_t amax_bits;
  float amax;
  if (known_amax) {
    amax = std::fabs(*known_amax);
    std::memcpy(&amax_bits, &amax, 4);
  } else {
    amax_bits = AbsMaxBits(row, static_cast<size_t>(cols));
    std::memcpy(&amax, &amax_bits, 4);
  }
  const float bound = hn::GetLane(RoundToF16(df, hn::Set(df, amax))) * std::fabs(scale);
  if (amax_bits < 0x7F800000u && bound < 4194304.0f) {
    const auto magic = hn::Set(df, 12582912.0f);
    // A row whose |scale| is below 2^13 (its SCB above 127 / 8192: most rows): a value
    // that F16 holds only as a subnormal, below 2^-14, gives a product below 0.5 in
    // magnitude, so code 0, rounded either way (to F16's subnormal, or to 10 mantissa bits
    // at its own exponent: still at most 2^-14), so the subnormal path is left out.
    if (std::fabs(scale) < 8192.0f) {
      EachVector(df, row, cols, reinterpret_cast<uint8_t*>(out), [&](hn::VFromD<decltype(df)> x) {
        return hn::BitCast(du, hn::Add(hn::Mul(RoundToF16<true, true>(df, x), vscale), magic));
      });
      return true;
    }
    EachVector(df, row, cols, reinterpret_cast<uint8_t*>(out), [&](hn::VFromD<decltype(df)> x) {
      return hn::BitCast(du, hn::Add(hn::Mul(RoundToF16<true>(df, x), vscale), magic));
    });
    return true;
  }
  EachVector(df, row, cols, reinterpret_cast<uint8_t*>(out), [&](hn::VFromD<decltype(df)> x) {
    const auto r = hn::Round(hn::Mul(RoundToF16(df, x), vscale));
    // |r| < 2^31 is false for NaN; those lanes (and Inf, and the out of range) give 0.
    const auto in_range = hn::RebindMask(di, hn::Lt(hn::Abs(r), limit));
    return hn::BitCast(du, hn::IfThenElseZero(in_range, hn::ConvertTo(di, r)));
  });
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

HWY_EXPORT(Bnb4FullBlocks);
HWY_EXPORT(BnbInt8Row);

namespace simd {

uint64_t bnb4_full_blocks(const float* bounds, const uint8_t* order, const float* in, uint64_t blocks,
                          uint64_t blocksize, const float* absmax_in, float* absmax_out, uint8_t* packed,
                          bool fp4_signed_zero) {
  return HWY_DYNAMIC_DISPATCH(Bnb4FullBlocks)(bounds, order, in, blocks, blocksize, absmax_in, absmax_out, packed,
                                              fp4_signed_zero);
}

bool bnb_int8_row(const float* row, uint64_t cols, float scale, const float* amax, int8_t* out) {
  return HWY_DYNAMIC_DISPATCH(BnbInt8Row)(row, cols, scale, amax, out);
}

}  // namespace simd
}  // namespace lethe
}  // namespace amn
#endif  // HWY_ONCE
