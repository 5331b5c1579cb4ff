// The Highway ggml dequantizers (kernels/ggml/dequant*-inl.h) against the scalar
// reference (ggml::dequantizer(type), itself checked against ggml in
// test_ggml_dequant.cpp), byte for byte, under every implementation this binary can run
// (amn::available_impls + force_impl), for every type with a kernel: random blocks with
// finite scales, ggml's fixtures (Inf and NaN scales included), Inf / NaN / zero /
// subnormal scales for every type, every F16 scale (Q8_0, Q4_1), odd block counts and
// unaligned input.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "core/ggml_type.h"
#include "kernels/cast.h"
#include "kernels/ggml/dequantize.h"
#include "support.h"

namespace {

struct RestoreImpl {
  std::string saved{amn::active_impl_name()};
  ~RestoreImpl() { amn::force_impl(saved); }
};

// Every type with a kernel, from the traits rows (core/ggml_type.h), and where their
// scales are: the row's F16 fields, plus Q8_K's F32 d and IQ1_M's F16 spread over the top
// nibbles of 4 u16 words, written here (MXFP4's E8M0 and NVFP4's UE4M3 scale bytes are
// all finite, left random).
struct SimdType {
  uint32_t id;
  std::string name;
  std::vector<size_t> f16_scales;
  int f32_scale = -1;
  int iq1m_scale = -1;  // IQ1_M: the F16 scale in the top nibbles of 4 u16 words here
};
const std::vector<SimdType>& simd_types() {
  static const std::vector<SimdType> types = [] {
    std::vector<SimdType> out;
    for (const amn::GgmlTraits& row : amn::kGgmlTraits) {
      if (!amn::ggml_can_dequantize(row.type)) continue;
      const auto f16 = row.f16_fields();
      SimdType t{amn::ggml_id(row.type), std::string(row.name), {f16.begin(), f16.end()}};
      if (row.type == amn::GgmlType::Q8_K) t.f32_scale = 0;
      if (row.type == amn::GgmlType::IQ1_M) t.iq1m_scale = 48;
      out.push_back(t);
    }
    return out;
  }();
  return types;
}

amn::GgmlType type_of(uint32_t id) { return static_cast<amn::GgmlType>(id); }

std::string hex32(uint32_t u) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", u);
  return buf;
}

// Empty when the active implementation writes the reference's bytes for these blocks
// (and nothing past them); otherwise the first few differing elements.
std::string compare_with_reference(uint32_t id, const uint8_t* in, size_t blocks) {
  const amn::GgmlTraits* info = amn::ggml_traits(type_of(id));
  const size_t n = blocks * info->block_elements;
  std::vector<float> want(n + 16, -7.0f), got(n + 16, -7.0f);
  amn::ggml::dequantizer(type_of(id))(in, want.data(), blocks);
  amn::dequantize_ggml(type_of(id), in, got.data(), blocks);
  if (std::memcmp(want.data(), got.data(), want.size() * 4) == 0) return {};
  std::string s = std::string(amn::active_impl_name()) + ", " + std::to_string(blocks) + " blocks:";
  int shown = 0;
  for (size_t i = 0; i < want.size() && shown < 6; ++i) {
    uint32_t w, g;
    std::memcpy(&w, &want[i], 4);
    std::memcpy(&g, &got[i], 4);
    if (w == g) continue;
    s += " [" + std::to_string(i) + "] want " + hex32(w) + " got " + hex32(g);
    ++shown;
  }
  return s;
}

uint16_t random_finite_f16(std::mt19937& rng) {
  for (;;) {
    const uint16_t h = uint16_t(rng());
    if ((h & 0x7C00u) != 0x7C00u) return h;
  }
}

// Random bytes with finite scales (NaN bits from float arithmetic are not portable;
// fixtures below cover Inf and NaN on the same target). One scale in 8 is a subnormal
// or zero, so both branches of the scale conversion are exercised.
std::vector<uint8_t> random_blocks(const SimdType& t, size_t blocks, uint32_t seed) {
  const size_t bytes = amn::ggml_traits(type_of(t.id))->block_bytes;
  std::mt19937 rng(seed);
  std::vector<uint8_t> in(blocks * bytes);
  for (auto& b : in) b = uint8_t(rng());
  for (size_t i = 0; i < blocks; ++i) {
    uint8_t* block = in.data() + i * bytes;
    for (size_t at : t.f16_scales) {
      uint16_t h = random_finite_f16(rng);
      if (rng() % 8 == 0) h = uint16_t(h & 0x83FFu);  // subnormal or zero
      std::memcpy(block + at, &h, 2);
    }
    if (t.iq1m_scale >= 0) {
      uint16_t h = random_finite_f16(rng);
      if (rng() % 8 == 0) h = uint16_t(h & 0x83FFu);
      for (int w = 0; w < 4; ++w) {
        uint8_t* hi = block + t.iq1m_scale + 2 * w + 1;  // top nibble of word w
        *hi = uint8_t((*hi & 0x0F) | (((h >> (4 * w)) & 0xF) << 4));
      }
    }
    if (t.f32_scale >= 0) {
      uint32_t u;
      do u = rng(); while ((u & 0x7F800000u) == 0x7F800000u);
      std::memcpy(block + t.f32_scale, &u, 4);
    }
  }
  return in;
}

}  // namespace

