// The forget encoders' Highway kernels (kernels/lethe/*_simd.cpp) against the scalar
// reference (AMN_FORCE_IMPL=scalar's code, itself checked against the producers in
// test_lethe_*.cpp), byte for byte, under every implementation this binary can run
// (amn::available_impls + force_impl): absmax, NF4 / FP4 (with given absmax and FP4's
// signed zero too), LLM.int8() (with SCB given too), fp8-block and the compressed-tensors
// fp8 layouts in F32 / BF16 / F16, MLX affine (2 to 8 bits) and MLX's mxfp4 / nvfp4 / mxfp8
// in F32 / BF16 / F16, bitsandbytes' quantize_blockwise (double quantization's second
// pass), on adversarial values (ties at the codebook midpoints, E4M3's and F16's halfway
// points, zeros, subnormals, +-Inf, NaNs of both signs, all-zero blocks) and odd lengths,
// with scales that make the ties exact.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/bytes.h"
#include "core/dtype.h"
#include "kernels/cast.h"
#include "kernels/lethe/bnb_encode.h"
#include "kernels/lethe/fp8_ct_encode.h"
#include "kernels/lethe/fp8_encode.h"
#include "kernels/lethe/mlx_encode.h"
#include "kernels/lethe/mlx_fp_encode.h"
#include "kernels/lethe/mxfp4_encode.h"
#include "kernels/lethe/nvfp4_encode.h"
#include "kernels/lethe/torch_ops.h"
#include "kernels/quant/fp4_values.h"
#include "kernels/quant/packed.h"

using namespace amn;
using namespace amn::lethe;

namespace {

struct RestoreImpl {
  std::string saved{amn::active_impl_name()};
  ~RestoreImpl() { amn::force_impl(saved); }
};

float from_bits(uint32_t u) { return bit_cast<float>(u); }

// Values every encoder must treat as the reference does. `unit`: the values the codebook
// ties sit at (absmax 1 blocks hold them exactly).
std::vector<float> special_values() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.0f, -0.0f, inf, -inf, from_bits(0x7FC00000u), from_bits(0xFFC00000u),
                          from_bits(0x7F800001u), from_bits(0xFFA00001u), from_bits(0x00000001u),
                          from_bits(0x80000001u), from_bits(0x007FFFFFu), from_bits(0x00800000u),
                          std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 1.0f, -1.0f,
                          65504.0f, 65519.99f, 65520.0f, -65520.0f, 5.960464477539063e-08f, 2.98023224e-08f,
                          8.9406967e-08f, 6.1035156e-05f, 448.0f, 464.0f, 479.99f, 480.0f, -464.0f, 0.015625f,
                          0.001953125f, 0.0009765625f, 0.0029296875f, 1e-40f, -1e-40f, 127.5f, -127.5f, 128.5f,
                          -128.5f, 255.5f, 1e10f, -3e9f};
  // E4M3's halfway points and their neighbours: m.5 ulps of every binade in [2^-9, 448].
  for (int e = -9; e <= 8; ++e)
    for (int m = 0; m < 8; ++m) {
      const float half = std::ldexp(1.0f + (m + 0.5f) / 8.0f, e);
      const float sub = std::ldexp(m + 0.5f, -9);  // subnormal grid
      for (float x : {half, sub}) {
        v.push_back(x);
        v.push_back(-x);
        v.push_back(std::nextafter(x, 0.0f));
        v.push_back(std::nextafter(x, inf));
      }
    }
  // F16's halfway points (LLM.int8() rounds to F16 first).
  for (uint32_t h : {0x0001u, 0x0002u, 0x03FFu, 0x0400u, 0x3C00u, 0x3C01u, 0x7BFEu, 0x7BFFu}) {
    const float a = scalar::f16_to_f32(static_cast<uint16_t>(h)), b = scalar::f16_to_f32(static_cast<uint16_t>(h + 1));
    const float mid = (a + b) / 2;
    v.push_back(mid);
    v.push_back(-mid);
    v.push_back(std::nextafter(mid, 0.0f));
  }
  for (int k = -140; k <= 140; ++k) v.push_back(k + 0.5f);  // ties of round-half-even
  return v;
}

// n values: weight-like normals, with the specials and all-zero / NaN / Inf stretches sown in.
std::vector<float> adversarial(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  const auto specials = special_values();
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = rng() % 16;
    if (r == 0) v[i] = specials[rng() % specials.size()];
    if (r == 1) v[i] *= 1e4f;
  }
  // A stretch of zeros, one of halves (-0.0 among them), and one of a block's midpoint ties.
  for (size_t i = n / 3; i < n / 3 + 300 && i < n; ++i) v[i] = 0.0f;
  for (size_t i = n / 2; i < n / 2 + 64 && i < n; ++i) v[i] = (i % 2) ? -0.0f : 0.5f;
  return v;
}

// Blocks of absmax exactly 1 holding the midpoints of the codebook's sorted codes (the ties
// of its bucketize) and their neighbours.
std::vector<float> codebook_ties(Bnb4Type type, size_t n) {
  const float* code = bnb4_quant_map(type);
  std::vector<float> sorted(code, code + 16);
  std::sort(sorted.begin(), sorted.end());
  std::vector<float> pool;
  for (int i = 0; i < 15; ++i) {
    const float mid = (sorted[i] + sorted[i + 1]) / 2.0f;
    for (float x : {mid, std::nextafter(mid, -2.0f), std::nextafter(mid, 2.0f)}) pool.push_back(x);
  }
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i % 32 == 0 ? 1.0f : pool[(i * 7) % pool.size()];
  return v;
}

