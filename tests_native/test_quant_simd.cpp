// The Highway kernels of kernels/quant (fp8-inl.h, bnb-inl.h, fp4-inl.h) against the scalar
// reference, byte for byte, under every implementation this binary can run
// (amn::available_impls + force_impl): random inputs with every code (NaN and infinity
// codes included), every scale layout and compute mode, odd lengths, odd row and element
// ranges, runs shorter than a vector, scales of 0 / subnormal / 255 (E8M0). The fixtures
// (made by the producers) are checked under every implementation in test_quant_{fp8,bnb,fp4}.cpp.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cast.h"
#include "kernels/quant/bnb.h"
#include "kernels/quant/fp4.h"
#include "kernels/quant/fp8.h"

using namespace amn;
using namespace amn::quant;

namespace {

struct RestoreImpl {
  std::string saved{active_impl_name()};
  ~RestoreImpl() { force_impl(saved); }
};

constexpr DType kTargets[] = {DType::BF16, DType::F16, DType::F32};
size_t esize(DType t) { return t == DType::F32 ? 4 : 2; }

// Runs `kernel(out)` (writing `elements` outputs of `to`) under the reference, then under
// every other implementation. Empty when all wrote the reference's bytes and nothing past
// them; otherwise the implementation and the first differing elements.
std::string compare_impls(size_t elements, DType to, const std::function<void(uint8_t*)>& kernel) {
  RestoreImpl restore;
  const size_t es = esize(to), bytes = elements * es;
  std::vector<uint8_t> want(bytes + 64, 0xA5);
  REQUIRE(force_impl("scalar"));
  kernel(want.data());
  for (auto impl : available_impls()) {
    if (impl == "scalar") continue;
    REQUIRE(force_impl(impl));
    std::vector<uint8_t> got(bytes + 64, 0xA5);
    kernel(got.data());
    if (got == want) continue;
    std::string s =
        std::string(impl) + ", " + std::to_string(elements) + " elements to " + std::string(dtype_name(to)) + ":";
    int shown = 0;
    for (size_t i = 0; i < want.size() / es && shown < 6; ++i) {
      if (std::memcmp(&want[i * es], &got[i * es], es) == 0) continue;
      uint32_t w = 0, g = 0;
      std::memcpy(&w, &want[i * es], es);
      std::memcpy(&g, &got[i * es], es);
      char buf[64];
      std::snprintf(buf, sizeof buf, " [%zu] want 0x%X got 0x%X", i, w, g);
      s += buf;
      ++shown;
    }
    return s;
  }
  return {};
}

std::vector<uint8_t> random_bytes(size_t n, std::mt19937& rng) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Scale-like values: finite, either sign, one in 8 zero or subnormal (the scale
// conversions' other branches), as bits of `dtype` (F32, BF16, F16).
std::vector<uint8_t> random_scales(DType dtype, size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> mag(1e-4f, 4.0f);
  std::vector<uint8_t> out(n * esize(dtype));
  for (size_t i = 0; i < n; ++i) {
    float f = (rng() & 1 ? -1.0f : 1.0f) * mag(rng);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if (rng() % 8 == 0) bits &= 0x8000FFFFu;  // f32 subnormal (BF16: 0 or the least subnormal; F16: 0)
    std::memcpy(&f, &bits, 4);
    if (dtype == DType::F32) {
      std::memcpy(&out[4 * i], &bits, 4);
      continue;
    }
    uint16_t h = dtype == DType::BF16 ? scalar::f32_to_bf16(f) : scalar::f32_to_f16(f);
    if (dtype == DType::F16 && rng() % 8 == 0) h &= 0x83FFu;  // F16 subnormal
    std::memcpy(&out[2 * i], &h, 2);
  }
  return out;
}

struct Fp8Layout {
  const char* name;
  uint64_t rows, cols, block_rows, block_cols;
};

}  // namespace

TEST_CASE("quant SIMD: FP8 every layout, scale dtype, compute mode and target", "[quant][quant-simd]") {
  const Fp8Layout layouts[] = {
      {"per tensor", 37, 301, 37, 301},       {"per channel", 45, 259, 1, 259},
      {"block 128", 300, 333, 128, 128},      {"block 3x5 (runs under a vector)", 19, 23, 3, 5},
      {"block 1x17", 7, 100, 1, 17},          {"one column", 50, 1, 1, 1},
      {"per channel, long rows", 5, 2501, 1, 2501},  // runs that WASM looks up in a table
  };
  std::mt19937 rng(2024);
  for (const auto& l : layouts) {
    for (DType weight : {DType::F8_E4M3, DType::F8_E5M2}) {
      for (DType scale : {DType::F32, DType::BF16, DType::F16}) {
        for (DType compute : {DType::F32, scale}) {
          if (compute == DType::F32 && scale != DType::F32 && rng() % 2) continue;  // keep the run short
          Fp8Params p;
          p.weight = weight, p.rows = l.rows, p.cols = l.cols, p.scale = scale, p.compute = compute;
          p.block_rows = l.block_rows, p.block_cols = l.block_cols;
          p.scale_rows = (l.rows + l.block_rows - 1) / l.block_rows;
          p.scale_cols = (l.cols + l.block_cols - 1) / l.block_cols;
          const auto w = random_bytes(p.rows * p.cols, rng);
          const auto s = random_scales(scale, p.scale_rows * p.scale_cols, rng);
          REQUIRE(validate_fp8(p, w.size(), s.size()));
          for (DType to : kTargets) {
            INFO(l.name << " " << dtype_name(weight) << " scale " << dtype_name(scale) << " compute "
                        << dtype_name(compute) << " -> " << dtype_name(to));
            const std::pair<uint64_t, uint64_t> ranges[] = {{0, p.rows}, {1, p.rows - 1}, {p.rows / 2, p.rows / 2 + 1}};
            for (const auto& range : ranges) {
              const uint64_t b = range.first, e = range.second;  // (clang 14 cannot capture bindings)
              if (b >= e) continue;
              CHECK(compare_impls((e - b) * p.cols, to, [&](uint8_t* out) {
                      dequantize_fp8_rows(p, w.data() + b * p.cols, s.data(), b, e, to, out);
                    }) == "");
            }
          }
        }
      }
    }
  }
}

TEST_CASE("quant SIMD: FP8 every code, unaligned weight and output", "[quant][quant-simd]") {
  // All 256 codes in a row of 256 and a scale of 1: the decoding itself, NaNs included.
  for (DType weight : {DType::F8_E4M3, DType::F8_E5M2}) {
    std::vector<uint8_t> w(256 + 3);
    for (int c = 0; c < 256; ++c) w[3 + c] = static_cast<uint8_t>(c);
    const float one = 1.0f;
    std::vector<uint8_t> s(4);
    std::memcpy(s.data(), &one, 4);
    Fp8Params p;
    p.weight = weight, p.rows = 1, p.cols = 256, p.block_rows = 1, p.block_cols = 256;
    for (DType to : kTargets) {
      INFO(dtype_name(weight) << " -> " << dtype_name(to));
      CHECK(compare_impls(256 + 1, to, [&](uint8_t* out) {
              dequantize_fp8_rows(p, w.data() + 3, s.data(), 0, 1, to, out + esize(to));
            }) == "");
    }
  }
}

TEST_CASE("quant SIMD: FP8 with E8M0 scales (MLX mxfp8), every scale byte", "[quant][quant-simd]") {
  // 16 rows of 16 groups of 32: each of the 256 E8M0 bytes scales one group, 0 (2^-127,
  // subnormal products) and 255 (+inf: NaN for zero codes) included.
  std::mt19937 rng(8);
  Fp8Params p;
  p.weight = DType::F8_E4M3, p.rows = 16, p.cols = 512, p.scale = DType::F8_E8M0;
  p.block_rows = 1, p.block_cols = 32, p.scale_rows = 16, p.scale_cols = 16;
  const auto w = random_bytes(p.rows * p.cols, rng);
  // The same without NaN codes, as quantizers write them (the kernels skip the NaN test then).
  auto finite = w;
  for (auto& c : finite)
    if ((c & 0x7F) == 0x7F) c ^= 1;
  std::vector<uint8_t> s(256);
  for (int i = 0; i < 256; ++i) s[i] = static_cast<uint8_t>(i * 7 + 3);  // a permutation of 0..255
  REQUIRE(validate_fp8(p, w.size(), s.size()));
  for (DType to : kTargets) {
    for (const std::vector<uint8_t>* codes : {&w, static_cast<const std::vector<uint8_t>*>(&finite)}) {
      INFO(dtype_name(to) << (codes == &w ? " with NaN codes" : ""));
      CHECK(compare_impls(p.rows * p.cols, to, [&](uint8_t* out) {
              dequantize_fp8_rows(p, codes->data(), s.data(), 0, p.rows, to, out);
            }) == "");
    }
  }
  // The reference's arithmetic: E4M3 0x38 (1.0) times 2^(130 - 127).
  std::vector<uint8_t> one(32, 0x38), eight(32 * 4);
  const uint8_t s130 = 130;
  Fp8Params q = p;
  q.rows = 1, q.cols = 32, q.scale_rows = 1, q.scale_cols = 1;
  dequantize_fp8_rows(q, one.data(), &s130, 0, 1, DType::F32, eight.data());
  float f;
  std::memcpy(&f, eight.data() + 4 * 31, 4);
  CHECK(f == 8.0f);
  q.compute = DType::F8_E8M0;
  CHECK(!validate_fp8(q, 32, 1));  // E8M0 is a scale format, never a compute dtype
}

TEST_CASE("quant SIMD: FP8 and int8 long runs with special scales", "[quant][quant-simd]") {
  // Runs long enough for WASM's 256-entry tables (quant-inl.h ScaledRuns), with scales
  // that make NaN, infinite, zero (either sign), overflowing and subnormal outputs.
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 0.0f, -0.0f, 3.0e38f, 1e-45f, -0.37f};
  std::mt19937 rng(31);
  const uint64_t rows = 3, cols = 4099;
  const auto w = random_bytes(rows * cols, rng);
  for (float special : specials) {
    std::vector<uint8_t> s(4 * rows);
    for (uint64_t r = 0; r < rows; ++r) std::memcpy(&s[4 * r], &special, 4);
    for (DType to : kTargets) {
      for (DType weight : {DType::F8_E4M3, DType::F8_E5M2}) {
        INFO(dtype_name(weight) << " scale " << special << " -> " << dtype_name(to));
        Fp8Params p;
        p.weight = weight, p.rows = rows, p.cols = cols, p.block_rows = 1, p.block_cols = cols, p.scale_rows = rows;
        CHECK(compare_impls(rows * cols, to, [&](uint8_t* out) {
                dequantize_fp8_rows(p, w.data(), s.data(), 0, rows, to, out);
              }) == "");
      }
      INFO("int8 SCB " << special << " -> " << dtype_name(to));
      CHECK(compare_impls(rows * cols, to, [&](uint8_t* out) {
              dequantize_bnb_int8_rows(cols, w.data(), s.data(), 0, rows, to, out);
            }) == "");
    }
  }
}