TEST_CASE("ggml SIMD: random blocks, every implementation, every SIMD type", "[ggml-simd]") {
  RestoreImpl restore;
  for (auto impl : amn::available_impls()) {
    REQUIRE(amn::force_impl(impl));
    for (const auto& t : simd_types()) {
      INFO(t.name << " under " << impl);
      const size_t bytes = amn::ggml_traits(type_of(t.id))->block_bytes;
      const auto in = random_blocks(t, 1001, 12345 + t.id);
      CHECK(compare_with_reference(t.id, in.data(), 1001) == "");
      // Odd block counts, each from an odd start.
      for (size_t count : {1, 2, 3, 7, 33}) {
        CHECK(compare_with_reference(t.id, in.data() + 5 * bytes, count) == "");
      }
      // Unaligned input: the same blocks at every offset 1..7 of an aligned buffer.
      for (size_t shift = 1; shift < 8; ++shift) {
        std::vector<uint8_t> moved(in.size() + shift);
        std::memcpy(moved.data() + shift, in.data(), in.size());
        CHECK(compare_with_reference(t.id, moved.data() + shift, 1001) == "");
      }
    }
  }
}

TEST_CASE("ggml SIMD: ggml's fixtures, every implementation", "[ggml-simd]") {
  RestoreImpl restore;
  for (auto impl : amn::available_impls()) {
    REQUIRE(amn::force_impl(impl));
    for (const auto& t : simd_types()) {
      const size_t bytes = amn::ggml_traits(type_of(t.id))->block_bytes;
      for (const char* kind : {".q", ".random.q"}) {
        INFO(t.name << kind << " under " << impl);
        const auto q = amn::test::read_file(amn::test::fixture_path(std::string("ggml/") + t.name + kind));
        REQUIRE(!q.empty());
        REQUIRE(q.size() % bytes == 0);
        const size_t blocks = q.size() / bytes;
        CHECK(compare_with_reference(t.id, q.data(), blocks) == "");
        std::vector<uint8_t> moved(q.size() + 3);
        std::memcpy(moved.data() + 3, q.data(), q.size());
        CHECK(compare_with_reference(t.id, moved.data() + 3, blocks - 1) == "");
      }
    }
  }
}

TEST_CASE("ggml SIMD: every F16 scale (Q8_0, Q4_1), every implementation", "[ggml-simd]") {
  // Block h has scale h (Q4_1: min 65535 - h); quants cycle through every value. Inf and
  // NaN scales included: within one target, scalar and vector float operations give the
  // same NaN bits.
  RestoreImpl restore;
  std::vector<uint8_t> q8(65536 * 34), q41(65536 * 20);
  for (uint32_t h = 0; h < 65536; ++h) {
    uint8_t* b = q8.data() + 34 * h;
    b[0] = uint8_t(h), b[1] = uint8_t(h >> 8);
    for (int j = 0; j < 32; ++j) b[2 + j] = uint8_t(h * 7 + j * 37);
    uint8_t* c = q41.data() + 20 * h;
    const uint32_t m = 65535 - h;
    c[0] = uint8_t(h), c[1] = uint8_t(h >> 8), c[2] = uint8_t(m), c[3] = uint8_t(m >> 8);
    for (int j = 0; j < 16; ++j) c[4 + j] = uint8_t(h * 5 + j * 29);
  }
  for (auto impl : amn::available_impls()) {
    REQUIRE(amn::force_impl(impl));
    INFO(impl);
    CHECK(compare_with_reference(8, q8.data(), 65536) == "");
    CHECK(compare_with_reference(3, q41.data(), 65536) == "");
  }
}

TEST_CASE("ggml SIMD: non-finite, zero and subnormal scales, every type", "[ggml-simd]") {
  // Random quants; the (first) F16 scale of block i cycles through Inf, NaN (quiet and
  // signalling, both signs), zeros, subnormals and the extremes. Within one target,
  // scalar and vector float operations give the same NaN bits, so these must match too
  // (e.g. IQ2's (db * m) * -1.0f keeps a NaN's sign, where a negation would flip it).
  static constexpr uint16_t kSpecial[] = {0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0xFD55, 0x7FFF, 0x0000,
                                          0x8000, 0x0001, 0x83FF, 0x0200, 0x7BFF, 0xFBFF, 0x0400, 0x3C00};
  constexpr size_t kBlocks = 2 * std::size(kSpecial);
  RestoreImpl restore;
  for (const auto& t : simd_types()) {
    if (t.f16_scales.empty() && t.iq1m_scale < 0) continue;
    auto in = random_blocks(t, kBlocks, 777 + t.id);
    const size_t bytes = amn::ggml_traits(type_of(t.id))->block_bytes;
    for (size_t i = 0; i < kBlocks; ++i) {
      const uint16_t h = kSpecial[i % std::size(kSpecial)];
      uint8_t* block = in.data() + i * bytes;
      if (t.iq1m_scale >= 0) {
        for (int w = 0; w < 4; ++w) {
          uint8_t* hi = block + t.iq1m_scale + 2 * w + 1;
          *hi = uint8_t((*hi & 0x0F) | (((h >> (4 * w)) & 0xF) << 4));
        }
      } else {
        std::memcpy(block + t.f16_scales[0], &h, 2);
      }
    }
    for (auto impl : amn::available_impls()) {
      REQUIRE(amn::force_impl(impl));
      INFO(t.name << " under " << impl);
      CHECK(compare_with_reference(t.id, in.data(), kBlocks) == "");
    }
  }
}