template <class T>
std::vector<uint8_t> bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Runs `encode` under the reference and under every implementation; each output must be
// the reference's bytes.
void check_every_impl(const std::string& what, const std::function<std::vector<uint8_t>()>& encode) {
  RestoreImpl restore;
  REQUIRE(amn::force_impl("scalar"));
  const auto want = encode();
  for (auto impl : amn::available_impls()) {
    REQUIRE(amn::force_impl(impl));
    const auto got = encode();
    INFO(what << " under " << impl);
    REQUIRE(got.size() == want.size());
    size_t first = want.size();
    for (size_t i = 0; i < want.size() && first == want.size(); ++i)
      if (got[i] != want[i]) first = i;
    INFO("first differing byte " << first);
    CHECK(first == want.size());
  }
}

}  // namespace

TEST_CASE("lethe simd: absmax on every implementation (NaN first, odd lengths)", "[lethe][simd]") {
  const auto v = adversarial(5000, 1);
  std::vector<float> finite;
  for (float x : v)
    if (!std::isnan(x)) finite.push_back(x);
  check_every_impl("absmax", [&] {
    std::vector<float> out;
    for (const auto* src : std::vector<const std::vector<float>*>{&v, &finite})
      for (size_t n : {0, 1, 2, 7, 15, 16, 17, 31, 33, 63, 64, 65, 100, 1000, 4999})
        for (size_t at : {0, 3, 41}) out.push_back(absmax(src->data() + at, std::min(n, src->size() - at)));
    return bytes(out);
  });
}

TEST_CASE("lethe simd: NF4 / FP4 on every implementation", "[lethe][simd]") {
  for (const auto type : {Bnb4Type::nf4, Bnb4Type::fp4}) {
    for (const uint64_t blocksize : {32, 64, 128, 4096}) {
      for (const uint64_t n : {blocksize, 3 * blocksize + 1, 5 * blocksize + blocksize / 2, 9000 + 2 * blocksize}) {
        const std::string name = std::string(type == Bnb4Type::nf4 ? "nf4" : "fp4") + " blocksize " +
                                 std::to_string(blocksize) + " n " + std::to_string(n);
        for (const auto& v : {adversarial(n, uint32_t(n + blocksize)), codebook_ties(type, n)}) {
          const uint64_t blocks = (n + blocksize - 1) / blocksize;
          check_every_impl(name, [&] {
            std::vector<uint8_t> packed((n + 1) / 2);
            std::vector<float> absmax(blocks);
            bnb4_quantize(type, v.data(), n, blocksize, packed.data(), absmax.data());
            std::vector<float> again(blocks);
            bnb4_absmax(v.data(), n, blocksize, again.data());
            auto out = bytes(packed);
            for (const auto& part : {bytes(absmax), bytes(again)}) out.insert(out.end(), part.begin(), part.end());
            return out;
          });
          // Given absmax (--reuse-scales): zero, negative, subnormal, Inf and NaN ones too.
          std::vector<float> given(blocks);
          const float odd[] = {0.0f, -1.0f, 1e-40f, std::numeric_limits<float>::infinity(), from_bits(0x7FC00000u), 1.0f};
          for (uint64_t b = 0; b < blocks; ++b) given[b] = b % 3 == 0 ? odd[b / 3 % 6] : 0.05f * float(b % 7 + 1);
          for (const bool signed_zero : {false, true})
            check_every_impl(name + " with absmax, signed zero " + std::to_string(signed_zero), [&] {
              std::vector<uint8_t> packed((n + 1) / 2);
              bnb4_quantize_with_absmax(type, v.data(), n, blocksize, given.data(), packed.data(), signed_zero);
              return packed;
            });
        }
      }
    }
  }
}

