// Highway helpers shared by the quantized-safetensors kernels (fp8-inl.h, bnb-inl.h,
// fp4-inl.h), compiled per target by the *_simd.cpp files that include them:
//  - F32 results to BF16 / F16 / F32 bytes with PyTorch's casts: cast-inl.h's own bit
//    manipulation, so every kernel rounds exactly as kernels/cast.h and the references do.
//  - Runs of full vectors with one zero-padded vector for the remainder (no scalar tail to
//    keep in step with the reference: the padded vector computes the same lanes).
//  - 16-entry tables looked up per nibble. A 4-bit code with one scale per group can only
//    give 16 outputs per group, so each group computes its table of 16 output values
//    (the reference's f32 product and rounding, in vectors), split into byte planes, and
//    every code is then one byte shuffle per plane (on WASM the swizzle instruction).
// Everything here is HWY_INLINE: several translation units include it per target.

// Per-target include guard (toggled by foreach_target.h).
#if defined(AMN_KERNELS_QUANT_QUANT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef AMN_KERNELS_QUANT_QUANT_INL_H_
#undef AMN_KERNELS_QUANT_QUANT_INL_H_
#else
#define AMN_KERNELS_QUANT_QUANT_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "hwy/highway.h"

#include "kernels/byte_lookup-inl.h"
#include "kernels/cast-inl.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace quant {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace cast = ::amn::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR

constexpr size_t OutBytes(DType to) { return to == DType::F32 ? 4 : 2; }

// F32 bits to the target's bits (16-bit targets in the low half of each u32 lane).
// kMayBeNaN false (here and below): the caller knows no lane is NaN (cast-inl.h).
template <DType kTo, bool kMayBeNaN = true, class DU, class V = hn::VFromD<DU>>
HWY_INLINE V F32BitsTo(DU du, V bits) {
  if constexpr (kTo == DType::BF16) return cast::F32ToBF16Bits<kMayBeNaN>(du, bits, 0xFFFFu);
  else if constexpr (kTo == DType::F16) return cast::F32ToF16Bits<kMayBeNaN>(du, bits);
  else return bits;
}

// store_rounded (packed.h) in vectors: F32 bits rounded to kCanonical (F16 / BF16 round to
// nearest even; F32: as is), then cast to kTo with PyTorch's casts (cast.h), as the
// cast kernels do it.
template <DType kCanonical, DType kTo, bool kMayBeNaN = true, class DU, class V = hn::VFromD<DU>>
HWY_INLINE V RoundedTo(DU du, V bits) {
  if constexpr (kCanonical == DType::F32 || kCanonical == kTo) {
    return F32BitsTo<kTo, kMayBeNaN>(du, bits);
  } else if constexpr (kCanonical == DType::BF16) {
    const V b = cast::F32ToBF16Bits<kMayBeNaN>(du, bits, 0xFFFFu);
    if constexpr (kTo == DType::F16) return cast::F32ToF16Bits<kMayBeNaN>(du, hn::ShiftLeft<16>(b));
    else return hn::ShiftLeft<16>(b);
  } else {
    const V h = cast::F32ToF16Bits<kMayBeNaN>(du, bits);
    if constexpr (kTo == DType::BF16) {
      return cast::F32ToBF16Bits<kMayBeNaN>(du, cast::F16ToF32Bits(du, h), 0x7FC0u);
    } else {
      return cast::F16ToF32Bits(du, h);
    }
  }
}

// F32 bits rounded to kCanonical and back to F32 bits (the result of one array op in
// that dtype).
template <DType kCanonical, bool kMayBeNaN = true, class DU, class V = hn::VFromD<DU>>
HWY_INLINE V RoundTrip(DU du, V bits) {
  return RoundedTo<kCanonical, DType::F32, kMayBeNaN>(du, bits);
}

// Highway 1.0.3's WASM partial loads and stores (4 or 8 bytes of a 16-byte vector) copy
// through the stack; one scalar move to or from lane 0 is what LLVM turns into
// v128.load32_zero / i64x2.extract_lane (WASM FP8 ran at half its SSE4 speed without).

