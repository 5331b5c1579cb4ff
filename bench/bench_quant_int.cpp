// Integer quantized-safetensors dequantization throughput per implementation
// (kernels/quant: GPTQ, AWQ, compressed-tensors, MLX; 4-bit codes through tables, 6- and
// 8-bit ones through vector arithmetic) on one 4096 x 11008 layer (an MLP
// projection of a 7B model: 4096 output rows, 11008 input features), to BF16 (what
// `amn remember` writes by default), against memcpy of the BF16 output. Prints a
// markdown table; checks every implementation's output against the scalar reference
// before it counts.
//
//   bench_quant_int [rows cols] [--write-inputs DIR]
//
// Best of 5 runs each, single thread. --write-inputs writes each case's inputs and our
// BF16 output to DIR/<case>.<part>.bin, so that bench/quant_int_torch.py can time the
// producers' own PyTorch arithmetic on the very same bytes and check its output.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "bench_util.h"
#include "kernels/cast.h"
#include "kernels/quant/awq.h"
#include "kernels/quant/gptq.h"
#include "kernels/quant/mlx.h"
#include "kernels/quant/packed.h"

namespace {

using amn::DType;
using amn::bench::Part;
using amn::bench::random_bytes;
using Case = amn::bench::QuantCase;
namespace q = amn::quant;

// Weight-like scales in F16 or BF16.
std::vector<uint8_t> scales16(size_t n, DType t, std::mt19937& rng, float lo = 0.5e-3f, float hi = 4e-3f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<uint8_t> v(n * 2);
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = t == DType::F16 ? amn::scalar::f32_to_f16(d(rng)) : amn::scalar::f32_to_bf16(d(rng));
    std::memcpy(v.data() + 2 * i, &h, 2);
  }
  return v;
}

