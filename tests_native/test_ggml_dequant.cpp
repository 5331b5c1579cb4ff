// ggml dequantizers against ggml's own output (fixtures/ggml, written by ggml itself:
// its README says which ggml and what was called), byte for byte, for every block type:
// blocks quantized by ggml, and blocks of random bytes (every grid entry and scale
// value reachable, Inf and NaN scales included). Plus hand-checked Q4_0 / Q8_0 blocks
// and ggml's F16 -> F32 on all 65536 inputs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <simdjson.h>

#include "core/ggml_type.h"
#include "kernels/cast.h"
#include "kernels/ggml/dequantize.h"
#include "support.h"

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

std::string hex32(uint32_t u) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", u);
  return buf;
}

struct FixtureType {
  uint32_t id = 0;
  std::string name, quantized, f32;
  uint64_t blocks = 0, block_elements = 0, block_bytes = 0;
  bool random = false;  // random bytes rather than ggml's quantizer output
};

std::vector<FixtureType> read_manifest() {
  const auto text = amn::test::read_file(amn::test::fixture_path("ggml/manifest.json"));
  REQUIRE(!text.empty());
  simdjson::dom::parser parser;
  simdjson::dom::array types;
  REQUIRE(!parser.parse(reinterpret_cast<const char*>(text.data()), text.size())["types"].get_array().get(types));
  std::vector<FixtureType> out;
  for (auto e : types) {
    FixtureType t;
    uint64_t id = 0;
    std::string_view name, q, f;
    REQUIRE(!e["id"].get_uint64().get(id));
    REQUIRE(!e["name"].get_string().get(name));
    REQUIRE(!e["quantized"].get_string().get(q));
    REQUIRE(!e["f32"].get_string().get(f));
    REQUIRE(!e["blocks"].get_uint64().get(t.blocks));
    REQUIRE(!e["block_elements"].get_uint64().get(t.block_elements));
    REQUIRE(!e["block_bytes"].get_uint64().get(t.block_bytes));
    REQUIRE(!e["random"].get_bool().get(t.random));
    t.id = uint32_t(id);
    t.name = name, t.quantized = q, t.f32 = f;
    out.push_back(t);
  }
  return out;
}

amn::GgmlType type_of(uint32_t id) { return static_cast<amn::GgmlType>(id); }

bool is_nan_bits(uint32_t u) { return (u & 0x7FFFFFFFu) > 0x7F800000u; }

// Equal bits, or NaN on both sides: NaN bits from float arithmetic (Inf * 0 with a random
// scale) differ between x86, Arm and WASM; ggml's fixtures hold x86's.
bool same_value(uint32_t want, float got) {
  return want == bits(got) || (is_nan_bits(want) && is_nan_bits(bits(got)));
}

// Empty when equal; otherwise names the first differing block and its first few elements.
std::string first_difference(const std::vector<uint8_t>& want, const std::vector<float>& got,
                             uint64_t block_elements) {
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t w;
    std::memcpy(&w, &want[4 * i], 4);
    if (same_value(w, got[i])) continue;
    const size_t block = i / block_elements;
    std::string s = "first differing block " + std::to_string(block) + ":";
    int shown = 0;
    for (size_t j = block * block_elements; j < (block + 1) * block_elements && shown < 6; ++j) {
      std::memcpy(&w, &want[4 * j], 4);
      if (same_value(w, got[j])) continue;
      s += " [" + std::to_string(j) + "] ggml " + hex32(w) + " got " + hex32(bits(got[j]));
      ++shown;
    }
    return s;
  }
  return {};
}

}  // namespace

TEST_CASE("ggml dequantizers match ggml's to_float on its own blocks", "[ggml]") {
  const auto types = read_manifest();
  // Two fixtures (ggml's blocks, random bytes) for every type with a kernel.
  const auto decodable = std::count_if(amn::kGgmlTraits.begin(), amn::kGgmlTraits.end(),
                                       [](const amn::GgmlTraits& t) { return amn::ggml_can_dequantize(t.type); });
  REQUIRE(types.size() == 2 * static_cast<size_t>(decodable));
  for (const auto& t : types) {
    INFO(t.name << " (id " << t.id << ")" << (t.random ? ", random bytes" : ""));
    const amn::GgmlTraits* info = amn::ggml_traits(type_of(t.id));
    REQUIRE(info);
    CHECK(info->name == t.name);
    CHECK(info->block_elements == t.block_elements);
    CHECK(info->block_bytes == t.block_bytes);
    REQUIRE(amn::ggml_can_dequantize(type_of(t.id)));

    const auto q = amn::test::read_file(amn::test::fixture_path("ggml/" + t.quantized));
    const auto want = amn::test::read_file(amn::test::fixture_path("ggml/" + t.f32));
    REQUIRE(q.size() == t.blocks * t.block_bytes);
    REQUIRE(want.size() == t.blocks * t.block_elements * 4);

    std::vector<float> got(t.blocks * t.block_elements, -12345.0f);
    amn::dequantize_ggml(type_of(t.id), q.data(), got.data(), t.blocks);
    const std::string diff = first_difference(want, got, t.block_elements);
    INFO(diff);
    CHECK(diff.empty());

    // Unaligned input, and one block at a time, give the same bytes.
    std::vector<uint8_t> shifted(q.size() + 3);
    std::memcpy(shifted.data() + 3, q.data(), q.size());
    std::vector<float> got2(got.size(), -1.0f);
    for (uint64_t b = 0; b < t.blocks; ++b) {
      amn::dequantize_ggml(type_of(t.id), shifted.data() + 3 + b * t.block_bytes, got2.data() + b * t.block_elements, 1);
    }
    bool same = true;
    for (size_t i = 0; i < got.size(); ++i) same = same && same_value(bits(got[i]), got2[i]);
    CHECK(same);
  }
}