TEST_CASE("quant SIMD: bitsandbytes NF4 / FP4, odd element ranges and block sizes", "[quant][quant-simd]") {
  std::mt19937 rng(77);
  for (Bnb4Type type : {Bnb4Type::nf4, Bnb4Type::fp4}) {
    for (uint64_t blocksize : {32, 64, 128, 4096}) {
      for (uint64_t elements : {1, 31, 1001, 4099, 9000}) {
        Bnb4Params p;
        p.type = type, p.elements = elements, p.blocksize = blocksize;
        const auto packed = random_bytes((elements + 1) / 2, rng);
        std::vector<float> absmax((elements + blocksize - 1) / blocksize);
        std::uniform_real_distribution<float> mag(0.0f, 2.0f);
        for (auto& a : absmax) a = rng() % 16 == 0 ? 0.0f : mag(rng);
        REQUIRE(validate_bnb4(p, packed.size(), absmax.size()));
        const std::pair<uint64_t, uint64_t> ranges[] = {
            {0, elements}, {1, elements}, {elements / 3, elements - elements / 5}, {33, 34}, {31, 97}, {64, 127}};
        for (DType to : kTargets) {
          for (const auto& range : ranges) {
            const uint64_t b = range.first, e = range.second;
            if (b >= e || e > elements) continue;
            INFO((type == Bnb4Type::nf4 ? "nf4" : "fp4") << " blocksize " << blocksize << " [" << b << ", " << e
                                                         << ") of " << elements << " -> " << dtype_name(to));
            CHECK(compare_impls(e - b, to, [&](uint8_t* out) {
                    dequantize_bnb4(p, packed.data(), absmax, b, e, to, out);
                  }) == "");
          }
        }
      }
    }
  }
}

