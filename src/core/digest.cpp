#include "core/digest.h"

#include <cstring>

// The xxHash library, header-only (its functions static inline in this file).
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace amn {
namespace {

uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
uint32_t rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }
uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// Both hashes pad the same way: 0x80, zeros, the bit length big-endian in the last 8 bytes.
template <class H>
void pad(H& hash, uint64_t total) {
  uint8_t tail[72] = {0x80};
  const size_t used = total % 64;
  const size_t n = (used < 56 ? 56 - used : 120 - used);
  const uint64_t bits = total * 8;
  for (int i = 0; i < 8; ++i) tail[n + i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
  hash.update(std::span<const uint8_t>(tail, n + 8));
}

template <class H>
void feed(H& hash, uint8_t* buf, size_t& fill, uint64_t& total, std::span<const uint8_t> bytes, auto&& block) {
  (void)hash;
  // An empty span may carry a null data(); memcpy's arguments must not be null even for 0 bytes.
  if (bytes.empty()) return;
  total += bytes.size();
  size_t at = 0;
  if (fill) {
    const size_t take = std::min(bytes.size(), 64 - fill);
    std::memcpy(buf + fill, bytes.data(), take);
    fill += take;
    at = take;
    if (fill < 64) return;
    block(buf);
    fill = 0;
  }
  for (; at + 64 <= bytes.size(); at += 64) block(bytes.data() + at);
  std::memcpy(buf, bytes.data() + at, bytes.size() - at);
  fill = bytes.size() - at;
}

}  // namespace

// FIPS 180-4 §4.2.2: the first 32 bits of the fractional parts of the cube roots of the
// first 64 primes; §5.3.3: of the square roots of the first 8.
constexpr uint32_t kSha256K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

Sha256::Sha256()
    : h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

void Sha256::block(const uint8_t* p) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i) w[i] = be32(p + 4 * i);
  for (int i = 16; i < 64; ++i) {
    const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  auto v = h_;
  for (int i = 0; i < 64; ++i) {
    const uint32_t s1 = rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25);
    const uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
    const uint32_t t1 = v[7] + s1 + ch + kSha256K[i] + w[i];
    const uint32_t s0 = rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22);
    const uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
    const uint32_t t2 = s0 + maj;
    v = {t1 + t2, v[0], v[1], v[2], v[3] + t1, v[4], v[5], v[6]};
  }
  for (int i = 0; i < 8; ++i) h_[i] += v[i];
}

void Sha256::update(std::span<const uint8_t> bytes) {
  feed(*this, buf_, fill_, total_, bytes, [this](const uint8_t* p) { block(p); });
}

std::array<uint8_t, 32> Sha256::finish() {
  pad(*this, total_);
  std::array<uint8_t, 32> out;
  for (int i = 0; i < 32; ++i) out[i] = static_cast<uint8_t>(h_[i / 4] >> (24 - 8 * (i % 4)));
  return out;
}

// FIPS 180-4 §5.3.1 and §4.2.1.
Sha1::Sha1() : h_{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0} {}

void Sha1::block(const uint8_t* p) {
  uint32_t w[80];
  for (int i = 0; i < 16; ++i) w[i] = be32(p + 4 * i);
  for (int i = 16; i < 80; ++i) w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4];
  for (int i = 0; i < 80; ++i) {
    uint32_t f, k;
    if (i < 20) f = (b & c) | (~b & d), k = 0x5a827999;
    else if (i < 40) f = b ^ c ^ d, k = 0x6ed9eba1;
    else if (i < 60) f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
    else f = b ^ c ^ d, k = 0xca62c1d6;
    const uint32_t t = rotl(a, 5) + f + e + k + w[i];
    e = d, d = c, c = rotl(b, 30), b = a, a = t;
  }
  h_[0] += a, h_[1] += b, h_[2] += c, h_[3] += d, h_[4] += e;
}

void Sha1::update(std::span<const uint8_t> bytes) {
  feed(*this, buf_, fill_, total_, bytes, [this](const uint8_t* p) { block(p); });
}

std::array<uint8_t, 20> Sha1::finish() {
  pad(*this, total_);
  std::array<uint8_t, 20> out;
  for (int i = 0; i < 20; ++i) out[i] = static_cast<uint8_t>(h_[i / 4] >> (24 - 8 * (i % 4)));
  return out;
}

Xxh64::Xxh64() : state_(XXH64_createState()) { XXH64_reset(static_cast<XXH64_state_t*>(state_), 0); }
Xxh64::~Xxh64() {
  if (state_) XXH64_freeState(static_cast<XXH64_state_t*>(state_));
}
void Xxh64::update(std::span<const uint8_t> bytes) {
  XXH64_update(static_cast<XXH64_state_t*>(state_), bytes.data(), bytes.size());
}
uint64_t Xxh64::finish() const { return XXH64_digest(static_cast<const XXH64_state_t*>(state_)); }

std::string hex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

std::string hex64(uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (56 - 8 * i));
  return hex(b);
}

}  // namespace amn
