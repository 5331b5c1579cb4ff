// The ggml encoders' Highway paths (kernels/ggml/quantize_legacy_simd.cpp,
// quantize_k_simd.cpp, quantize_fp4_simd.cpp, quantize_low_bit_simd.cpp,
// quantize_iq4_simd.cpp, quantize_bf16_simd.cpp, quantize_iq_simd.cpp) against the scalar restatement of ggml (AMN_FORCE_IMPL=scalar, itself
// checked against ggml's bytes in test_ggml_quantize.cpp), byte for byte, under every
// implementation this binary can run (amn::available_impls + force_impl), with and
// without an importance matrix, on rows built to catch what vectorizing can change:
// ties of magnitude between a positive and a negative value (the reference keeps the
// first), signed zeros (a min or max of zero keeps the first zero's sign), all-zero and
// constant blocks, subnormals, huge values whose ranges overflow, NaN and infinities,
// values on rounding boundaries, and rows whose block counts leave partial lane groups.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/ggml_type.h"
#include "kernels/cast.h"
#include "kernels/ggml/quantize.h"
#include "kernels/ggml/quantize_fp4_simd.h"
#include "kernels/ggml/quantize_search.h"

namespace {

struct RestoreImpl {
  std::string saved{amn::active_impl_name()};
  ~RestoreImpl() { amn::force_impl(saved); }
};

// The types whose encoders have a Highway path.
const amn::GgmlType kSimdTypes[] = {amn::GgmlType::Q4_0, amn::GgmlType::Q4_1, amn::GgmlType::Q5_0,
                                    amn::GgmlType::Q5_1, amn::GgmlType::Q8_0, amn::GgmlType::Q2_K,
                                    amn::GgmlType::Q3_K, amn::GgmlType::Q4_K, amn::GgmlType::Q5_K,
                                    amn::GgmlType::Q6_K, amn::GgmlType::MXFP4, amn::GgmlType::NVFP4,
                                    amn::GgmlType::TQ1_0, amn::GgmlType::TQ2_0, amn::GgmlType::Q1_0,
                                    amn::GgmlType::Q2_0, amn::GgmlType::IQ4_NL, amn::GgmlType::IQ4_XS,
                                    amn::GgmlType::BF16, amn::GgmlType::IQ2_XXS, amn::GgmlType::IQ2_XS,
                                    amn::GgmlType::IQ2_S, amn::GgmlType::IQ3_XXS, amn::GgmlType::IQ3_S,
                                    amn::GgmlType::IQ1_S, amn::GgmlType::IQ1_M};

// Rows of 24 blocks of 32 (a lane group of 16 and 8 more), 3 of 256; 41 rows: 246 Q1_0
// blocks, which leave a partial group of lanes (Q1_0 runs a block per lane).
constexpr int64_t kCols = 768;
constexpr int64_t kRows = 41;

// Block `kind` of 32 values (kinds cycle along the row, shifted per row).
void fill_block(float* x, int kind, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::uniform_int_distribution<int> pos(0, 31);
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int j = 0; j < 32; ++j) x[j] = normal(rng);
  switch (kind) {
    case 0: break;  // weight-like
    case 1: for (int j = 0; j < 32; ++j) x[j] = 0.0f; break;
    case 2: for (int j = 0; j < 32; ++j) x[j] = rng() % 2 ? -0.0f : 0.0f; break;
    case 3: {  // a largest magnitude shared by +a and -a, either first
      const float a = 0.3f;
      int p = pos(rng), q = pos(rng);
      if (p == q) q = (p + 7) % 32;
      x[p] = rng() % 2 ? a : -a;
      x[q] = -x[p];
      break;
    }
    case 4: for (int j = 0; j < 32; ++j) x[j] = std::ldexp(float(int(rng() % 2000) - 1000), -149); break;  // subnormal
    case 5: x[pos(rng)] = rng() % 2 ? FLT_MAX : -FLT_MAX; x[pos(rng)] = rng() % 2 ? 3e38f : -3e38f; break;
    case 6: x[pos(rng)] = nan; break;
    case 7: x[pos(rng)] = rng() % 2 ? inf : -inf; break;
    case 8: { const float c = normal(rng); for (int j = 0; j < 32; ++j) x[j] = c; break; }
    case 9: {  // on the rounding boundaries of a scale of 1/8 and 1/127
      const float s = rng() % 2 ? 1.0f / 8 : 1.0f / 127;
      for (int j = 0; j < 32; ++j) x[j] = (float(int(rng() % 17) - 8) + 0.5f) * s;
      x[pos(rng)] = 8 * s;
      break;
    }
    case 10: for (int j = 0; j < 32; ++j) x[j] = nan; break;
    case 11: {  // non-negative with zeros of both signs: min is a zero
      for (int j = 0; j < 32; ++j) x[j] = std::fabs(x[j]);
      x[pos(rng)] = -0.0f;
      x[pos(rng)] = 0.0f;
      break;
    }
    case 12: {  // non-positive with zeros of both signs: max is a zero
      for (int j = 0; j < 32; ++j) x[j] = -std::fabs(x[j]);
      x[pos(rng)] = 0.0f;
      x[pos(rng)] = -0.0f;
      break;
    }
    case 13: for (int j = 0; j < 32; ++j) x[j] *= 1e-36f; break;  // tiny normals and subnormals
    case 14: for (int j = 0; j < 32; ++j) x[j] = rng() % 2 ? x[j] * 1e-30f : x[j] * 1e4f; break;
    case 15: x[pos(rng)] = -inf; x[pos(rng)] = nan; x[pos(rng)] = inf; break;
    case 16: {  // a largest magnitude just below a power of two (MXFP4's exponent), any scale
      const int e = int(rng() % 260) - 140;
      for (int j = 0; j < 32; ++j) x[j] = std::ldexp(x[j], e);
      x[pos(rng)] = std::ldexp(2.0f - std::ldexp(float(rng() % 512 + 1), -23), e) * (rng() % 2 ? 1 : -1);
      break;
    }
    default: break;
  }
}
constexpr int kKinds = 17;