TEST_CASE("lethe simd: LLM.int8() rows on every implementation", "[lethe][simd]") {
  for (const uint64_t cols : {1, 5, 16, 17, 33, 64, 129, 4099}) {
    const auto v = adversarial(cols * 9, uint32_t(cols));
    check_every_impl("int8 cols " + std::to_string(cols), [&] {
      std::vector<int8_t> q(v.size());
      std::vector<float> scb(9);
      for (uint64_t r = 0; r < 9; ++r) bnb_int8_quantize_row(v.data() + r * cols, cols, q.data() + r * cols, &scb[r]);
      auto out = bytes(q);
      const auto s = bytes(scb);
      out.insert(out.end(), s.begin(), s.end());
      return out;
    });
    // Rows of small weights, whose F16 subnormals (below 2^-14) may or may not round to a
    // nonzero code: row absmax around 127 / 8192 and below, where the kernel's shortcut
    // that rounds them as normal values (|scale| < 2^13) stops applying.
    for (const float sd : {0.0005f, 0.002f, 0.004f, 0.006f}) {
      std::mt19937 rng(uint32_t(cols * 31) + uint32_t(sd * 1e4f));
      std::normal_distribution<float> normal(0.0f, sd);
      std::vector<float> small(cols * 9);
      for (size_t i = 0; i < small.size(); ++i) {
        // Every 5th a midpoint between two F16 subnormals (a tie of F16's rounding), or its neighbour.
        const float a = scalar::f16_to_f32(static_cast<uint16_t>(1 + rng() % 1022));
        const float mid = (a + scalar::f16_to_f32(static_cast<uint16_t>(scalar::f32_to_f16(a) + 1))) / 2;
        small[i] = i % 5 == 0 ? (rng() % 2 ? -1.0f : 1.0f) * (rng() % 3 ? mid : std::nextafter(mid, 1.0f)) : normal(rng);
      }
      check_every_impl("int8 small rows sd " + std::to_string(sd) + " cols " + std::to_string(cols), [&] {
        std::vector<int8_t> q(small.size());
        std::vector<float> scb(9);
        for (uint64_t r = 0; r < 9; ++r) bnb_int8_quantize_row(small.data() + r * cols, cols, q.data() + r * cols, &scb[r]);
        return bytes(q);
      });
    }
    // SCB given: 127 makes the row's scale 1 (so k + 0.5 are ties), small ones wrap past
    // int8 and past int32, and the degenerate ones.
    for (const float scb : {127.0f, 1.0f, 0.5f, 1e-3f, 1e-9f, 0.0f, -2.0f, 1e-40f, std::numeric_limits<float>::infinity(),
                            from_bits(0x7FC00000u)})
      check_every_impl("int8 with SCB " + std::to_string(scb) + " cols " + std::to_string(cols), [&] {
        std::vector<int8_t> q(v.size());
        for (uint64_t r = 0; r < 9; ++r) bnb_int8_quantize_row_with_scb(v.data() + r * cols, cols, scb, q.data() + r * cols);
        return bytes(q);
      });
  }
}

TEST_CASE("lethe simd: fp8-block on every implementation", "[lethe][simd]") {
  struct Shape {
    uint64_t rows, cols;
    Fp8Block block;
  };
  for (const Shape& s : {Shape{256, 384, {128, 128}}, Shape{130, 300, {128, 128}}, Shape{7, 45, {3, 5}},
                         Shape{33, 70, {16, 32}}}) {
    const auto v = adversarial(s.rows * s.cols, uint32_t(s.rows * s.cols));
    const std::string name = "fp8-block " + std::to_string(s.rows) + "x" + std::to_string(s.cols);
    const uint64_t tiles = ((s.rows + s.block.rows - 1) / s.block.rows) * ((s.cols + s.block.cols - 1) / s.block.cols);
    check_every_impl(name, [&] {
      std::vector<float> scale(tiles), scale_inv(tiles);
      fp8_block_scales(v.data(), s.cols, 0, s.rows, s.block, scale.data(), scale_inv.data());
      std::vector<uint8_t> codes(v.size());
      fp8_block_quantize_rows(v.data(), s.cols, 0, s.rows, s.block, scale.data(), codes.data());
      for (const auto& part : {bytes(scale), bytes(scale_inv)}) codes.insert(codes.end(), part.begin(), part.end());
      return codes;
    });
    // Given scales: 1 (E4M3's ties exact), and the degenerate ones (0 x Inf products).
    for (const float k : {1.0f, 0.0f, std::numeric_limits<float>::infinity(), 1e30f, 1e-30f, -3.0f})
      check_every_impl(name + " scale " + std::to_string(k), [&] {
        std::vector<float> scale(tiles, k);
        std::vector<uint8_t> codes(v.size());
        fp8_block_quantize_rows(v.data(), s.cols, 0, s.rows, s.block, scale.data(), codes.data());
        return codes;
      });
  }
}

TEST_CASE("lethe simd: compressed-tensors fp8 in F32, BF16, F16 on every implementation", "[lethe][simd]") {
  for (const uint64_t cols : {1, 17, 64, 301}) {
    const uint64_t rows = 11;
    auto v = adversarial(rows * cols, uint32_t(cols + 7));
    for (const DType src : {DType::F32, DType::BF16, DType::F16}) {
      // The weight's values are values of its dtype.
      std::vector<float> w(v.size());
      for (size_t i = 0; i < v.size(); ++i) w[i] = round_to(v[i], src);
      const std::string name = "fp8-ct " + std::string(dtype_info(src).name) + " cols " + std::to_string(cols);
      for (const bool zero_point : {false, true}) {
        check_every_impl(name + " channel", [&] {
          std::vector<float> scale(rows);
          ct_fp8_channel_scales(w.data(), cols, 0, rows, src, scale.data());
          std::vector<uint8_t> codes(w.size());
          ct_fp8_quantize_rows(w.data(), cols, 0, rows, src, scale.data(), true, zero_point, codes.data());
          const auto s = bytes(scale);
          codes.insert(codes.end(), s.begin(), s.end());
          return codes;
        });
        for (const float k : {1.0f, 0.0f, std::numeric_limits<float>::infinity(), 1e-30f, -2.0f, 3.0f})
          check_every_impl(name + " tensor scale " + std::to_string(k), [&] {
            std::vector<uint8_t> codes(w.size());
            ct_fp8_quantize_rows(w.data(), cols, 0, rows, src, &k, false, zero_point, codes.data());
            return codes;
          });
      }
    }
  }
}