// Lanes(du) bytes at p, one per u32 lane.
template <class DU>
HWY_INLINE hn::VFromD<DU> LoadBytesToU32(DU du, const uint8_t* HWY_RESTRICT p) {
#if HWY_TARGET == HWY_WASM
  static_assert(hn::MaxLanes(DU()) == 4, "WASM vectors are 128-bit");
  uint32_t bytes;
  std::memcpy(&bytes, p, 4);
  return hn::PromoteTo(du, hn::VFromD<hn::Rebind<uint8_t, DU>>{wasm_i32x4_make(static_cast<int32_t>(bytes), 0, 0, 0)});
#else
  return hn::PromoteTo(du, hn::LoadU(hn::Rebind<uint8_t, DU>(), p));
#endif
}

// Stores the target's bits (as F32BitsTo leaves them) of Lanes(du) elements.
template <DType kTo, class DU, class V = hn::VFromD<DU>>
HWY_INLINE void StoreOut(DU du, V bits, uint8_t* HWY_RESTRICT out) {
  if constexpr (kTo == DType::F32) {
    cast::StoreBytes(du, bits, out);
  } else {
    const hn::Rebind<uint16_t, DU> du16;
    const hn::RebindToSigned<DU> di32;
    const auto narrow = hn::DemoteTo(du16, hn::BitCast(di32, bits));  // bits <= 0xFFFF
#if HWY_TARGET == HWY_WASM
    const int64_t lane0 = wasm_i64x2_extract_lane(narrow.raw, 0);
    std::memcpy(out, &lane0, 8);
#else
    cast::StoreBytes(du16, narrow, out);
#endif
  }
}

// Elements [0, n) of a run: `vector(in, out)` reads Lanes(du) elements of kInBytes each
// and writes Lanes(du) outputs of kOutBytes each; the last partial vector reads a
// zero-padded copy and only its first lanes are kept.
template <size_t kInBytes, size_t kOutBytes, class DU, class Fn>
HWY_INLINE void Run(DU du, const uint8_t* HWY_RESTRICT in, size_t n, uint8_t* HWY_RESTRICT out, const Fn& vector) {
  const size_t lanes = hn::Lanes(du);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) vector(in + i * kInBytes, out + i * kOutBytes);
  if (i == n) return;
  alignas(64) uint8_t padded_in[HWY_MAX_BYTES / 4 * kInBytes] = {};
  alignas(64) uint8_t padded_out[HWY_MAX_BYTES / 4 * kOutBytes];
  std::memcpy(padded_in, in + i * kInBytes, (n - i) * kInBytes);
  vector(padded_in, padded_out);
  std::memcpy(out + i * kOutBytes, padded_out, (n - i) * kOutBytes);
}

// ---- 16-entry tables per nibble (128-bit vectors on every target) ----

using D8 = hn::Full128<uint8_t>;
using D16 = hn::Full128<uint16_t>;
using D32 = hn::Full128<uint32_t>;
using D64 = hn::Full128<uint64_t>;
using DF4 = hn::Full128<float>;
using V8 = hn::VFromD<D8>;
using V32 = hn::VFromD<D32>;
using VF4 = hn::VFromD<DF4>;

// table[idx] for 16 indices below 16 (byte_lookup-inl.h: the swizzle instruction on WASM).
HWY_INLINE V8 Lookup16(V8 table, V8 idx) { return amn::HWY_NAMESPACE::LookupBytes16(table, idx); }

// The 16 output values of one group: `entries[k]` holds codes 4k .. 4k + 3 as the
// target's bits in u32 lanes; plane[b] holds byte b of every code's value.
template <size_t kBytes>
struct Table16 {
  V32 entries[4];
  V8 plane[kBytes];
};