std::vector<float> adversarial_rows(uint32_t seed, bool non_finite_everywhere = false) {
  std::mt19937 rng(seed);
  std::vector<float> x(kRows * kCols);
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t b = 0; b < kCols / 32; ++b) {
      // Row r's blocks: mostly one kind (sub-blocks of a super-block alike), then mixed.
      int kind = r < kKinds ? int(r) : int((r * 7 + b * 3) % kKinds);
#ifdef __EMSCRIPTEN__
      // WebAssembly leaves the sign of a NaN that arithmetic produces nondeterministic
      // (an "arithmetic NaN"), and scalar and SIMD instructions make theirs differently
      // (Q4_1's stored min of a block with a NaN: 0xFE00 in one, 0x7E00 in the other), so
      // the non-finite rows are compared natively only.
      if (!non_finite_everywhere && (kind == 6 || kind == 7 || kind == 10 || kind == 15)) kind = 0;
#endif
      fill_block(x.data() + r * kCols + b * 32, kind, rng);
    }
  }
  return x;
}

std::vector<uint8_t> quantize(amn::GgmlType type, const std::vector<float>& x, const float* imatrix) {
  const amn::GgmlTraits& t = *amn::ggml_traits(type);
  // A byte before and after (compared too: untouched); an odd address, as the kernels
  // must not need aligned output.
  std::vector<uint8_t> out(kRows * (kCols / t.block_elements) * t.block_bytes + 2, 0xCD);
  const size_t wrote = amn::quantize_ggml(type, x.data(), out.data() + 1, kRows, kCols, imatrix);
  CHECK(wrote == out.size() - 2);
  return out;
}

// "" when equal, else the first differing block.
std::string first_difference(amn::GgmlType type, const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  const amn::GgmlTraits& t = *amn::ggml_traits(type);
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    const size_t block = (i - 1) / t.block_bytes;
    const size_t per_row = kCols / t.block_elements;
    char buf[160];
    std::snprintf(buf, sizeof buf, "row %zu block %zu byte %zu: got 0x%02X, scalar 0x%02X", block / per_row,
                  block % per_row, (i - 1) % t.block_bytes, got[i], want[i]);
    return buf;
  }
  return "";
}

}  // namespace

