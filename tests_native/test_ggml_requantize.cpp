// Re-encoding with a reference's scales (kernels/ggml/requantize.h): for every block
// ggml quantized in fixtures/ggml_quant (its README: ggml_quantize_chunk's own output,
// with and without an importance matrix), dequantizing it with amn's dequantizer and
// re-encoding the values with the block's scales gives the block back, byte for byte.
// The same test binary runs natively, under qemu-aarch64 and in WASM (make test), so the
// bytes are the same on every target.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/ggml_type.h"
#include "kernels/cast.h"
#include "kernels/ggml/dequantize.h"
#include "kernels/ggml/quantize.h"
#include "kernels/ggml/requantize.h"
#include "support.h"

namespace {

constexpr int64_t kRows = 16;
constexpr int64_t kCols = 256;

const char* const kTypes[] = {"F16",   "BF16",    "Q8_0",   "Q4_0",  "Q4_1",  "Q5_0",   "Q5_1",  "Q2_K",   "Q3_K",
                              "Q4_K",  "Q5_K",    "Q6_K",   "IQ4_NL", "IQ4_XS", "IQ3_S", "IQ3_XXS", "IQ2_XXS", "IQ2_XS",
                              "IQ2_S", "IQ1_S",   "IQ1_M",  "TQ1_0", "TQ2_0", "MXFP4",  "NVFP4", "Q1_0",   "Q2_0"};

std::vector<float> read_floats(const std::string& rel) {
  const auto bytes = amn::test::read_file(amn::test::fixture_path(rel));
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

// The values ggml's loader reads from `blocks`: to_float, or F16 / BF16 widened.
std::vector<float> decode(amn::GgmlType type, const std::vector<uint8_t>& blocks, size_t elements) {
  std::vector<float> out(elements);
  if (type == amn::GgmlType::F16 || type == amn::GgmlType::BF16) {
    for (size_t i = 0; i < elements; ++i) {
      uint16_t h;
      std::memcpy(&h, blocks.data() + 2 * i, 2);
      if (type == amn::GgmlType::F16) {
        out[i] = amn::scalar::f16_to_f32(h);
      } else {
        const uint32_t bits = uint32_t(h) << 16;
        std::memcpy(&out[i], &bits, 4);
      }
    }
  } else {
    const amn::GgmlTraits& t = *amn::ggml_traits(type);
    amn::dequantize_ggml(type, blocks.data(), out.data(), elements / t.block_elements);
  }
  return out;
}

std::string first_difference(const amn::GgmlTraits& t, const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (got[i] == want[i]) continue;
    char buf[120];
    std::snprintf(buf, sizeof buf, "block %zu byte %zu: got 0x%02X, ggml 0x%02X", i / t.block_bytes, i % t.block_bytes, got[i],
                  want[i]);
    return buf;
  }
  return got.size() == want.size() ? "" : "sizes differ";
}

}  // namespace

TEST_CASE("re-encoding ggml's blocks with their own scales gives them back", "[ggml][requantize]") {
  int checked = 0;
  for (const char* name : kTypes) {
    const auto type = amn::ggml_type_from_name(name);
    REQUIRE(type);
    REQUIRE(amn::ggml_can_requantize(*type));
    const amn::GgmlTraits& t = *amn::ggml_traits(*type);
    for (const char* suffix : {".q", ".imatrix.q"}) {
      const std::string file = std::string("ggml_quant/") + name + suffix;
      if (!std::filesystem::exists(amn::test::fixture_path(file))) continue;
      const auto ref = amn::test::read_file(amn::test::fixture_path(file));
      const size_t elements = size_t(kRows * kCols), blocks = elements / t.block_elements;
      REQUIRE(ref.size() == blocks * t.block_bytes);
      const auto values = decode(*type, ref, elements);
      std::vector<uint8_t> got(ref.size() + 2, 0xCD);  // an odd address, one byte after the end untouched
      INFO(file);
      REQUIRE(amn::requantize_ggml(*type, values.data(), ref.data(), got.data() + 1, blocks));
      CHECK(got.back() == 0xCD);
      CHECK(first_difference(t, std::vector<uint8_t>(got.begin() + 1, got.end() - 1), ref) == "");
      ++checked;
    }
  }
  CHECK(checked == 42);  // every fixture file
}