TEST_CASE("lethe simd: NVFP4 in F32, BF16, F16 on every implementation", "[lethe][simd]") {
  for (const uint64_t cols : {16, 48, 256}) {
    const uint64_t rows = 13;
    const auto v = adversarial(rows * cols, uint32_t(cols + 11));
    for (const DType src : {DType::F32, DType::BF16, DType::F16}) {
      std::vector<float> w(v.size());
      for (size_t i = 0; i < v.size(); ++i) w[i] = round_to(v[i], src);
      std::vector<float> finite;
      for (float x : w) finite.push_back(std::isfinite(x) ? x : 0.5f);
      const std::string name = "nvfp4 " + std::string(dtype_info(src).name) + " cols " + std::to_string(cols);
      for (const auto* values : std::vector<const std::vector<float>*>{&w, &finite})
        for (const bool signed_zero : {false, true})
          check_every_impl(name + " signed zero " + std::to_string(signed_zero), [&] {
            const float g = nvfp4_global_scale(absmax(values->data(), values->size()), src);
            std::vector<uint8_t> scales(rows * cols / 16), packed(rows * cols / 2);
            nvfp4_block_scales(values->data(), cols, 0, rows, src, g, scales.data());
            nvfp4_quantize_rows(values->data(), cols, 0, rows, scales.data(), g, packed.data(), signed_zero);
            packed.insert(packed.end(), scales.begin(), scales.end());
            return packed;
          });
      // Given scales (--reuse-scales): every E4M3 code, NaN codes included, and odd globals.
      std::vector<uint8_t> given(rows * cols / 16);
      for (size_t i = 0; i < given.size(); ++i) given[i] = static_cast<uint8_t>(i * 37 + 5);
      for (const float g : {1.0f, 448.0f * 6.0f, 1e-30f, std::numeric_limits<float>::infinity()})
        check_every_impl(name + " given scales, global " + std::to_string(g), [&] {
          std::vector<uint8_t> packed(rows * cols / 2);
          nvfp4_quantize_rows(w.data(), cols, 0, rows, given.data(), g, packed.data());
          return packed;
        });
    }
  }
}

TEST_CASE("lethe simd: MXFP4 on every implementation", "[lethe][simd]") {
  for (const uint64_t cols : {32, 96, 512}) {
    const uint64_t rows = 9;
    const auto v = adversarial(rows * cols, uint32_t(cols + 5));
    // Values spread over many binades, so that quotients reach E2M1's subnormal and tiny range.
    std::vector<float> wide(v.size());
    std::mt19937 rng{static_cast<uint32_t>(cols)};
    for (size_t i = 0; i < wide.size(); ++i) wide[i] = v[i] * std::ldexp(1.0f, int(rng() % 60) - 30);
    // E2M1's rounding ties: groups whose max is 6 (scale 1) holding every midpoint and its
    // BF16 neighbours (the values are rounded to BF16 first), both signs.
    std::vector<float> pool;
    for (const float m : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 5.75f})
      for (int k = -2; k <= 2; ++k)
        for (const float sign : {1.0f, -1.0f}) pool.push_back(sign * bit_cast<float>(bit_cast<uint32_t>(m) + uint32_t(k * 65536)));
    std::vector<float> ties(v.size());
    for (size_t i = 0; i < ties.size(); ++i) ties[i] = i % 32 == 0 ? 6.0f : pool[i % pool.size()];
    for (const auto* values : std::vector<const std::vector<float>*>{&v, &wide, &ties}) {
      check_every_impl("mxfp4 cols " + std::to_string(cols), [&] {
        std::vector<uint8_t> blocks(rows * cols / 2), scales(rows * cols / 32);
        mxfp4_quantize_rows(values->data(), rows, cols, blocks.data(), scales.data());
        blocks.insert(blocks.end(), scales.begin(), scales.end());
        return blocks;
      });
      // Given scales: every exponent byte, 0 and 255 included.
      std::vector<uint8_t> given(rows * cols / 32);
      for (size_t i = 0; i < given.size(); ++i) given[i] = static_cast<uint8_t>(i * 29 + (i % 3 == 0 ? 0 : 100));
      given[0] = 0;
      given.back() = 255;
      check_every_impl("mxfp4 given scales cols " + std::to_string(cols), [&] {
        std::vector<uint8_t> blocks(rows * cols / 2), scales = given;
        mxfp4_quantize_rows(values->data(), rows, cols, blocks.data(), scales.data(), true);
        return blocks;
      });
    }
  }
}

TEST_CASE("lethe simd: MLX affine 2, 3, 4, 5, 6 and 8 bits on every implementation", "[lethe][simd]") {
  for (const uint64_t group : {32, 64, 128}) {
    const uint64_t rows = 5, cols = 4 * group;
    auto v = adversarial(rows * cols, uint32_t(group + 3));
    // Groups that are all zero, all NaN, constant, one-signed, and halves (rint's ties).
    for (uint64_t j = 0; j < group; ++j) {
      v[j] = 0.0f;
      v[group + j] = from_bits(0x7FC00000u);
      v[2 * group + j] = 0.25f;
      v[3 * group + j] = float(j % 16) * 0.5f;
    }
    for (const uint32_t bits : {2u, 3u, 4u, 5u, 6u, 8u})
      for (const DType dt : {DType::F32, DType::BF16, DType::F16})
        check_every_impl("mlx affine bits " + std::to_string(bits) + " group " + std::to_string(group) + " " +
                             std::string(dtype_info(dt).name),
                         [&] {
                           const size_t es = dt == DType::F32 ? 4 : 2;
                           std::vector<uint8_t> packed(rows * cols * bits / 8), scales(rows * cols / group * es),
                               biases(scales.size());
                           mlx_affine_quantize_rows(v.data(), rows, cols, bits, group, dt, packed.data(), scales.data(),
                                                    biases.data());
                           for (const auto* part : {&scales, &biases}) packed.insert(packed.end(), part->begin(), part->end());
                           return packed;
                         });
  }
}