TEST_CASE("ggml encoders: every implementation writes the scalar code's bytes", "[ggml][quantize][simd]") {
  RestoreImpl restore;
  const auto x = adversarial_rows(20261127);
  std::vector<float> imatrix(kCols);
  std::mt19937 rng(7);
  for (auto& w : imatrix) w = rng() % 16 == 0 ? 0.0f : float(rng() % 1000 + 1) / 250.0f;
  for (const amn::GgmlType type : kSimdTypes) {
    const auto name = amn::ggml_traits(type)->name;
    for (const bool weighted : {false, true}) {
      if (weighted && !amn::ggml_quantize_reads_imatrix(type)) continue;
      if (!weighted && amn::ggml_quantize_requires_imatrix(type)) continue;
      const float* w = weighted ? imatrix.data() : nullptr;
      REQUIRE(amn::force_impl("scalar"));
      const auto want = quantize(type, x, w);
      for (auto impl : amn::available_impls()) {
        if (impl == "scalar") continue;
        REQUIRE(amn::force_impl(impl));
        INFO(name << (weighted ? " with the imatrix" : "") << " under " << impl);
        CHECK(first_difference(type, quantize(type, x, w), want) == "");
      }
    }
  }
}

TEST_CASE("ggml legacy encoders without a matrix: non-finite rows in every build", "[ggml][quantize][simd]") {
  // The legacy encoders store no arithmetic NaN without a matrix (their scales come from
  // compares of the inputs, and these rows hold no block whose max - min is inf - inf), so
  // their non-finite rows are compared in WASM too, where blocks with a NaN or an
  // infinity leave the fast path (quantize_legacy_simd.cpp's tame blocks).
  RestoreImpl restore;
  const amn::GgmlType legacy[] = {amn::GgmlType::Q4_0, amn::GgmlType::Q4_1, amn::GgmlType::Q5_0,
                                  amn::GgmlType::Q5_1, amn::GgmlType::Q8_0};
  for (const uint32_t seed : {20261127u, 1u, 2u}) {
    const auto x = adversarial_rows(seed, true);
    for (const amn::GgmlType type : legacy) {
      REQUIRE(amn::force_impl("scalar"));
      const auto want = quantize(type, x, nullptr);
      for (auto impl : amn::available_impls()) {
        if (impl == "scalar") continue;
        REQUIRE(amn::force_impl(impl));
        INFO(amn::ggml_traits(type)->name << " under " << impl << ", seed " << seed);
        CHECK(first_difference(type, quantize(type, x, nullptr), want) == "");
      }
    }
  }
}

