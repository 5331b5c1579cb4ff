// ggml encoders against ggml's own output (fixtures/ggml_quant, written by
// ggml_quantize_chunk: its README says which ggml and what was called), byte for byte,
// for every type with an encoder, with and without the importance matrix; the first
// differing block is named. Types without an encoder must refuse (write nothing).
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/ggml_type.h"
#include "kernels/ggml/quantize.h"
#include "support.h"

namespace {

constexpr int64_t kRows = 16;
constexpr int64_t kCols = 256;

std::vector<float> read_floats(const std::string& rel) {
  const auto bytes = amn::test::read_file(amn::test::fixture_path(rel));
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

// "" when equal, else where the first difference is (row, block, byte within it).
std::string first_difference(const amn::GgmlTraits& t, const std::vector<uint8_t>& got,
                             const std::vector<uint8_t>& want) {
  if (got.size() != want.size()) return "size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    const size_t block = i / t.block_bytes;
    const size_t per_row = kCols / t.block_elements;
    char buf[160];
    std::snprintf(buf, sizeof buf, "row %zu block %zu byte %zu: got 0x%02X, ggml 0x%02X", block / per_row,
                  block % per_row, i % t.block_bytes, got[i], want[i]);
    return buf;
  }
  return "";
}

// Every type ggml quantizes (the fixture files' names).
const char* const kTypes[] = {"F16",   "BF16",   "Q8_0",   "Q4_0",    "Q4_1",    "Q5_0",   "Q5_1",  "Q2_K",
                              "Q3_K",  "Q4_K",   "Q5_K",   "Q6_K",    "IQ4_NL",  "IQ4_XS", "IQ3_S", "IQ3_XXS",
                              "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_S",  "IQ1_M",   "TQ1_0",  "TQ2_0", "MXFP4",
                              "NVFP4", "Q1_0",   "Q2_0"};

}  // namespace

TEST_CASE("ggml encoders write ggml_quantize_chunk's bytes", "[ggml][quantize]") {
  const auto input = read_floats("ggml_quant/input.f32");
  const auto imatrix = read_floats("ggml_quant/imatrix.f32");
  REQUIRE(input.size() == size_t(kRows * kCols));
  REQUIRE(imatrix.size() == size_t(kCols));
  int checked = 0;
  for (const char* name : kTypes) {
    const auto type = amn::ggml_type_from_name(name);
    REQUIRE(type);
    const amn::GgmlTraits& t = *amn::ggml_traits(*type);
    const size_t bytes = size_t(kRows) * (kCols / t.block_elements) * t.block_bytes;
    if (!amn::ggml_can_quantize(*type)) {
      std::vector<uint8_t> out(bytes, 0xAB);
      CHECK(amn::quantize_ggml(*type, input.data(), out.data(), kRows, kCols, imatrix.data()) == 0);
      CHECK(out == std::vector<uint8_t>(bytes, 0xAB));
      continue;
    }
    for (const bool weighted : {false, true}) {
      const std::string file = std::string("ggml_quant/") + name + (weighted ? ".imatrix.q" : ".q");
      if (!std::filesystem::exists(amn::test::fixture_path(file))) {
        // ggml writes no such file: it ignores the matrix, or (no matrix) refuses the type.
        CHECK((weighted ? !amn::ggml_quantize_reads_imatrix(*type) : amn::ggml_quantize_requires_imatrix(*type)));
        continue;
      }
      const auto want = amn::test::read_file(amn::test::fixture_path(file));
      std::vector<uint8_t> got(bytes + 1, 0xCD);  // +1: one byte after the end, untouched
      // An odd address: the encoders must not need aligned output.
      const size_t written = amn::quantize_ggml(*type, input.data(), got.data() + 1, kRows, kCols,
                                                weighted ? imatrix.data() : nullptr);
      std::vector<uint8_t> out(got.begin() + 1, got.end());
      INFO(file);
      CHECK(written == bytes);
      CHECK(first_difference(t, out, want) == "");
      ++checked;
    }
  }
  CHECK(checked >= 2);
}

TEST_CASE("ggml encoders refuse what ggml_quantize_chunk asserts against", "[ggml][quantize]") {
  std::vector<float> x(512, 1.0f);
  std::vector<uint8_t> out(4096, 0);
  // A row that is not a whole number of blocks.
  CHECK(amn::quantize_ggml(amn::GgmlType::Q4_0, x.data(), out.data(), 1, 48, nullptr) == 0);
  CHECK(amn::quantize_ggml(amn::GgmlType::Q4_K, x.data(), out.data(), 1, 128, nullptr) == 0);
  // Types that are not ggml block targets.
  CHECK(amn::quantize_ggml(amn::GgmlType::Q8_K, x.data(), out.data(), 1, 256, nullptr) == 0);
  CHECK(amn::quantize_ggml(amn::GgmlType::Q4_2, x.data(), out.data(), 1, 256, nullptr) == 0);
  CHECK(amn::quantize_ggml(static_cast<amn::GgmlType>(999), x.data(), out.data(), 1, 256, nullptr) == 0);
  // ggml_quantize_requires_imatrix.
  CHECK(amn::ggml_quantize_requires_imatrix(amn::GgmlType::IQ2_XXS));
  CHECK(amn::quantize_ggml(amn::GgmlType::IQ2_XXS, x.data(), out.data(), 1, 256, nullptr) == 0);
  CHECK(!amn::ggml_quantize_requires_imatrix(amn::GgmlType::Q4_K));
}

TEST_CASE("ggml type names are read case-insensitively", "[ggml]") {
  CHECK(amn::ggml_type_from_name("q4_k") == amn::GgmlType::Q4_K);
  CHECK(amn::ggml_type_from_name("IQ2_XXS") == amn::GgmlType::IQ2_XXS);
  CHECK(amn::ggml_type_from_name("bf16") == amn::GgmlType::BF16);
  CHECK(!amn::ggml_type_from_name("Q4_2"));
  CHECK(!amn::ggml_type_from_name("Q4_K_M"));
  CHECK(!amn::ggml_type_from_name(""));
}