TEST_CASE("lethe simd: MLX mxfp4, nvfp4, mxfp8 in F32, BF16, F16 on every implementation", "[lethe][simd]") {
  using quant::MlxFpMode;
  const uint64_t rows = 7, cols = 160;  // 10 groups of 16, 5 of 32 per row; 7 rows: odd chunk ends
  auto v = adversarial(rows * cols, 21);
  // Groups that are all zero, all NaN (both signs), all +Inf, constant, and E2M1 / E4M3 ties
  // (halves and the midpoints of E2M1's codes, with a max of 6 so that the scale is 1).
  for (uint64_t j = 0; j < 32; ++j) {
    v[j] = 0.0f;
    v[32 + j] = from_bits(j % 2 ? 0xFFC00000u : 0x7FC00000u);
    v[64 + j] = std::numeric_limits<float>::infinity();
    v[96 + j] = 0.25f;
    v[128 + j] = j % 16 == 0 ? 6.0f : 0.25f + 0.5f * float(j % 12) * (j % 3 ? 1.0f : -1.0f);
  }
  // Quotients that reach E2M1's and E4M3's tiny range: each group scaled by its own power of two.
  std::vector<float> wide(v.size());
  std::mt19937 rng{9};
  for (size_t i = 0; i < wide.size(); i += 16) {
    const float k = std::ldexp(1.0f, int(rng() % 80) - 40);
    for (size_t j = i; j < i + 16; ++j) wide[j] = v[j] * k;
  }
  for (const auto* values : std::vector<const std::vector<float>*>{&v, &wide})
    for (const MlxFpMode mode : {MlxFpMode::mxfp4, MlxFpMode::nvfp4, MlxFpMode::mxfp8})
      for (const DType dt : {DType::F32, DType::BF16, DType::F16}) {
        // The weight's exact values in its dtype, as the scheme loads them.
        std::vector<float> w(*values);
        if (dt != DType::F32)
          for (auto& x : w)
            x = dt == DType::BF16 ? scalar::bf16_to_f32(scalar::f32_to_bf16(x)) : scalar::f16_to_f32(scalar::f32_to_f16(x));
        const auto& f = quant::mlx_fp_format(mode);
        check_every_impl("mlx " + std::string(quant::mlx_fp_format(mode).name) + " " + std::string(dtype_info(dt).name),
                         [&] {
                           std::vector<uint8_t> codes(rows * cols * f.bits / 8), scales(rows * cols / f.group_size);
                           mlx_fp_quantize_rows(mode, w.data(), rows, cols, dt, codes.data(), scales.data());
                           codes.insert(codes.end(), scales.begin(), scales.end());
                           return codes;
                         });
      }
}

TEST_CASE("lethe simd: quantize_blockwise (double quantization's second pass) on every implementation",
          "[lethe][simd]") {
  for (const uint64_t blocksize : {64, 256, 4096}) {
    for (const uint64_t n : {uint64_t(37), blocksize, 3 * blocksize + 5, 9000 + blocksize / 2}) {
      const std::string name = "blockwise " + std::to_string(blocksize) + " n " + std::to_string(n);
      auto v = adversarial(n, uint32_t(n + blocksize + 1));
      // The LUT's clamp and rounding: values at +-1 of the block's absmax, just past it
      // (1 / am rounds), and at the index's halfway points.
      for (uint64_t i = 0; i < n; i += 7) v[i] = (i % 14 ? 1.0f : -1.0f) * (1.0f + float(i % 5) / 65535.0f);
      // NaNs that a NaN-propagating max would keep or drop: at a block's end, start and middle.
      const uint64_t blocks = (n + blocksize - 1) / blocksize;
      for (uint64_t b = 0; b < blocks; ++b) {
        const uint64_t start = b * blocksize, end = std::min(n, start + blocksize);
        const uint64_t at[] = {end - 1, start, (start + end) / 2};
        v[at[b % 3]] = from_bits(b % 2 ? 0xFFC00000u : 0x7FC00000u);
      }
      check_every_impl(name, [&] {
        std::vector<uint8_t> codes(n);
        std::vector<float> nested(blocks);
        bnb_quantize_blockwise(v.data(), n, blocksize, bnb_dynamic_map(), codes.data(), nested.data());
        auto out = codes;
        const auto b = bytes(nested);
        out.insert(out.end(), b.begin(), b.end());
        return out;
      });
      std::vector<float> given(blocks);
      const float odd[] = {0.0f, 1e-40f, std::numeric_limits<float>::infinity(), 1.0f, 0.02f, 3e-3f};
      for (uint64_t b = 0; b < blocks; ++b) given[b] = odd[b % 6];
      check_every_impl(name + " with nested absmax", [&] {
        std::vector<uint8_t> codes(n);
        bnb_quantize_blockwise_with_absmax(v.data(), n, blocksize, bnb_dynamic_map(), given.data(), codes.data());
        return codes;
      });
    }
  }
  // bnb4_double_quant on an absmax-like array (positive, with a block of zeros among them).
  std::vector<float> absmax(5000);
  std::mt19937 rng(4);
  for (auto& a : absmax) a = std::abs(std::normal_distribution<float>(0.05f, 0.02f)(rng));
  for (size_t i = 512; i < 768; ++i) absmax[i] = 0.0f;
  check_every_impl("bnb4_double_quant", [&] {
    std::vector<uint8_t> codes(absmax.size());
    std::vector<float> nested((absmax.size() + 255) / 256);
    const float offset = bnb4_double_quant(absmax.data(), absmax.size(), codes.data(), nested.data());
    auto out = codes;
    const auto b = bytes(nested);
    out.insert(out.end(), b.begin(), b.end());
    const auto o = bytes(std::vector<float>{offset});
    out.insert(out.end(), o.begin(), o.end());
    return out;
  });
}