TEST_CASE("re-encoding keeps the reference's scales and picks the nearest codes", "[ggml][requantize]") {
  // Fresh values (fixtures/ggml_quant/input.f32) against ggml's Q4_K blocks of the same
  // input: the scales are the reference's, and no code can be moved nearer its value.
  const auto input = read_floats("ggml_quant/input.f32");
  const auto ref = amn::test::read_file(amn::test::fixture_path("ggml_quant/Q4_K.q"));
  const amn::GgmlTraits& t = *amn::ggml_traits(amn::GgmlType::Q4_K);
  const size_t blocks = input.size() / t.block_elements;
  std::vector<uint8_t> got(ref.size());
  REQUIRE(amn::requantize_ggml(amn::GgmlType::Q4_K, input.data(), ref.data(), got.data(), blocks));
  std::vector<float> back(input.size()), ggml_back(input.size());
  amn::dequantize_ggml(amn::GgmlType::Q4_K, got.data(), back.data(), blocks);
  amn::dequantize_ggml(amn::GgmlType::Q4_K, ref.data(), ggml_back.data(), blocks);
  double err = 0, ggml_err = 0;
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* g = got.data() + b * t.block_bytes;
    const uint8_t* r = ref.data() + b * t.block_bytes;
    CHECK(std::memcmp(g, r, 16) == 0);  // d, dmin, scales and mins
  }
  for (size_t i = 0; i < input.size(); ++i) {
    err += (back[i] - input[i]) * double(back[i] - input[i]);
    ggml_err += (ggml_back[i] - input[i]) * double(ggml_back[i] - input[i]);
  }
  // Per element nearest: never worse than ggml's own codes for the same scales.
  CHECK(err <= ggml_err);
}

TEST_CASE("where the values cannot tell the codes apart, the reference's stay", "[ggml][requantize]") {
  // A Q4_0 block with d = 0 (every code reads 0, as ggml writes when a tiny block's F16
  // scale underflows): whatever the input, the codes are G's.
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = float(i - 16) / 8.0f;
  std::vector<uint8_t> ref(18, 0x5A);
  ref[0] = ref[1] = 0;
  std::vector<uint8_t> got(18);
  REQUIRE(amn::requantize_ggml(amn::GgmlType::Q4_0, x.data(), ref.data(), got.data(), 1));
  CHECK(got == ref);
  // MXFP4's codes 0 and 8 both read +0: a zero keeps G's code 8, and takes 0 from
  // another code.
  std::vector<uint8_t> mx(17, 0x88);
  mx[0] = 127;  // scale 2^-1
  std::vector<float> zeros(32, 0.0f);
  std::vector<uint8_t> mgot(17);
  REQUIRE(amn::requantize_ggml(amn::GgmlType::MXFP4, zeros.data(), mx.data(), mgot.data(), 1));
  CHECK(mgot == mx);
  mx[1] = 0x11;  // elements 0 and 16 read +0.5: a zero is nearer code 0
  REQUIRE(amn::requantize_ggml(amn::GgmlType::MXFP4, zeros.data(), mx.data(), mgot.data(), 1));
  CHECK(mgot[1] == 0x00);
  CHECK(std::vector<uint8_t>(mgot.begin() + 2, mgot.end()) == std::vector<uint8_t>(mx.begin() + 2, mx.end()));
}

TEST_CASE("re-encoding refuses the types it cannot write", "[ggml][requantize]") {
  std::vector<float> x(256, 1.0f);
  std::vector<uint8_t> ref(512, 0), out(512, 0xAB);
  CHECK(!amn::requantize_ggml(amn::GgmlType::Q8_K, x.data(), ref.data(), out.data(), 1));
  CHECK(!amn::requantize_ggml(amn::GgmlType::F32, x.data(), ref.data(), out.data(), 1));
  CHECK(out == std::vector<uint8_t>(512, 0xAB));
  CHECK(!amn::ggml_can_requantize(amn::GgmlType::Q8_1));
}
