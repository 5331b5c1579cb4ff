// The integer kernels' Highway paths (GPTQ, AWQ, compressed-tensors, MLX: packed_lut.h,
// packed-inl.h; tables up to 4 bits, vector arithmetic for 5 to 8 bits and naive int8)
// against their scalar reference loops, byte for byte, under every
// implementation this binary can run (amn::available_impls + force_impl; "scalar" is
// the reference). Random tensors with odd shapes, group sizes and row ranges, every bit
// width, scale and output dtype; scales are finite (zeros, subnormals and values whose
// products overflow F16 included: NaN bits from float arithmetic are not portable), except
// in the last test, which compares one machine's implementations only. The
// producers' fixtures run through every implementation in test_quant_{gptq,awq,ct,mlx}.cpp.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cast.h"
#include "kernels/quant/awq.h"
#include "kernels/quant/gptq.h"
#include "kernels/quant/mlx.h"
#include "kernels/quant/packed.h"

namespace {

using amn::DType;
namespace q = amn::quant;

struct RestoreImpl {
  std::string saved{amn::active_impl_name()};
  ~RestoreImpl() { amn::force_impl(saved); }
};

constexpr DType kFloats[] = {DType::F16, DType::BF16, DType::F32};
constexpr size_t kGuard = 64;  // bytes past the rows that must stay untouched

std::vector<uint8_t> random_bytes(size_t n, std::mt19937& rng) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng());
  return v;
}

// Finite scales of dtype t: mostly weight-like, some zero, subnormal or huge.
std::vector<uint8_t> random_scales(size_t count, DType t, std::mt19937& rng) {
  std::vector<uint8_t> v(count * amn::dtype_info(t).block_bytes);
  std::uniform_real_distribution<float> weight_like(-0.02f, 0.02f);
  for (size_t i = 0; i < count; ++i) {
    float f = weight_like(rng);
    switch (rng() % 16) {
      case 0: f = 0.0f; break;
      case 1: f = 3e-8f; break;     // F16 subnormal
      case 2: f = -6.0e3f; break;   // * 15 overflows F16
      case 3: f = 1.5e-41f; break;  // F32 / BF16 subnormal
      default: break;
    }
    uint8_t* at = v.data() + i * amn::dtype_info(t).block_bytes;
    if (t == DType::F32) {
      std::memcpy(at, &f, 4);
    } else {
      const uint16_t h = t == DType::F16 ? amn::scalar::f32_to_f16(f) : amn::scalar::f32_to_bf16(f);
      std::memcpy(at, &h, 2);
    }
  }
  return v;
}

using Kernel = std::function<amn::Status(uint64_t row_begin, uint64_t row_end, DType out, std::span<uint8_t> dst)>;

// Empty when every implementation writes the reference's bytes for rows [b, e) (and
// nothing past them); otherwise where the first difference is.
std::string compare_impls(const Kernel& run, uint64_t cols, uint64_t b, uint64_t e, DType out) {
  const size_t bytes = size_t((e - b) * cols) * amn::dtype_info(out).block_bytes;
  std::vector<uint8_t> want(bytes + kGuard, 0xA5);
  REQUIRE(amn::force_impl("scalar"));
  const auto ref = run(b, e, out, std::span<uint8_t>(want.data(), bytes));
  if (!ref.ok()) return "reference failed: " + ref.error().message;
  for (auto impl : amn::available_impls()) {
    REQUIRE(amn::force_impl(impl));
    std::vector<uint8_t> got(bytes + kGuard, 0xA5);
    const auto st = run(b, e, out, std::span<uint8_t>(got.data(), bytes));
    if (!st.ok()) return std::string(impl) + " failed: " + st.error().message;
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] != want[i]) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "%s, rows [%llu, %llu) to %s: byte %zu of %zu is 0x%02X, reference 0x%02X",
                      std::string(impl).c_str(), (unsigned long long)b, (unsigned long long)e,
                      std::string(amn::dtype_name(out)).c_str(), i, bytes, got[i], want[i]);
        return buf;
      }
    }
  }
  return {};
}

// Whole tensors, then random row ranges (empty ones included), to every output dtype.
void check_all(const Kernel& run, uint64_t rows, uint64_t cols, std::mt19937& rng) {
  for (DType out : kFloats) {
    CHECK(compare_impls(run, cols, 0, rows, out) == "");
    for (int r = 0; r < 3; ++r) {
      uint64_t b = rng() % (rows + 1), e = rng() % (rows + 1);
      if (b > e) std::swap(b, e);
      CHECK(compare_impls(run, cols, b, e, out) == "");
    }
  }
}

// check_all for one of the kernels' dequantize_*_rows(p, t, row_begin, row_end, out, dst).
template <class Params, class Tensors>
void check_rows(amn::Status (*rows_fn)(const Params&, const Tensors&, uint64_t, uint64_t, DType, std::span<uint8_t>),
                const Params& p, const Tensors& t, uint64_t rows, uint64_t cols, std::mt19937& rng) {
  check_all([&](uint64_t b, uint64_t e, DType out, std::span<uint8_t> dst) { return rows_fn(p, t, b, e, out, dst); },
            rows, cols, rng);
}