template <size_t kBytes>
HWY_INLINE Table16<kBytes> MakeTable(V32 e0, V32 e1, V32 e2, V32 e3) {
  const D8 d8;
  const D32 d32;
  const D64 d64;
  Table16<kBytes> t{{e0, e1, e2, e3}, {}};
  // Gather each vector's bytes by position (u32 lane b: byte b of its 4 codes), then a
  // 4x4 transpose of u32 lanes puts byte b of all 16 codes in one vector.
  alignas(16) static constexpr uint8_t kByPosition[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
  const V8 idx = hn::Load(d8, kByPosition);
  V32 g[4];
  for (int k = 0; k < 4; ++k) g[k] = hn::BitCast(d32, Lookup16(hn::BitCast(d8, t.entries[k]), idx));
  const auto ab = hn::BitCast(d64, hn::InterleaveLower(d32, g[0], g[1]));
  const auto ce = hn::BitCast(d64, hn::InterleaveLower(d32, g[2], g[3]));
  t.plane[0] = hn::BitCast(d8, hn::InterleaveLower(d64, ab, ce));
  t.plane[1] = hn::BitCast(d8, hn::InterleaveUpper(d64, ab, ce));
  if constexpr (kBytes == 4) {
    const auto ab_hi = hn::BitCast(d64, hn::InterleaveUpper(d32, g[0], g[1]));
    const auto ce_hi = hn::BitCast(d64, hn::InterleaveUpper(d32, g[2], g[3]));
    t.plane[2] = hn::BitCast(d8, hn::InterleaveLower(d64, ab_hi, ce_hi));
    t.plane[3] = hn::BitCast(d8, hn::InterleaveUpper(d64, ab_hi, ce_hi));
  }
  return t;
}

// The table of lut[c] * scale for the 16 codes (lut: 16 aligned floats), with the
// reference's operand order (value first, then the factor); finish(k, bits) turns the
// f32 products of codes 4k .. 4k + 3 into the target's bits.
template <size_t kBytes, class Finish>
HWY_INLINE Table16<kBytes> ProductTable(const float* HWY_RESTRICT lut, float scale, const Finish& finish) {
  const DF4 df;
  const D32 d32;
  const VF4 s = hn::Set(df, scale);
  V32 e[4];
  for (int k = 0; k < 4; ++k) e[k] = finish(k, hn::BitCast(d32, hn::Mul(hn::Load(df, lut + 4 * k), s)));
  return MakeTable<kBytes>(e[0], e[1], e[2], e[3]);
}

// The usual finish: PyTorch's cast of the f32 product.
template <DType kTo>
HWY_INLINE Table16<OutBytes(kTo)> ProductTable(const float* HWY_RESTRICT lut, float scale) {
  return ProductTable<OutBytes(kTo)>(lut, scale, [](int, V32 bits) { return F32BitsTo<kTo>(D32(), bits); });
}

// Outputs for 16 codes (one per u8 lane, in element order).
template <size_t kBytes>
HWY_INLINE void StoreLookup(const Table16<kBytes>& t, V8 codes, uint8_t* HWY_RESTRICT out) {
  const D8 d8;
  const D16 d16;
  const V8 b0 = Lookup16(t.plane[0], codes);
  const V8 b1 = Lookup16(t.plane[1], codes);
  if constexpr (kBytes == 2) {
    hn::StoreU(hn::InterleaveLower(d8, b0, b1), d8, out);
    hn::StoreU(hn::InterleaveUpper(d8, b0, b1), d8, out + 16);
  } else {
    const V8 b2 = Lookup16(t.plane[2], codes);
    const V8 b3 = Lookup16(t.plane[3], codes);
    const auto lo01 = hn::BitCast(d16, hn::InterleaveLower(d8, b0, b1));
    const auto hi01 = hn::BitCast(d16, hn::InterleaveUpper(d8, b0, b1));
    const auto lo23 = hn::BitCast(d16, hn::InterleaveLower(d8, b2, b3));
    const auto hi23 = hn::BitCast(d16, hn::InterleaveUpper(d8, b2, b3));
    hn::StoreU(hn::BitCast(d8, hn::InterleaveLower(d16, lo01, lo23)), d8, out);
    hn::StoreU(hn::BitCast(d8, hn::InterleaveUpper(d16, lo01, lo23)), d8, out + 16);
    hn::StoreU(hn::BitCast(d8, hn::InterleaveLower(d16, hi01, hi23)), d8, out + 32);
    hn::StoreU(hn::BitCast(d8, hn::InterleaveUpper(d16, hi01, hi23)), d8, out + 48);
  }
}

// 16 packed bytes = 32 codes, the high nibble first (bitsandbytes) or the low (E2M1).
template <bool kHighFirst, size_t kBytes>
HWY_INLINE void StorePacked32(const Table16<kBytes>& t, const uint8_t* HWY_RESTRICT packed, uint8_t* HWY_RESTRICT out) {
  const D8 d8;
  const V8 v = hn::LoadU(d8, packed);
  const V8 lo = hn::And(v, hn::Set(d8, 0x0F));
  const V8 hi = hn::ShiftRight<4>(v);
  const V8 first = kHighFirst ? hi : lo;
  const V8 second = kHighFirst ? lo : hi;
  StoreLookup(t, hn::InterleaveLower(d8, first, second), out);
  StoreLookup(t, hn::InterleaveUpper(d8, first, second), out + 16 * kBytes);
}

// 8 packed bytes = 16 codes, low nibble first (NVFP4's group of 16).
template <size_t kBytes>
HWY_INLINE void StorePacked16LowFirst(const Table16<kBytes>& t, const uint8_t* HWY_RESTRICT packed,
                                      uint8_t* HWY_RESTRICT out) {
  const D8 d8;
  uint64_t bytes;
  std::memcpy(&bytes, packed, 8);
  const V8 v = hn::BitCast(d8, hn::Set(D64(), bytes));  // the upper 8 lanes are not used
  StoreLookup(t, hn::InterleaveLower(d8, hn::And(v, hn::Set(d8, 0x0F)), hn::ShiftRight<4>(v)), out);
}

// The table's values in memory, for elements outside whole vectors.
template <size_t kBytes>
struct TableBytes {
  alignas(16) uint32_t v[16];
  explicit TableBytes(const Table16<kBytes>& t) {
    for (int k = 0; k < 4; ++k) hn::Store(t.entries[k], D32(), v + 4 * k);
  }
  void store(uint8_t code, uint8_t* out) const { std::memcpy(out, &v[code], kBytes); }  // little-endian
};

// ---- 256-entry tables for 8-bit codes (WASM) ----
// WASM SIMD128 computes FP8 and int8 outputs 4 lanes at a time at about half the speed
// of the same code on SSE4 (V8's lowering), against 16 lanes natively. A run of at least
// kTable256MinCodes codes sharing one scale is faster as a lookup: the run's 256 possible
// outputs are computed first by the kernel's own vector arithmetic (so they are its bytes
// by construction), then every code is a plain load from that table. Measured in Node 20
// on 45 M codes to BF16, a scalar lookup (2.5-3.3 Gelem/s) beat both 16-swizzle lookups
// (i8x16.swizzle zeroes indices >= 16: 8 swizzles per 128 entries and output byte,
// 1.7-1.9 Gelem/s; 16 for 256 entries, 0.9-1.3).
#if HWY_TARGET == HWY_WASM
inline constexpr bool kScaledRunTables = true;
inline constexpr size_t kTable256MinCodes = 2048;

// The codes 0..255 in order: the input the table's outputs are computed from.
alignas(16) inline constexpr auto kAllCodes = [] {
  struct {
    uint8_t v[256];
  } codes{};
  for (int c = 0; c < 256; ++c) codes.v[c] = static_cast<uint8_t>(c);
  return codes;
}();

// Outputs of n codes from the table of their 256 outputs (kBytes each, in code order).
// Eight codes per iteration, each read at a fixed offset: LLVM's unrolling of the plain
// loop tests the bound after every element (9 x86 instructions per element from V8).
// With 16-bit outputs stored in pairs, FP8 and int8 ran 1.2-1.3x faster in Node (four to
// a 64-bit store was slower).
template <size_t kBytes>
HWY_INLINE void LookupTable256(const uint8_t* HWY_RESTRICT table, const uint8_t* HWY_RESTRICT codes, size_t n,
                               uint8_t* HWY_RESTRICT out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint8_t* HWY_RESTRICT c = codes + i;
    uint8_t* HWY_RESTRICT o = out + i * kBytes;
    if constexpr (kBytes == 2) {
      // 16-bit outputs in pairs: one 32-bit store for two (faster in V8 than two).
      const auto at = [&](size_t j) {
        uint16_t v;
        std::memcpy(&v, table + c[j] * 2, 2);
        return uint32_t{v};
      };
#pragma clang loop unroll(full)
      for (size_t j = 0; j < 8; j += 2) {
        const uint32_t two = at(j) | at(j + 1) << 16;
        std::memcpy(o + j * 2, &two, 4);
      }
    } else {
#pragma clang loop unroll(full)
      for (size_t j = 0; j < 8; ++j) std::memcpy(o + j * kBytes, table + c[j] * kBytes, kBytes);
    }
  }
  for (; i < n; ++i) std::memcpy(out + i * kBytes, table + codes[i] * kBytes, kBytes);
}
#else
inline constexpr bool kScaledRunTables = false;
#endif  // HWY_TARGET == HWY_WASM