namespace {

// A value of dtype dt (F32, BF16 or F16) nearest x.
float in_dtype(DType dt, float x) {
  if (dt == DType::F32) return x;
  return dt == DType::BF16 ? scalar::bf16_to_f32(scalar::f32_to_bf16(x)) : scalar::f16_to_f32(scalar::f32_to_f16(x));
}

}  // namespace

TEST_CASE("lethe simd: MLX affine --reuse-scales on every implementation", "[lethe][simd]") {
  for (const uint64_t group : {32, 64, 128}) {
    const uint64_t rows = 5, cols = 4 * group, groups = rows * cols / group;
    for (const uint32_t bits : {2u, 3u, 4u, 5u, 6u, 8u})
      for (const DType dt : {DType::F32, DType::BF16, DType::F16}) {
        const size_t es = dt == DType::F32 ? 4 : 2;
        const float n_bins = float((1u << bits) - 1);
        auto v = adversarial(rows * cols, uint32_t(group + bits));
        for (auto& x : v) x = in_dtype(dt, x);
        // The reference's own scales and biases, then values that codes dequantize to
        // exactly (what remember writes), whose nearest code may be a neighbour of the
        // exact one: the correction's cases.
        std::vector<uint8_t> packed(rows * cols * bits / 8), scales(groups * es), biases(groups * es);
        {
          RestoreImpl restore;
          REQUIRE(amn::force_impl("scalar"));
          mlx_affine_quantize_rows(v.data(), rows, cols, bits, group, dt, packed.data(), scales.data(), biases.data());
        }
        std::mt19937 rng(bits * 7 + uint32_t(group));
        // Every other group's bias made large against its scale (the dtype's rounding then
        // merges neighbouring codes' values); in some, so large (2^24 scales and more) that
        // F32's rounding does too (below that, F32 groups take the kernel's path without
        // the correction, ReuseCannotCorrect).
        for (uint64_t g = 1; g < groups; g += 2) {
          const float times = g % 6 == 5 ? float(1u << 24) * float(1 + g % 7) : float(50 + g * 37 % 700);
          const float b = in_dtype(dt, quant::load_quant_float(dt, scales.data(), g) * times);
          if (dt == DType::F32) std::memcpy(&biases[g * 4], &b, 4);
          else {
            const uint16_t h = dt == DType::BF16 ? scalar::f32_to_bf16(b) : scalar::f32_to_f16(b);
            std::memcpy(&biases[g * 2], &h, 2);
          }
        }
        std::vector<float> w(v);
        size_t moved_values = 0;
        for (uint64_t g = 0; g < groups; ++g) {
          const float s = quant::load_quant_float(dt, scales.data(), g), b = quant::load_quant_float(dt, biases.data(), g);
          const auto back = [&](uint32_t c) { return in_dtype(dt, in_dtype(dt, float(c) * s) + b); };
          // The values whose nearest code is not the one that gives them (q - 1 or q + 1
          // corrects it), then random codes' values.
          std::vector<float> moved;
          for (uint32_t c = 0; c <= uint32_t(n_bins); ++c) {
            const float x = back(c);
            const float q = std::min(std::max(std::rint((x - b) / s), 0.0f), n_bins);
            if (q != float(c)) moved.push_back(x);
          }
          moved_values += moved.size();
          for (uint64_t j = 0; j < group; ++j) {
            if (!moved.empty() && j % 2 == 0) w[g * group + j] = moved[(j / 2) % moved.size()];
            else if (rng() % 4 != 0) w[g * group + j] = back(rng() % (uint32_t(n_bins) + 1));
          }
        }
        INFO("bits " << bits << " group " << group << " " << dtype_info(dt).name);
        CHECK(moved_values > 0);  // the correction has cases to make
        // Degenerate stored scales in the last groups: 0, negative, NaN, Inf, tiny.
        std::vector<uint8_t> odd_scales(scales);
        const float odd[] = {0.0f, -0.5f, from_bits(0x7FC00000u), std::numeric_limits<float>::infinity(), 1e-30f};
        for (uint64_t k = 0; k < 5; ++k) {
          const float x = in_dtype(dt, odd[k]);
          if (dt == DType::F32) std::memcpy(&odd_scales[(groups - 1 - k) * 4], &x, 4);
          else {
            const uint16_t h = dt == DType::BF16 ? scalar::f32_to_bf16(x) : scalar::f32_to_f16(x);
            std::memcpy(&odd_scales[(groups - 1 - k) * 2], &h, 2);
          }
        }
        for (const auto* sc : {&scales, &odd_scales})
          check_every_impl("mlx affine reuse bits " + std::to_string(bits) + " group " + std::to_string(group) + " " +
                               std::string(dtype_info(dt).name),
                           [&] {
                             std::vector<uint8_t> out(packed.size()), s2(*sc), b2(biases);
                             mlx_affine_quantize_rows(w.data(), rows, cols, bits, group, dt, out.data(), s2.data(),
                                                      b2.data(), true);
                             return out;
                           });
      }
  }
}