// A g_idx tensor (I32, little-endian) of n entries group_of(i).
template <class Fn>
std::vector<uint8_t> g_idx_bytes(uint64_t n, const Fn& group_of) {
  std::vector<uint8_t> v;
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t g = uint32_t(group_of(i));
    v.insert(v.end(), {uint8_t(g), uint8_t(g >> 8), uint8_t(g >> 16), uint8_t(g >> 24)});
  }
  return v;
}

}  // namespace

TEST_CASE("quant int SIMD: GPTQ, every implementation", "[quant][quant-int-simd]") {
  RestoreImpl restore;
  std::mt19937 rng(31);
  struct Shape {
    uint64_t in, out;
    int64_t group_size;  // -1: one group
  };
  const Shape shapes[] = {{256, 32, 128}, {300, 19, 128}, {37, 5, 7}, {130, 33, 32}, {64, 16, -1}, {40, 8, 1}};
  for (uint32_t bits : {2u, 3u, 4u, 8u}) {
    for (const auto& s : shapes) {
      for (int order = 0; order < 3; ++order) {  // no g_idx, sequential g_idx, act-order
        const uint64_t gs = s.group_size < 0 ? s.in : uint64_t(s.group_size);
        const uint64_t groups = (s.in + gs - 1) / gs;
        const DType sd = kFloats[rng() % 3];
        q::GptqParams p;
        p.bits = bits;
        p.in_features = s.in;
        p.out_features = s.out;
        p.groups = groups;
        p.group_size = gs;
        p.scale_dtype = sd;
        p.zeros = rng() % 2 ? q::GptqZeros::v1 : q::GptqZeros::v2;
        p.has_g_idx = order != 0;
        const auto qweight = random_bytes(size_t((s.in * bits + 31) / 32 * s.out * 4), rng);
        const auto qzeros = random_bytes(size_t(groups * ((s.out * bits + 31) / 32) * 4), rng);
        const auto scales = random_scales(size_t(groups * s.out), sd, rng);
        std::vector<uint8_t> g_idx;
        if (p.has_g_idx) g_idx = g_idx_bytes(s.in, [&](uint64_t i) { return order == 1 ? i / gs : rng() % groups; });
        const q::GptqTensors t{qweight, qzeros, scales, g_idx};
        INFO("GPTQ " << bits << "-bit, in " << s.in << ", out " << s.out << ", group " << gs << ", order " << order);
        check_rows(q::dequantize_gptq_rows, p, t, s.out, s.in, rng);
      }
    }
  }
}

TEST_CASE("quant int SIMD: AWQ, every implementation", "[quant][quant-int-simd]") {
  RestoreImpl restore;
  std::mt19937 rng(32);
  struct Shape {
    uint64_t in, out, group_size;
  };
  const Shape shapes[] = {{256, 64, 128}, {192, 24, 64}, {35, 8, 7}, {4096 + 128, 16, 4096 + 128}, {48, 40, 1}};
  for (const auto& s : shapes) {
    for (DType sd : kFloats) {
      const uint64_t groups = s.in / s.group_size;
      q::AwqParams p;
      p.in_features = s.in;
      p.out_features = s.out;
      p.group_size = s.group_size;
      p.scale_dtype = sd;
      const auto qweight = random_bytes(size_t(s.in * s.out / 8 * 4), rng);
      const auto qzeros = random_bytes(size_t(groups * s.out / 8 * 4), rng);
      const auto scales = random_scales(size_t(groups * s.out), sd, rng);
      const q::AwqTensors t{qweight, qzeros, scales};
      INFO("AWQ in " << s.in << ", out " << s.out << ", group " << s.group_size << ", scales " << amn::dtype_name(sd));
      check_rows(q::dequantize_awq_rows, p, t, s.out, s.in, rng);
    }
  }
}

TEST_CASE("quant int SIMD: compressed-tensors, every implementation", "[quant][quant-int-simd]") {
  RestoreImpl restore;
  std::mt19937 rng(33);
  struct Shape {
    uint64_t out, in, scale_cols;
  };
  const Shape shapes[] = {{16, 256, 2}, {19, 300, 1}, {33, 130, 5}, {8, 70, 35}, {5, 4100, 1}};
  // bits 0: naive / int-quantized (I8 weights), 1..8: pack-quantized
  for (uint32_t bits : {0u, 1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u}) {
    for (const auto& s : shapes) {
      for (int variant = 0; variant < 4; ++variant) {  // bit 0: zero point; bit 1: g_idx
        q::CtIntParams p;
        p.bits = bits == 0 ? 8 : bits;
        p.packed = bits != 0;
        p.out_features = s.out;
        p.in_features = s.in;
        p.scale_rows = (variant & 1) || rng() % 2 ? s.out : 1;
        p.scale_cols = s.scale_cols;
        p.scale_dtype = kFloats[rng() % 3];
        p.has_zero_point = variant & 1;
        p.has_g_idx = variant & 2;
        const auto weight = random_bytes(size_t(p.packed ? q::ct_packed_weight_bytes(p) : s.out * s.in), rng);
        const auto scale = random_scales(size_t(p.scale_rows * p.scale_cols), p.scale_dtype, rng);
        const size_t zero_bytes =
            p.packed ? size_t(q::ct_packed_zero_point_bytes(p)) : size_t(p.scale_rows * p.scale_cols);
        const auto zero = p.has_zero_point ? random_bytes(zero_bytes, rng) : std::vector<uint8_t>{};
        const auto g_idx = p.has_g_idx ? g_idx_bytes(s.in, [&](uint64_t) { return rng() % s.scale_cols; })
                                       : std::vector<uint8_t>{};
        const q::CtIntTensors t{weight, scale, zero, g_idx};
        INFO("compressed-tensors " << (p.packed ? "packed " : "naive ") << p.bits << "-bit, out " << s.out << ", in "
                                   << s.in << ", groups " << s.scale_cols << ", variant " << variant);
        check_rows(q::dequantize_ct_int_rows, p, t, s.out, s.in, rng);
      }
    }
  }
}