#if HWY_TARGET == HWY_WASM
// ---- 16 one-byte codes per step (WASM) ----
// Codes of 5 to 8 bits (and int8) computed 16 per step: each code XOR-ed with code_xor
// (0x80 turns int8 codes into code + 128), its f32 2^23 + code built by interleaving, as
// ggml's Widen16 does (the bytes with zero bytes, then with 0x4B00), `compute(w)` per
// four lanes (w: 2^23 + code as f32, returning the target's bits in u32 lanes), and
// 16-bit outputs narrowed two vectors at a time into full 16-byte stores. Fewer
// instructions than 4 lanes per call (a 4-byte load, two extensions and an 8-byte
// extract-and-store per vector): GPTQ 8-bit 1.5x, MLX 8-bit 1.3x in Node.
//  - Codes16Runs takes the consecutive runs of a call (groups: `first_run` codes, then
//    every `group_size`), with make(g) giving run g's compute, so the per-run work is
//    only that; code_xor 0 leaves the XOR out.
//  - Runs of at least kHybridMinCodes codes (per-channel scales) get a table of their
//    256 outputs by stored code, filled by the same steps. Every 24 codes, 16 are then
//    computed in vectors and 8 looked up in scalar code: the two use different ports,
//    and together they ran 1.1x faster than either alone (compressed-tensors W8A16 per
//    channel in Node 20 on Zen 5; 16 + 8 beat 16 + 16, 32 + 8, 32 + 24 and 48 + 16).
//  - The last n % 16 codes of a run go through a zero-padded step.
inline constexpr size_t kHybridMinCodes = 4096;  // shorter runs do not pay for the table