TEST_CASE("quant SIMD: bitsandbytes int8, odd widths and row ranges", "[quant][quant-simd]") {
  std::mt19937 rng(5);
  for (uint64_t cols : {1, 3, 17, 64, 4101}) {
    const uint64_t rows = 9;
    const auto w = random_bytes(rows * cols, rng);
    const auto scb = random_scales(DType::F32, rows, rng);
    REQUIRE(validate_bnb_int8(rows, cols, w.size(), scb.size()));
    for (DType to : kTargets) {
      for (const auto& range : {std::pair<uint64_t, uint64_t>{0, rows}, {2, 7}, {8, 9}}) {
        const uint64_t b = range.first, e = range.second;
        INFO(cols << " columns, rows [" << b << ", " << e << ") -> " << dtype_name(to));
        CHECK(compare_impls((e - b) * cols, to, [&](uint8_t* out) {
                dequantize_bnb_int8_rows(cols, w.data() + b * cols, scb.data(), b, e, to, out);
              }) == "");
      }
    }
  }
}

TEST_CASE("quant SIMD: MXFP4 every scale byte, row ranges", "[quant][quant-simd]") {
  std::mt19937 rng(9);
  for (uint64_t groups : {1, 3, 90}) {
    Mxfp4Params p{11, groups};
    const auto blocks = random_bytes(p.rows * groups * 16, rng);
    auto scales = random_bytes(p.rows * groups, rng);
    scales[0] = 255, scales[scales.size() - 1] = 0;  // +inf (0 * inf is NaN) and 2^-127
    REQUIRE(validate_mxfp4(p, blocks.size(), scales.size()));
    for (DType to : kTargets) {
      for (const auto& range : {std::pair<uint64_t, uint64_t>{0, p.rows}, {3, 4}, {5, 11}}) {
        const uint64_t b = range.first, e = range.second;
        INFO(groups << " groups, rows [" << b << ", " << e << ") -> " << dtype_name(to));
        CHECK(compare_impls((e - b) * groups * 32, to, [&](uint8_t* out) {
                dequantize_mxfp4_rows(p, blocks.data() + b * groups * 16, scales.data() + b * groups, b, e, to, out);
              }) == "");
      }
    }
  }
}

