// ggml's IQ / ternary / FP4 / 1-2-bit encoders (kernels/ggml/quantize_iq.h) beyond their
// bytes (test_ggml_quantize.cpp compares every type with ggml's ggml_quantize_chunk
// output through the encoder table): the round trip's error, the refusals without an
// importance matrix, and hostile rows.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/ggml_type.h"
#include "kernels/ggml/dequantize.h"
#include "kernels/ggml/quantize_iq.h"
#include "support.h"

namespace {

using QuantizeFn = size_t (*)(const float*, void*, int64_t, int64_t, const float*);

struct Encoder {
  amn::GgmlType type;
  QuantizeFn fn;
  bool plain;    // runs without an imatrix (ggml wrote <TYPE>.q)
  double rms;    // bound on the round trip's relative RMS error (ggml's bytes meet it)
};

using T = amn::GgmlType;
const Encoder kEncoders[] = {
    {T::IQ4_NL, amn::ggml::quantize_iq4_nl, true, 0.1},
    {T::IQ4_XS, amn::ggml::quantize_iq4_xs, true, 0.1},
    {T::TQ1_0, amn::ggml::quantize_tq1_0, true, 0.88},
    {T::TQ2_0, amn::ggml::quantize_tq2_0, true, 0.88},
    {T::MXFP4, amn::ggml::quantize_mxfp4, true, 0.15},
    {T::NVFP4, amn::ggml::quantize_nvfp4, true, 0.14},
    {T::Q1_0, amn::ggml::quantize_q1_0, true, 0.7},
    {T::Q2_0, amn::ggml::quantize_q2_0, true, 0.8},
    {T::IQ3_S, amn::ggml::quantize_iq3_s, true, 0.18},
    {T::IQ3_XXS, amn::ggml::quantize_iq3_xxs, true, 0.24},
    {T::IQ2_XXS, amn::ggml::quantize_iq2_xxs, false, 0.43},
    {T::IQ2_XS, amn::ggml::quantize_iq2_xs, false, 0.38},
    {T::IQ2_S, amn::ggml::quantize_iq2_s, true, 0.33},
    {T::IQ1_S, amn::ggml::quantize_iq1_s, false, 0.68},
    {T::IQ1_M, amn::ggml::quantize_iq1_m, true, 0.64},
};

constexpr int64_t kRows = 16, kCols = 256;

std::vector<float> read_floats(const std::string& rel) {
  const auto bytes = amn::test::read_file(amn::test::fixture_path(rel));
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

size_t row_bytes(amn::GgmlType type) {
  const auto* t = amn::ggml_traits(type);
  return kCols / t->block_elements * t->block_bytes;
}

}  // namespace

TEST_CASE("ggml encoders: the bytes decode close to the input", "[ggml-quantize]") {
  // A coarse check of the encoders' meaning, beside the exact bytes: the relative RMS
  // error of each type's round trip over the Gaussian rows, with the imatrix, stays
  // within about 1.2x what ggml's bytes give (a zero block gives 1, a flipped sign 2).
  // The ternary and 1-bit types with an absmax or mean scale are inherently near 0.8.
  const auto input = read_floats("ggml_quant/input.f32");
  const auto imatrix = read_floats("ggml_quant/imatrix.f32");
  for (const Encoder& e : kEncoders) {
    const auto* t = amn::ggml_traits(e.type);
    std::vector<uint8_t> q(row_bytes(e.type));
    std::vector<float> back(kCols);
    for (int row : {0, 1, 2, 10, 13}) {  // plain Gaussians at several scales
      const float* x = input.data() + row * kCols;
      REQUIRE(e.fn(x, q.data(), 1, kCols, imatrix.data()) == q.size());
      amn::dequantize_ggml(e.type, q.data(), back.data(), kCols / t->block_elements);
      double err = 0, ref = 0;
      for (int i = 0; i < kCols; ++i) {
        err += (double(back[i]) - x[i]) * (double(back[i]) - x[i]);
        ref += double(x[i]) * x[i];
      }
      INFO(t->name << " row " << row);
      CHECK(std::sqrt(err / ref) < e.rms);
    }
  }
}

TEST_CASE("ggml encoders: IQ2_XXS, IQ2_XS and IQ1_S refuse to run without an imatrix", "[ggml-quantize]") {
  const auto input = read_floats("ggml_quant/input.f32");
  std::vector<uint8_t> q(4096, 0x5A);
  for (const Encoder& e : kEncoders) {
    if (e.plain) continue;
    INFO(amn::ggml_traits(e.type)->name);
    CHECK(e.fn(input.data(), q.data(), 1, kCols, nullptr) == 0);
    CHECK(q[0] == 0x5A);
  }
}

TEST_CASE("ggml encoders: NaN, infinite and huge rows give whole blocks, no crash", "[ggml-quantize]") {
  std::vector<float> x(kCols);
  for (int i = 0; i < kCols; ++i) x[i] = float(i % 7) - 3.0f;
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[40] = std::numeric_limits<float>::infinity();
  x[77] = -std::numeric_limits<float>::infinity();
  x[130] = 3e38f;
  x[200] = -std::numeric_limits<float>::denorm_min();
  const std::vector<float> imatrix(kCols, 1.0f);
  for (const Encoder& e : kEncoders) {
    INFO(amn::ggml_traits(e.type)->name);
    std::vector<uint8_t> q(row_bytes(e.type));
    CHECK(e.fn(x.data(), q.data(), 1, kCols, imatrix.data()) == q.size());
  }
}