TEST_CASE("lethe simd: MLX mxfp4, nvfp4, mxfp8 --reuse-scales on every implementation", "[lethe][simd]") {
  using quant::MlxFpMode;
  const uint64_t rows = 7, cols = 160;
  for (const MlxFpMode mode : {MlxFpMode::mxfp4, MlxFpMode::nvfp4, MlxFpMode::mxfp8})
    for (const DType dt : {DType::F32, DType::BF16, DType::F16}) {
      const auto& f = quant::mlx_fp_format(mode);
      const uint64_t groups = rows * cols / f.group_size;
      // Every scale byte over the groups (E8M0 0 and 255, E4M3's 0x7F / 0xFF and zeros),
      // and values that are a code's value times the group's scale (remember's output:
      // E4M3's 480 and -0.0 among them), mixed with adversarial ones.
      std::vector<uint8_t> given(groups);
      for (uint64_t g = 0; g < groups; ++g) given[g] = static_cast<uint8_t>(g * 37 + 11);
      given[0] = 0;
      given[1] = 255;
      given[2] = 0x7F;
      given[3] = 127;  // scale 1 (E8M0) or 1.875 * 2^-8... any
      std::mt19937 rng(uint32_t(f.group_size + uint64_t(dt)));
      auto w = adversarial(rows * cols, 33);
      for (uint64_t g = 0; g < groups; ++g) {
        const float scale = mode == MlxFpMode::nvfp4 ? quant::mlx_e4m3_to_f32(given[g]) : quant::mlx_e8m0_to_f32(given[g]);
        for (uint64_t j = 0; j < f.group_size; ++j) {
          if (rng() % 4 == 0) continue;
          const uint32_t c = rng() % (f.bits == 4 ? 16 : 256);
          const float value = f.bits == 4 ? quant::kE2M1Signed[c] : quant::mlx_e4m3_to_f32(uint8_t(c));
          w[g * f.group_size + j] = value * scale;
        }
      }
      for (auto& x : w) x = in_dtype(dt, x);
      // NaNs of both signs, infinities and -0.0 in every group (the sign of a NaN's code
      // differs by dtype: BF16 makes it +NaN).
      const float specials[] = {from_bits(0xFFC00000u), from_bits(0x7FC00000u), -std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::infinity(), -0.0f};
      for (uint64_t g = 0; g < groups; ++g) {
        for (uint64_t k = 0; k < 5; ++k) w[g * f.group_size + 2 * k + 1] = specials[k];
        if (mode != MlxFpMode::mxfp8) continue;
        // E4M3's 480 (0x7F / 0xFF) times the scale, of both signs.
        const float top = 480.0f * quant::mlx_e8m0_to_f32(given[g]);
        w[g * f.group_size + 11] = in_dtype(dt, top);
        w[g * f.group_size + 13] = in_dtype(dt, -top);
      }
      check_every_impl("mlx " + std::string(f.name) + " reuse " + std::string(dtype_info(dt).name), [&] {
        std::vector<uint8_t> codes(rows * cols * f.bits / 8), scales(given);
        mlx_fp_quantize_rows(mode, w.data(), rows, cols, dt, codes.data(), scales.data(), true);
        return codes;
      });
    }
}

