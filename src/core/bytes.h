// Integers stored in a fixed byte order, read from unaligned bytes on any host: one copy
// for every parser (GGUF, ZIP, NPY, pickle, torch's legacy storages).
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace amn {

// The unsigned integer in the n <= 8 bytes at p, least significant byte first.
inline uint64_t load_le(const uint8_t* p, unsigned n) {
  uint64_t v = 0;
  for (unsigned k = n; k-- > 0;) v = (v << 8) | p[k];
  return v;
}

// The same, most significant byte first.
inline uint64_t load_be(const uint8_t* p, unsigned n) {
  uint64_t v = 0;
  for (unsigned k = 0; k < n; ++k) v = (v << 8) | p[k];
  return v;
}

// The low `bytes` (1..8) bytes of v as a two's-complement integer; 0 for 0 bytes.
inline int64_t sign_extend(uint64_t v, unsigned bytes) {
  if (bytes == 0) return 0;
  if (bytes >= 8) return static_cast<int64_t>(v);
  const unsigned shift = 64 - 8 * bytes;
  return static_cast<int64_t>(v << shift) >> shift;
}

inline uint16_t load_le16(const uint8_t* p) { return static_cast<uint16_t>(load_le(p, 2)); }
inline uint32_t load_le32(const uint8_t* p) { return static_cast<uint32_t>(load_le(p, 4)); }
inline uint64_t load_le64(const uint8_t* p) { return load_le(p, 8); }

// std::bit_cast, which Emscripten 3.1.6's libc++ lacks.
template <class To, class From>
To bit_cast(From from) {
  static_assert(sizeof(To) == sizeof(From) && std::is_trivially_copyable_v<From>);
  To to;
  std::memcpy(&to, &from, sizeof to);
  return to;
}

}  // namespace amn