TEST_CASE("ggml dequantizers cover every quantized type ggml defines", "[ggml]") {
  std::multiset<uint32_t> in_fixtures;  // each type twice: quantized, random
  for (const auto& t : read_manifest()) in_fixtures.insert(t.id);
  for (uint32_t id = 0; id < amn::kGgmlTypeCount + 5; ++id) {
    const amn::GgmlTraits* info = amn::ggml_traits(type_of(id));
    const bool block_type = info && info->quantized && info->block_elements != 0;
    INFO("id " << id);
    CHECK(amn::ggml_can_dequantize(type_of(id)) == block_type);
    CHECK(in_fixtures.count(id) == (block_type ? 2u : 0u));
  }
  // A type it does not handle leaves the output alone.
  const uint8_t in[4] = {1, 2, 3, 4};
  float out[2] = {7.0f, 7.0f};
  amn::dequantize_ggml(type_of(0), in, out, 1);   // F32 is not a block type
  amn::dequantize_ggml(type_of(4), in, out, 1);   // Q4_2, removed
  amn::dequantize_ggml(type_of(99), in, out, 1);  // unknown
  CHECK(out[0] == 7.0f);
  CHECK(out[1] == 7.0f);
}

TEST_CASE("ggml F16 -> F32 equals the project's scalar cast on every input", "[ggml]") {
  const auto table = amn::test::read_file(amn::test::fixture_path("ggml/f16_to_f32.bin"));
  REQUIRE(table.size() == 65536 * 4);
  int bad = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    uint32_t want;
    std::memcpy(&want, &table[4 * h], 4);
    if (bits(amn::scalar::f16_to_f32(uint16_t(h))) != want && ++bad <= 8) {
      UNSCOPED_INFO("f16 " << h << ": ggml " << hex32(want) << ", ours "
                           << hex32(bits(amn::scalar::f16_to_f32(uint16_t(h)))));
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("Q4_0 by hand", "[ggml]") {
  // Block 0: d = 0.5 (F16 0x3800); byte j holds j (low nibble) and 15 - j (high).
  // Block 1: d = -2 (0xC000); every byte 0x80: low nibble 0 -> -8 * -2 = 16, high
  // nibble 8 -> 0 * -2 = -0.
  std::vector<uint8_t> in(36);
  in[0] = 0x00, in[1] = 0x38;
  for (int j = 0; j < 16; ++j) in[2 + j] = uint8_t(j | (15 - j) << 4);
  in[18] = 0x00, in[19] = 0xC0;
  for (int j = 0; j < 16; ++j) in[20 + j] = 0x80;
  std::vector<float> out(64);
  amn::dequantize_ggml(type_of(2), in.data(), out.data(), 2);
  for (int j = 0; j < 16; ++j) {
    CHECK(out[j] == float(j - 8) * 0.5f);
    CHECK(out[16 + j] == float(7 - j) * 0.5f);
    CHECK(out[32 + j] == 16.0f);
    CHECK(bits(out[48 + j]) == 0x80000000u);
  }
  CHECK(out[0] == -4.0f);
  CHECK(out[31] == -4.0f);
  CHECK(out[15] == 3.5f);
}

TEST_CASE("Q8_0 by hand", "[ggml]") {
  // Block 0: d = 0.25 (F16 0x3400), quants -128, -1, 0, 1, 127, then 5..31.
  // Block 1: d = 2^-24 (the smallest F16 subnormal, 0x0001), quants 3 and -128.
  std::vector<uint8_t> in(68, 0);
  in[0] = 0x00, in[1] = 0x34;
  const int8_t q0[5] = {-128, -1, 0, 1, 127};
  for (int j = 0; j < 32; ++j) in[2 + j] = uint8_t(j < 5 ? q0[j] : j);
  in[34] = 0x01, in[35] = 0x00;
  in[36] = 3, in[37] = 0x80;
  std::vector<float> out(64);
  amn::dequantize_ggml(type_of(8), in.data(), out.data(), 2);
  CHECK(out[0] == -32.0f);
  CHECK(out[1] == -0.25f);
  CHECK(bits(out[2]) == 0u);
  CHECK(out[3] == 0.25f);
  CHECK(out[4] == 31.75f);
  CHECK(out[31] == 7.75f);
  CHECK(out[32] == 0x1.8p-23f);  // 3 * 2^-24
  CHECK(out[33] == -0x1p-17f);   // -128 * 2^-24
  CHECK(bits(out[34]) == 0u);
}