TEST_CASE("quant SIMD: NVFP4 both layouts, every scale code, row ranges", "[quant][quant-simd]") {
  std::mt19937 rng(13);
  for (Nvfp4Layout layout : {Nvfp4Layout::modelopt, Nvfp4Layout::compressed_tensors}) {
    for (uint64_t cols : {16, 48, 272}) {
      for (float global : {1.0f, 0.0123f, 2688.0f}) {
        Nvfp4Params p;
        p.layout = layout, p.rows = 13, p.cols = cols, p.global_scale = global;
        const auto packed = random_bytes(p.rows * cols / 2, rng);
        const auto scales = random_bytes(p.rows * cols / 16, rng);  // E4M3 NaN codes included
        REQUIRE(validate_nvfp4(p, packed.size(), scales.size()));
        for (DType to : kTargets) {
          for (const auto& range : {std::pair<uint64_t, uint64_t>{0, p.rows}, {1, 2}, {4, 13}}) {
            const uint64_t b = range.first, e = range.second;
            INFO((layout == Nvfp4Layout::modelopt ? "modelopt" : "compressed-tensors")
                 << " " << cols << " columns, global " << global << ", rows [" << b << ", " << e << ") -> "
                 << dtype_name(to));
            CHECK(compare_impls((e - b) * cols, to, [&](uint8_t* out) {
                    dequantize_nvfp4_rows(p, packed.data() + b * cols / 2, scales.data() + b * cols / 16, b, e, to,
                                          out);
                  }) == "");
          }
        }
      }
    }
  }
}

TEST_CASE("quant SIMD: the comparison sees a wrong byte", "[quant][quant-simd]") {
  // compare_impls must fail when an implementation differs: the kernel below writes a
  // different byte whenever the reference is not the one in use.
  if (available_impls().size() < 2) return;  // only the reference here: nothing to compare
  const std::string got = compare_impls(4, DType::F32, [](uint8_t* out) {
    std::memset(out, 0, 16);
    if (!reference_impl_forced()) out[5] = 1;
  });
  CHECK(got.find("[1] want 0x0 got 0x100") != std::string::npos);
}