// 2^23 + code as f32, 16 codes at a time, from the codes at p.
template <bool kXor>
struct Widen16Codes {
  V8 x;
  V8 zero = hn::Zero(D8());
  hn::VFromD<D16> exponent = hn::Set(D16(), uint16_t{0x4B00});
  explicit Widen16Codes(uint8_t code_xor) : x(hn::Set(D8(), code_xor)) {}
  HWY_INLINE void operator()(const uint8_t* HWY_RESTRICT p, VF4 (&w)[4]) const {
    const D8 d8;
    const D16 d16;
    const DF4 df;
    const V8 c = kXor ? hn::Xor(hn::LoadU(d8, p), x) : hn::LoadU(d8, p);
    const auto lo = hn::BitCast(d16, hn::InterleaveLower(d8, c, zero));
    const auto hi = hn::BitCast(d16, hn::InterleaveUpper(d8, c, zero));
    w[0] = hn::BitCast(df, hn::InterleaveLower(d16, lo, exponent));
    w[1] = hn::BitCast(df, hn::InterleaveUpper(d16, lo, exponent));
    w[2] = hn::BitCast(df, hn::InterleaveLower(d16, hi, exponent));
    w[3] = hn::BitCast(df, hn::InterleaveUpper(d16, hi, exponent));
  }
};

// One run's codes: whole steps (beside the table's lookups when `table` is set), then the
// zero-padded last step.
template <DType kTo, bool kXor, class Compute>
HWY_INLINE void Codes16Run(const Widen16Codes<kXor>& widen, const Compute& compute, const uint8_t* HWY_RESTRICT codes,
                           size_t n, uint8_t* HWY_RESTRICT out, const uint8_t* HWY_RESTRICT table) {
  constexpr size_t kOut = OutBytes(kTo);
  const auto step = [&](const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT o) {
    VF4 w[4];
    widen(in, w);
    const V32 r0 = compute(w[0]), r1 = compute(w[1]), r2 = compute(w[2]), r3 = compute(w[3]);
    if constexpr (kOut == 4) {
      cast::StoreBytes(D32(), r0, o);
      cast::StoreBytes(D32(), r1, o + 16);
      cast::StoreBytes(D32(), r2, o + 32);
      cast::StoreBytes(D32(), r3, o + 48);
    } else {
      // The bits are below 0x10000, so the saturating narrow keeps them.
      wasm_v128_store(o, wasm_u16x8_narrow_i32x4(r0.raw, r1.raw));
      wasm_v128_store(o + 16, wasm_u16x8_narrow_i32x4(r2.raw, r3.raw));
    }
  };
  size_t i = 0;
  if (table != nullptr) {
    for (; i + 24 <= n; i += 24) {
      step(codes + i, out + i * kOut);
      LookupTable256<kOut>(table, codes + i + 16, 8, out + (i + 16) * kOut);
    }
  }
  // Four steps per iteration: V8 keeps the bound test and interrupt check per iteration.
  for (; i + 64 <= n; i += 64) {
    step(codes + i, out + i * kOut);
    step(codes + i + 16, out + (i + 16) * kOut);
    step(codes + i + 32, out + (i + 32) * kOut);
    step(codes + i + 48, out + (i + 48) * kOut);
  }
  for (; i + 16 <= n; i += 16) step(codes + i, out + i * kOut);
  if (i < n) {
    alignas(16) uint8_t padded_in[16] = {};
    alignas(16) uint8_t padded_out[16 * kOut];
    std::memcpy(padded_in, codes + i, n - i);
    step(padded_in, padded_out);
    std::memcpy(out + i * kOut, padded_out, (n - i) * kOut);
  }
}