TEST_CASE("ggml K-quant searches: a fit that moves the min above the largest value", "[ggml][quantize][simd]") {
  // quantize_k_simd.cpp finds levels in floats only while every f = iscale * (x - min)
  // is small (its "tame" lanes). This sub-block (all values negative, the largest
  // -2^-20; signed weights, as a hostile importance matrix gives) was found by a search
  // over random ones: a better fit's min is clamped to 0, above the largest value, later
  // steps' f reach 10^7, where ggml's nearest_int wraps instead of rounding, and the
  // search's result then differs from one with rounded levels (scale 0.142 and min
  // -2.34 against -0.185 and 0). It sits among seven ordinary sub-blocks (one lane group
  // of eight, or two of four); the levels, scales and mins must be the scalar code's.
  RestoreImpl restore;
  static const float kX[32] = {
      -0x1.71d59ep-1f, -0x1.cf90fap-5f, -0x1.4f5db8p-1f, -0x1.bd3a12p+0f, -0x1.099bb8p+0f, -0x1.bc6862p-5f,
      -0x1.f0e0f4p-2f, -0x1.b44aecp-2f, -0x1.2d3bap+0f, -0x1.da3b16p-1f, -0x1.a296eap-1f, -0x1.54146p-1f,
      -0x1.6ea09p+0f, -0x1.c93cb8p+0f, -0x1.b4fb68p-2f, -0x1.329756p-1f, -0x1.170e4ep+1f, -0x1.6e0f44p-3f,
      -0x1.210e5ap+0f, -0x1.d3d004p-3f, -0x1.655a4ap-4f, -0x1.27a936p-5f, -0x1.79d402p-3f, -0x1.3ebb1p-1f,
      -0x1.40c306p+1f, -0x1.b454a6p-1f, -0x1.8dd88ep+0f, -0x1.0c6f7ap-20f, -0x1.515182p-3f, -0x1.c04a3ap-2f,
      -0x1.250764p+0f, -0x1.6dfa3ap-1f};
  static const float kW[32] = {
      0x1.88780cp-1f, -0x1.ac1f0cp-2f, -0x1.e165f8p-3f, 0x1.ade72p-4f, 0x1.c32678p-1f, -0x1.3b20dp-3f,
      0x1.1f7e4p-4f, -0x1.18364p-6f, 0x1.241498p-1f, -0x1.f8fb48p-3f, -0x1.cb70ep-2f, -0x1.cf7be4p-2f,
      0x1.64b91p-2f, 0x1.f06d8p-3f, -0x1.6b9c2cp-1f, 0x1.19b4p-2f, 0x1.fd61cp-4f, -0x1.7ac4p-9f,
      0x1.146bcp-4f, -0x1.89801p-4f, 0x1.9cd99cp-1f, 0x1.0c5f7cp-1f, -0x1.bc36bcp-2f, -0x1.d0135cp-2f,
      -0x1.ad994cp-2f, 0x1.7c62p-4f, 0x1.ed9f4cp-1f, -0x1.5a24e6p-1f, 0x1.b73508p-1f, 0x1.67bddp-1f,
      -0x1.741ap-9f, -0x1.6b9a28p-1f};
  constexpr int kCount = 8, kN = 32, kOdd = 2;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> x(kCount * kN), w(kCount * kN);
  for (int k = 0; k < kCount; ++k) {
    for (int i = 0; i < kN; ++i) {
      x[k * kN + i] = k == kOdd ? kX[i] : normal(rng);
      w[k * kN + i] = k == kOdd ? kW[i] : std::fabs(x[k * kN + i]) + 0.05f;
    }
  }
  for (const bool qkx3 : {false, true}) {
    const auto run = [&](std::vector<uint8_t>& L, std::vector<float>& scales, std::vector<float>& mins) {
      L.assign(kCount * kN, 0xCD);
      scales.assign(kCount, -1.0f);
      mins.assign(kCount, -1.0f);
      const auto search = qkx3 ? amn::ggml::make_qkx3_quants_blocks : amn::ggml::make_qkx2_quants_blocks;
      search(kCount, kN, 15, x.data(), w.data(), L.data(), scales.data(), mins.data(), -1.0f, 0.1f, 20, false);
    };
    std::vector<uint8_t> want_L, got_L;
    std::vector<float> want_scales, got_scales, want_mins, got_mins;
    REQUIRE(amn::force_impl("scalar"));
    run(want_L, want_scales, want_mins);
    for (auto impl : amn::available_impls()) {
      if (impl == "scalar") continue;
      REQUIRE(amn::force_impl(impl));
      INFO((qkx3 ? "make_qkx3_quants" : "make_qkx2_quants") << " under " << impl);
      run(got_L, got_scales, got_mins);
      CHECK(got_L == want_L);
      CHECK(std::memcmp(got_scales.data(), want_scales.data(), kCount * sizeof(float)) == 0);
      CHECK(std::memcmp(got_mins.data(), want_mins.data(), kCount * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("ggml MXFP4: the exponent from the float's bits is floor(log2(amax))'s", "[ggml][quantize]") {
  // mxfp4_exponent skips log2 for a mantissa not within 2^-15 of 2; the long way (the F32
  // rounding of the double log2, floored) must agree on every exponent, at and around
  // that boundary, for the top mantissas where rounding can carry, and for subnormals.
  auto long_way = [](float amax) {
    return uint8_t(int32_t(std::floor(float(std::log2(double(amax)))) - 2 + 127));
  };
  int checked = 0, mismatches = 0;
  for (uint32_t biased = 0; biased < 255; ++biased) {
    for (uint32_t m = 0x7FFE00; m <= 0x7FFFFF; ++m) {
      for (const uint32_t mant : {m, m - 0x7F0000, m & 0x00FFFF}) {
        uint32_t bits = biased << 23 | mant;
        if (bits == 0) continue;
        float amax;
        std::memcpy(&amax, &bits, 4);
        mismatches += amn::ggml::mxfp4_exponent(amax) != long_way(amax);
        ++checked;
      }
    }
  }
  CHECK(checked == 255 * 512 * 3);
  CHECK(mismatches == 0);
  CHECK(amn::ggml::mxfp4_exponent(0.0f) == 0);
  CHECK(amn::ggml::mxfp4_exponent(std::numeric_limits<float>::quiet_NaN()) == 0);
}