TEST_CASE("quant int SIMD: MLX, every implementation", "[quant][quant-int-simd]") {
  RestoreImpl restore;
  std::mt19937 rng(34);
  struct Shape {
    uint64_t out, in, group_size;
  };
  const Shape shapes[] = {{16, 256, 64}, {7, 384, 128}, {5, 96, 32}, {3, 4096, 4096}, {9, 160, 160}};
  for (uint32_t bits : {2u, 3u, 4u, 5u, 6u, 8u}) {
    for (const auto& s : shapes) {
      for (DType sd : kFloats) {
        q::MlxParams p;
        p.bits = bits;
        p.group_size = s.group_size;
        p.out_features = s.out;
        p.in_features = s.in;
        p.scale_dtype = sd;
        const uint64_t groups = s.in / s.group_size;
        const auto weight = random_bytes(size_t(s.out * s.in * bits / 32 * 4), rng);
        const auto scales = random_scales(size_t(s.out * groups), sd, rng);
        const auto biases = random_scales(size_t(s.out * groups), sd, rng);
        const q::MlxTensors t{weight, scales, biases};
        INFO("MLX " << bits << "-bit, out " << s.out << ", in " << s.in << ", group " << s.group_size << ", "
                    << amn::dtype_name(sd));
        check_rows(q::dequantize_mlx_rows, p, t, s.out, s.in, rng);
      }
    }
  }
}

TEST_CASE("quant int SIMD: 5-8-bit groups with non-finite scales or biases", "[quant][quant-int-simd]") {
  // WASM computes a call's groups with NaN-free rounding only when every scale and bias
  // (offset) is finite (packed-inl.h AffineRunsT); one infinite or NaN entry sends the
  // call to the full rounding (short groups) or the 256-entry table (per channel). The
  // NaNs come from the same arithmetic (0 * Inf, Inf - Inf) on every implementation of
  // one machine, so the comparison with the reference holds here.
  RestoreImpl restore;
  std::mt19937 rng(35);
  const float specials[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  const auto spoil = [&](std::vector<uint8_t>& v, DType t, size_t count) {
    const size_t at = rng() % count;
    const float f = specials[rng() % 3];
    if (t == DType::F32) {
      std::memcpy(&v[at * 4], &f, 4);
    } else {
      const uint16_t h = t == DType::F16 ? amn::scalar::f32_to_f16(f) : amn::scalar::f32_to_bf16(f);
      std::memcpy(&v[at * 2], &h, 2);
    }
  };
  for (DType sd : kFloats) {
    for (uint64_t group : {64u, 4160u}) {
      q::MlxParams p;
      p.bits = 8, p.group_size = group, p.out_features = 4, p.in_features = 4160, p.scale_dtype = sd;
      const size_t groups = size_t(4 * 4160 / group);
      const auto weight = random_bytes(4 * 4160, rng);
      auto scales = random_scales(groups, sd, rng), biases = random_scales(groups, sd, rng);
      spoil(rng() % 2 ? scales : biases, sd, groups);
      INFO("MLX 8-bit, group " << group << ", " << amn::dtype_name(sd));
      check_rows(q::dequantize_mlx_rows, p, q::MlxTensors{weight, scales, biases}, 4, 4160, rng);
    }
    for (uint64_t scale_cols : {1u, 65u}) {
      q::CtIntParams p;
      p.bits = 8, p.packed = false, p.out_features = 4, p.in_features = 4160, p.scale_rows = 4;
      p.scale_cols = scale_cols, p.scale_dtype = sd;
      const auto weight = random_bytes(4 * 4160, rng);
      auto scale = random_scales(size_t(4 * scale_cols), sd, rng);
      spoil(scale, sd, size_t(4 * scale_cols));
      INFO("compressed-tensors naive int8, groups " << scale_cols << ", " << amn::dtype_name(sd));
      check_rows(q::dequantize_ct_int_rows, p, q::CtIntTensors{weight, scale, {}, {}}, 4, 4160, rng);
    }
  }
}