template <DType kTo, bool kXor, class MakeCompute>
HWY_INLINE void Codes16RunsXor(const uint8_t* HWY_RESTRICT codes, uint8_t code_xor, size_t n, size_t first_run,
                               size_t group_size, uint8_t* HWY_RESTRICT out, const MakeCompute& make) {
  constexpr size_t kOut = OutBytes(kTo);
  const Widen16Codes<kXor> widen(code_xor);
  size_t k = 0, run = first_run < n ? first_run : n;
  for (size_t group = 0; k < n; ++group) {
    const auto compute = make(group);
    alignas(16) uint8_t table[256 * kOut];
    const uint8_t* t = nullptr;
    if (run >= kHybridMinCodes) {
      Codes16Run<kTo>(widen, compute, kAllCodes.v, 256, table, nullptr);
      t = table;
    }
    Codes16Run<kTo>(widen, compute, codes + k, run, out + k * kOut, t);
    k += run;
    run = n - k < group_size ? n - k : group_size;
  }
}

// n codes in consecutive runs, run g computed by make(g) (above).
template <DType kTo, class MakeCompute>
HWY_INLINE void Codes16Runs(const uint8_t* HWY_RESTRICT codes, uint8_t code_xor, size_t n, size_t first_run,
                            size_t group_size, uint8_t* HWY_RESTRICT out, const MakeCompute& make) {
  if (code_xor != 0) return Codes16RunsXor<kTo, true>(codes, code_xor, n, first_run, group_size, out, make);
  Codes16RunsXor<kTo, false>(codes, code_xor, n, first_run, group_size, out, make);
}

// True when `offset` can be taken with the 2^23 of Codes16Runs' f32: (2^23 + code) -
// (2^23 + offset) is exactly code - offset, one subtraction for both.
HWY_INLINE bool FoldableOffset(float offset) {
  return offset == std::nearbyint(offset) && std::fabs(offset) < 4194304.0f;
}
#endif  // HWY_TARGET == HWY_WASM

// `rows` runs of n elements sharing one scale, `stride` elements apart (in and out), with
// 1-byte codes: Run with `vector` (Run's lambda), or on WASM through the table of
// `vector`'s outputs when the runs are long enough to pay for it.
template <size_t kOutBytes, class DU, class Fn>
HWY_INLINE void ScaledRuns(DU du, const uint8_t* HWY_RESTRICT in, size_t rows, size_t n, size_t stride,
                           uint8_t* HWY_RESTRICT out, const Fn& vector) {
#if HWY_TARGET == HWY_WASM
  if (rows * n >= kTable256MinCodes) {
    alignas(16) uint8_t table[256 * kOutBytes];
    Run<1, kOutBytes>(du, kAllCodes.v, 256, table, vector);
    for (size_t r = 0; r < rows; ++r) {
      LookupTable256<kOutBytes>(table, in + r * stride, n, out + r * stride * kOutBytes);
    }
    return;
  }
#endif
  for (size_t r = 0; r < rows; ++r) Run<1, kOutBytes>(du, in + r * stride, n, out + r * stride * kOutBytes, vector);
}

#endif  // HWY_TARGET != HWY_SCALAR

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace quant
}  // namespace amn
HWY_AFTER_NAMESPACE();

#endif  // AMN_KERNELS_QUANT_QUANT_INL_H_