std::vector<uint8_t> i32_bytes(const std::vector<int32_t>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// The code width a case's name says (gptq_8bit_g128, ct_w8a16_channel, ct_int8_..., mlx_6bit_g64).
uint32_t code_bits(const std::string& name) {
  for (const char* eight : {"8bit", "w8a16", "int8"})
    if (name.find(eight) != std::string::npos) return 8;
  return name.find("6bit") != std::string::npos ? 6 : 4;
}

// g_idx[i] = i / 128: GPTQ's groups of 128 in column order.
std::vector<int32_t> sequential_g_idx(uint64_t cols) {
  std::vector<int32_t> g_idx(cols);
  for (uint64_t i = 0; i < cols; ++i) g_idx[i] = int32_t(i / 128);
  return g_idx;
}

std::vector<Case> make_cases(uint64_t rows, uint64_t cols) {
  std::mt19937 rng(11);
  std::vector<Case> cases;
  const uint64_t g128 = cols / 128, g64 = cols / 64;
  for (const bool act_order : {false, true}) {  // GPTQ 4-bit, group 128, GPTQModel's own (v2) zero points
    auto g_idx = sequential_g_idx(cols);
    if (act_order) std::shuffle(g_idx.begin(), g_idx.end(), rng);  // desc_act: g_idx[invperm]
    cases.push_back(Case{act_order ? "gptq_g128_actorder" : "gptq_g128",
                         {{"qweight", random_bytes(cols / 8 * rows * 4, rng)},
                          {"qzeros", random_bytes(g128 * rows / 8 * 4, rng)},
                          {"scales", scales16(g128 * rows, DType::F16, rng)},
                          {"g_idx", i32_bytes(g_idx)}},
                         {}});
  }
  cases.push_back(Case{"awq_g128",
                       {{"qweight", random_bytes(cols * rows / 8 * 4, rng)},
                        {"qzeros", random_bytes(g128 * rows / 8 * 4, rng)},
                        {"scales", scales16(g128 * rows, DType::F16, rng)}},
                       {}});
  cases.push_back(Case{"ct_w4a16_g128",  // compressed-tensors pack-quantized, symmetric, BF16 scales
                       {{"weight_packed", random_bytes(rows * cols / 8 * 4, rng)},
                        {"weight_scale", scales16(rows * g128, DType::BF16, rng)}},
                       {}});
  cases.push_back(Case{"mlx_4bit_g64",  // mlx-lm affine, BF16 scales and biases
                       {{"weight", random_bytes(rows * cols / 8 * 4, rng)},
                        {"scales", scales16(rows * g64, DType::BF16, rng)},
                        {"biases", scales16(rows * g64, DType::BF16, rng, -0.03f, -0.005f)}},
                       {}});
  // 5- to 8-bit codes (the affine path of packed_lut.h).
  cases.push_back(Case{"gptq_8bit_g128",
                       {{"qweight", random_bytes(cols / 4 * rows * 4, rng)},
                        {"qzeros", random_bytes(g128 * rows / 4 * 4, rng)},
                        {"scales", scales16(g128 * rows, DType::F16, rng)},
                        {"g_idx", i32_bytes(sequential_g_idx(cols))}},
                       {}});
  cases.push_back(Case{"ct_w8a16_channel",  // pack-quantized 8-bit, symmetric, one BF16 scale per row
                       {{"weight_packed", random_bytes(rows * cols, rng)},
                        {"weight_scale", scales16(rows, DType::BF16, rng, 0.5e-4f, 4e-4f)}},
                       {}});
  cases.push_back(Case{"ct_int8_naive_channel",  // int-quantized: I8 weights, one BF16 scale per row
                       {{"weight", random_bytes(rows * cols, rng)},
                        {"weight_scale", scales16(rows, DType::BF16, rng, 0.5e-4f, 4e-4f)}},
                       {}});
  for (const uint32_t bits : {6u, 8u}) {
    cases.push_back(Case{bits == 6 ? "mlx_6bit_g64" : "mlx_8bit_g64",
                         {{"weight", random_bytes(rows * cols * bits / 8, rng)},
                          {"scales", scales16(rows * g64, DType::BF16, rng, 0.5e-4f, 4e-4f)},
                          {"biases", scales16(rows * g64, DType::BF16, rng, -0.03f, -0.005f)}},
                         {}});
  }

  // The kernels, bound to the parts now that the vectors stay put.
  const size_t bytes = rows * cols * 2;  // the BF16 output
  for (auto& c : cases) {
    std::vector<std::span<const uint8_t>> s;
    for (const auto& p : c.parts) s.emplace_back(p.bytes);
    const uint32_t bits = code_bits(c.name);
    if (c.name.rfind("gptq", 0) == 0) {
      q::GptqParams p;
      p.bits = bits, p.in_features = cols, p.out_features = rows, p.groups = g128, p.group_size = 128;
      p.scale_dtype = DType::F16, p.zeros = q::GptqZeros::v2;
      const q::GptqTensors t{s[0], s[1], s[2], s[3]};
      c.run = [p, t, bytes](uint8_t* out) {
        return q::dequantize_gptq_rows(p, t, 0, p.out_features, DType::BF16, {out, bytes}).ok();
      };
    } else if (c.name == "awq_g128") {
      q::AwqParams p;
      p.in_features = cols, p.out_features = rows, p.group_size = 128, p.scale_dtype = DType::F16;
      const q::AwqTensors t{s[0], s[1], s[2]};
      c.run = [p, t, bytes](uint8_t* out) {
        return q::dequantize_awq_rows(p, t, 0, p.out_features, DType::BF16, {out, bytes}).ok();
      };
    } else if (c.name.rfind("ct_", 0) == 0) {
      q::CtIntParams p;
      const bool channel = c.name.find("channel") != std::string::npos;
      p.bits = bits, p.packed = c.name.find("naive") == std::string::npos;
      p.out_features = rows, p.in_features = cols, p.scale_rows = rows, p.scale_cols = channel ? 1 : g128;
      p.scale_dtype = DType::BF16;
      const q::CtIntTensors t{s[0], s[1], {}, {}};
      c.run = [p, t, bytes](uint8_t* out) {
        return q::dequantize_ct_int_rows(p, t, 0, p.out_features, DType::BF16, {out, bytes}).ok();
      };
    } else {
      q::MlxParams p;
      p.bits = bits, p.group_size = 64, p.out_features = rows, p.in_features = cols, p.scale_dtype = DType::BF16;
      const q::MlxTensors t{s[0], s[1], s[2]};
      c.run = [p, t, bytes](uint8_t* out) {
        return q::dequantize_mlx_rows(p, t, 0, p.out_features, DType::BF16, {out, bytes}).ok();
      };
    }
  }
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  return amn::bench::run_quant_bench(argc, argv, "bench_quant_int", "Integer quantized-safetensors dequantization", 8,
                                     make_cases);
}
