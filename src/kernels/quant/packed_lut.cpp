// The portable half of the table-lookup path (packed_lut.h); the Highway half is
// packed-inl.h.
#include "kernels/quant/packed_lut.h"

#include <cstring>

#include "kernels/cast.h"
#include "kernels/quant/packed.h"

namespace amn::quant::lut {

void build_tables(Tables& t, DType canonical, DType out, const float* values, size_t groups) {
  t.out_bytes = dtype_info(out).block_bytes;
  const size_t ob = t.out_bytes;
  store_rounded(canonical, out, values, groups * 16, t.raw);
  for (size_t g = 0; g < groups; ++g) {
    for (size_t b = 0; b < ob; ++b) {
      uint8_t* plane = t.planes + (g * ob + b) * 16;
      const uint8_t* entry = t.raw + g * 16 * ob + b;
      for (size_t c = 0; c < 16; ++c) plane[c] = entry[c * ob];
    }
  }
}

bool lut_enabled() { return !reference_impl_forced(); }

namespace {

// Eight kBits codes at a time from the kBits bytes at p (an LSB-first stream, gathered
// into one word): a shift and a mask per code instead of also a test and a second byte.
// (The bytes are OR-ed in rather than copied into the word: GCC copies a 6-byte memcpy
// through the stack and reloads it, a store-forwarding stall that made AVX-512 MLX
// 6-bit 1.6x slower.)
template <uint32_t kBits>
size_t unpack_eights(const uint8_t* p, size_t n, uint8_t* codes) {
  size_t k = 0;
  for (; k + 8 <= n; k += 8, p += kBits) {
    uint64_t w = 0;
    for (uint32_t b = 0; b < kBits; ++b) w |= uint64_t(p[b]) << (8 * b);
    for (uint32_t j = 0; j < 8; ++j) codes[k + j] = uint8_t((w >> (kBits * j)) & ((1u << kBits) - 1u));
  }
  return k;
}

}  // namespace

void unpack_bits(const uint8_t* bytes, uint64_t bit, uint32_t bits, size_t n, uint8_t* codes) {
  if ((bit & 7) == 0) {  // byte-aligned (a window of whole groups): eight codes per step
    const uint8_t* p = bytes + (bit >> 3);
    size_t k = 0;
    switch (bits) {
      case 3: k = unpack_eights<3>(p, n, codes); break;
      case 5: k = unpack_eights<5>(p, n, codes); break;
      case 6: k = unpack_eights<6>(p, n, codes); break;
      case 7: k = unpack_eights<7>(p, n, codes); break;
      case 8: k = n, std::memcpy(codes, p, n); break;
      default: break;
    }
    bit += uint64_t(k) * bits;
    codes += k;
    n -= k;
  }
  const uint32_t mask = (1u << bits) - 1u;
  for (size_t k = 0; k < n; ++k, bit += bits) {
    const uint8_t* p = bytes + (bit >> 3);
    const uint32_t shift = uint32_t(bit & 7);
    uint32_t v = uint32_t(p[0]) >> shift;
    if (shift + bits > 8) v |= uint32_t(p[1]) << (8 - shift);  // never reads past the last code's byte
    codes[k] = uint8_t(v & mask);
  }
}

void lookup_scattered(const Tables& t, const uint8_t* codes, const uint32_t* groups, size_t n, uint8_t* dst) {
  const size_t ob = t.out_bytes;
  if (ob == 2) {
    for (size_t k = 0; k < n; ++k) std::memcpy(dst + 2 * k, t.raw + (groups[k] * 16 + codes[k]) * 2, 2);
  } else {
    for (size_t k = 0; k < n; ++k) std::memcpy(dst + 4 * k, t.raw + (groups[k] * 16 + codes[k]) * 4, 4);
  }
}

}  // namespace amn::quant::lut
