// The scalar reference casts: the specification (see cast.h) that every SIMD target
// is tested against. Plain C++, one element at a time, on bit patterns.
#include <bit>
#include <cstring>
#include <type_traits>

#include "core/bytes.h"
#include "kernels/cast.h"

namespace amn {

static_assert(std::endian::native == std::endian::little,
              "tensor bytes are little-endian and read with memcpy");

bool can_cast_floats(DType from, DType to) {
  return is_castable_float(from) && is_castable_float(to) &&
         (to != DType::F64 || from == DType::F64);
}

namespace scalar {
namespace {

uint32_t bits_of(float f) { return bit_cast<uint32_t>(f); }
float float_of(uint32_t u) { return bit_cast<float>(u); }

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T>
void store(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

bool is_nan_bits(uint32_t u) { return (u & 0x7FFFFFFFu) > 0x7F800000u; }

// c10::BFloat16's round_to_nearest_even without its NaN test: adding 0x7FFF plus the
// lowest kept bit rounds ties to even; overflow carries into the exponent (-> Inf).
uint16_t round_bf16(uint32_t u) { return uint16_t((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16); }

uint16_t f32_bits_to_bf16(uint32_t u) { return is_nan_bits(u) ? 0xFFFF : round_bf16(u); }

// c10::detail::fp16_ieee_from_fp32_value (from Maratyszcza/FP16). Scaling |f| by
// 2^112 then 2^-110 saturates what F16 cannot hold to Inf; adding a power of two
// chosen from f's exponent makes the F32 adder round at F16's last mantissa bit (round
// to nearest even, subnormals included), and the F16 bits are then read off the sum.
// NaN lanes compute garbage that the final select discards.
uint16_t f32_bits_to_f16(uint32_t w) {
  const float scale_to_inf = 0x1.0p+112f;
  const float scale_to_zero = 0x1.0p-110f;
  float base = (float_of(w & 0x7FFFFFFFu) * scale_to_inf) * scale_to_zero;

  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;

  base = float_of((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = bits_of(base);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return uint16_t((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

// Integer-only (float arithmetic on a NaN would give unspecified bits on WASM).
uint32_t f16_to_f32_bits(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t nonsign = h & 0x7FFFu;
  if (nonsign >= 0x7C00u) {  // Inf, or NaN made quiet as PyTorch does
    const uint32_t quiet = nonsign > 0x7C00u ? 0x00400000u : 0u;
    return sign | 0x7F800000u | quiet | ((nonsign & 0x03FFu) << 13);
  }
  if (nonsign >= 0x0400u) return sign | ((nonsign << 13) + 0x38000000u);  // rebias 15 -> 127
  if (nonsign == 0) return sign;
  // Subnormal: mantissa * 2^-24. int -> float is exact below 2^24, and the result is
  // a normal F32, so lowering its exponent by 24 is exact too.
  return sign | (bits_of(float(nonsign)) - (24u << 23));
}

uint32_t bf16_to_f32_bits(uint16_t b) { return uint32_t(b) << 16; }

// Beyond FLT_MAX + half an ulp (2^128 - 2^103) the C cast rounds to Inf; spelled out
// so the cast below only ever sees values in float's range.
constexpr uint64_t kF64RoundsToF32Inf = 0x47EFFFFFF0000000ull;

uint32_t f64_bits_to_f32(uint64_t d) {
  const uint64_t nonsign = d & 0x7FFFFFFFFFFFFFFFull;
  const uint32_t sign = uint32_t(d >> 32) & 0x80000000u;
  if (nonsign > 0x7FF0000000000000ull) {  // NaN
    return sign | 0x7FC00000u | uint32_t((d >> 29) & 0x007FFFFFu);
  }
  if (nonsign >= kF64RoundsToF32Inf) return sign | 0x7F800000u;
  return bits_of(static_cast<float>(bit_cast<double>(d)));
}

template <class In, class Out, class Fn>
void each(const uint8_t* in, uint8_t* out, size_t count, Fn fn) {
  for (size_t i = 0; i < count; ++i) {
    store<Out>(out + i * sizeof(Out), fn(load<In>(in + i * sizeof(In))));
  }
}

}  // namespace

uint16_t f32_to_bf16(float f) { return f32_bits_to_bf16(bits_of(f)); }
uint16_t f32_to_f16(float f) { return f32_bits_to_f16(bits_of(f)); }
float f16_to_f32(uint16_t h) { return float_of(f16_to_f32_bits(h)); }
float bf16_to_f32(uint16_t b) { return float_of(bf16_to_f32_bits(b)); }

uint16_t f16_to_bf16(uint16_t h) {
  const uint32_t u = f16_to_f32_bits(h);
  return is_nan_bits(u) ? 0x7FC0 : round_bf16(u);
}
uint16_t bf16_to_f16(uint16_t b) { return f32_bits_to_f16(bf16_to_f32_bits(b)); }
uint32_t f64_to_f32_bits(uint64_t d) { return f64_bits_to_f32(d); }

void cast_floats(DType from, DType to, const uint8_t* in, uint8_t* out, size_t count) {
  if (!can_cast_floats(from, to) || count == 0) return;
  if (from == to) {
    std::memcpy(out, in, count * dtype_info(from).block_bytes);
    return;
  }
  using D = DType;
  if (from == D::F32 && to == D::BF16) return each<uint32_t, uint16_t>(in, out, count, f32_bits_to_bf16);
  if (from == D::F32 && to == D::F16) return each<uint32_t, uint16_t>(in, out, count, f32_bits_to_f16);
  if (from == D::F16 && to == D::F32) return each<uint16_t, uint32_t>(in, out, count, f16_to_f32_bits);
  if (from == D::BF16 && to == D::F32) return each<uint16_t, uint32_t>(in, out, count, bf16_to_f32_bits);
  if (from == D::F16 && to == D::BF16) return each<uint16_t, uint16_t>(in, out, count, f16_to_bf16);
  if (from == D::BF16 && to == D::F16) return each<uint16_t, uint16_t>(in, out, count, bf16_to_f16);
  if (from == D::F64 && to == D::F32) return each<uint64_t, uint32_t>(in, out, count, f64_bits_to_f32);
  if (from == D::F64 && to == D::F16) {
    return each<uint64_t, uint16_t>(in, out, count,
                                    [](uint64_t d) { return f32_bits_to_f16(f64_bits_to_f32(d)); });
  }
  if (from == D::F64 && to == D::BF16) {
    return each<uint64_t, uint16_t>(in, out, count,
                                    [](uint64_t d) { return f32_bits_to_bf16(f64_bits_to_f32(d)); });
  }
}

}  // namespace scalar
}  // namespace amn