TEST_CASE("lethe simd: MLX fp scales at every binade's exponent threshold on every implementation", "[lethe][simd]") {
  using quant::MlxFpMode;
  for (const DType dt : {DType::F32, DType::BF16, DType::F16}) {
    const int32_t* thresholds = mlx_fp_exponent_thresholds(dt);
    REQUIRE(thresholds != nullptr);
    // Each binade's threshold is where mlx_fp_exponent steps up (its neighbours checked).
    for (int E = -149; E <= 127; ++E) {
      const uint32_t t = uint32_t(thresholds[E + 149]);
      const uint32_t hi = E >= -126 ? (E == 127 ? 0x7F800000u : uint32_t(E + 128) << 23) : uint32_t(1) << (E + 150);
      if (t == hi) continue;  // no step in this binade
      INFO("binade " << E << " threshold " << t);
      CHECK(mlx_fp_exponent(dt, bit_cast<float>(t)) == float(E + 1));
      CHECK(mlx_fp_exponent(dt, bit_cast<float>(t - 1)) == float(E));
    }
    for (const MlxFpMode mode : {MlxFpMode::mxfp4, MlxFpMode::nvfp4, MlxFpMode::mxfp8}) {
      const auto& f = quant::mlx_fp_format(mode);
      // One group per candidate amax: around each threshold (times the mode's max), every
      // power of two, subnormal scales, 0, Inf, NaN; the group's other values below it.
      std::vector<float> amax = {0.0f, std::numeric_limits<float>::infinity(), from_bits(0x7FC00000u), 1e-45f,
                                 std::numeric_limits<float>::max()};
      for (int E = -149; E <= 127; ++E) {
        const uint32_t t = uint32_t(thresholds[E + 149]);
        for (int d = -3; d <= 3; ++d) {
          for (const uint32_t step : {1u, 1u << 13, 1u << 16})
            amax.push_back(bit_cast<float>(t + uint32_t(d) * step) * f.maxval);
          amax.push_back(std::ldexp(1.0f + float(d + 3) / 8.0f, E) * f.maxval);
        }
      }
      const uint64_t cols = f.group_size * 8, rows = (amax.size() + 7) / 8;
      std::vector<float> w(rows * cols, 0.0f);
      for (size_t g = 0; g < amax.size(); ++g)
        for (uint64_t j = 0; j < f.group_size; ++j)
          w[g * f.group_size + j] = in_dtype(dt, j == g % f.group_size ? amax[g] : amax[g] * float(j % 7) / 8.0f * (j % 2 ? -1.0f : 1.0f));
      check_every_impl("mlx " + std::string(f.name) + " scales " + std::string(dtype_info(dt).name), [&] {
        std::vector<uint8_t> codes(rows * cols * f.bits / 8), scales(rows * cols / f.group_size);
        mlx_fp_quantize_rows(mode, w.data(), rows, cols, dt, codes.data(), scales.data());
        codes.insert(codes.end(), scales.begin(), scales.end());
        return codes;
      });
    }
  }
}

TEST_CASE("lethe simd: torch's float32 mean (double quantization's offset) on every implementation", "[lethe][simd]") {
  // Magnitudes spread over many binades, so that any other order of the adds rounds
  // differently; NaN-free (absmax values), signs mixed to make cancellations.
  std::mt19937 rng(17);
  std::vector<float> v(200000);
  for (auto& x : v) x = std::ldexp(std::normal_distribution<float>(0.0f, 1.0f)(rng), int(rng() % 40) - 20);
  check_every_impl("torch_mean_f32", [&] {
    std::vector<float> out;
    for (const size_t n : {1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 4097, 32767, 32768, 40000, 200000})
      for (const unsigned threads : {1u, 3u, 8u})
        for (const size_t at : {size_t(0), size_t(5)})
          out.push_back(torch_mean_f32(v.data() + at, std::min(n, v.size() - at), threads));
    return bytes(out);
  });
}

TEST_CASE("lethe simd: MLX mxfp4 / nvfp4 codes at E2M1's midpoints and around 256 on every implementation",
          "[lethe][simd]") {
  using quant::MlxFpMode;
  // The kernels' FP4 code counts midpoints for quotients below 256 and scans the 16
  // distances for the rest. Groups whose max is 6 have scale 1 in both modes, so each
  // value is its own quotient: every midpoint with its neighbours in the dtype, both signs.
  // Groups whose max saturates nvfp4's scale at 448 give quotients on both sides of 256.
  for (const DType dt : {DType::F32, DType::BF16, DType::F16}) {
    const auto step = [&](float x, int k) {  // k ulps of the dtype away from x (x > 0)
      if (dt == DType::F32) return bit_cast<float>(bit_cast<uint32_t>(x) + uint32_t(k));
      if (dt == DType::BF16) return bit_cast<float>(bit_cast<uint32_t>(x) + (uint32_t(k) << 16));
      return scalar::f16_to_f32(static_cast<uint16_t>(scalar::f32_to_f16(x) + k));
    };
    std::vector<float> pool;
    for (const float m : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f, 0.5f, 1.0f, 4.0f})
      for (int k = -2; k <= 2; ++k) {
        pool.push_back(step(m, k));
        pool.push_back(-step(m, k));
      }
    for (const float x : {0.0f, -0.0f, 1e-30f, 7.0f, 8.49f, 100.0f, 255.0f}) pool.push_back(in_dtype(dt, x));
    for (const MlxFpMode mode : {MlxFpMode::mxfp4, MlxFpMode::nvfp4}) {
      const auto& f = quant::mlx_fp_format(mode);
      const uint64_t cols = f.group_size * 4, rows = 2 * (pool.size() / f.group_size + 2);
      std::vector<float> w(rows * cols);
      for (uint64_t i = 0; i < rows * cols / 2; ++i) w[i] = i % f.group_size == 0 ? 6.0f : pool[i % pool.size()];
      // The second half: nvfp4's scale 448 (mxfp4's a power of two near it); quotients
      // 250 ... 262 in 1 / 16 steps, and a few far beyond.
      for (uint64_t i = rows * cols / 2; i < rows * cols; ++i) {
        const float q = i % f.group_size == 0 ? 300.0f : 250.0f + float(i % 193) / 16.0f;
        w[i] = in_dtype(dt, q * 448.0f * (i % 3 ? 1.0f : -1.0f));
      }
      check_every_impl("mlx " + std::string(f.name) + " E2M1 midpoints " + std::string(dtype_info(dt).name), [&] {
        std::vector<uint8_t> codes(rows * cols * f.bits / 8), scales(rows * cols / f.group_size);
        mlx_fp_quantize_rows(mode, w.data(), rows, cols, dt, codes.data(), scales.data());
        codes.insert(codes.end(), scales.begin(), scales.end());
        return codes;
      });
    }
  }
}
