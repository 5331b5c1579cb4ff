// Integer quantized-safetensors dequantization throughput per implementation
// (kernels/quant: GPTQ, AWQ, compressed-tensors, MLX) on one 4096 x 11008 layer (an MLP
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
#include <cstdlib>
#include <cstring>
#include <fstream>
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
using amn::bench::best_seconds;
using amn::bench::print_impl_table_head;
namespace q = amn::quant;

struct Part {
  std::string name;
  std::vector<uint8_t> bytes;
};

// One benchmark case: its inputs and the kernel that turns them into rows * cols BF16 values.
struct Case {
  std::string name;
  std::vector<Part> parts;
  std::function<amn::Status(std::span<uint8_t> out)> run;
};

std::vector<uint8_t> random_bytes(size_t n, std::mt19937& rng) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i += 4) {
    const uint32_t r = static_cast<uint32_t>(rng());
    std::memcpy(v.data() + i, &r, std::min<size_t>(4, n - i));
  }
  return v;
}

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

std::vector<Case> make_cases(uint64_t rows, uint64_t cols) {
  std::mt19937 rng(11);
  std::vector<Case> cases;
  const uint64_t g128 = cols / 128, g64 = cols / 64;
  for (const bool act_order : {false, true}) {  // GPTQ 4-bit, group 128, GPTQModel's own (v2) zero points
    std::vector<int32_t> g_idx(cols);
    for (uint64_t i = 0; i < cols; ++i) g_idx[i] = int32_t(i / 128);
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

  // The kernels, bound to the parts now that the vectors stay put.
  for (auto& c : cases) {
    std::vector<std::span<const uint8_t>> s;
    for (const auto& p : c.parts) s.emplace_back(p.bytes);
    if (c.name.rfind("gptq", 0) == 0) {
      q::GptqParams p;
      p.bits = 4, p.in_features = cols, p.out_features = rows, p.groups = g128, p.group_size = 128;
      p.scale_dtype = DType::F16, p.zeros = q::GptqZeros::v2;
      const q::GptqTensors t{s[0], s[1], s[2], s[3]};
      c.run = [p, t](std::span<uint8_t> out) { return q::dequantize_gptq_rows(p, t, 0, p.out_features, DType::BF16, out); };
    } else if (c.name == "awq_g128") {
      q::AwqParams p;
      p.in_features = cols, p.out_features = rows, p.group_size = 128, p.scale_dtype = DType::F16;
      const q::AwqTensors t{s[0], s[1], s[2]};
      c.run = [p, t](std::span<uint8_t> out) { return q::dequantize_awq_rows(p, t, 0, p.out_features, DType::BF16, out); };
    } else if (c.name == "ct_w4a16_g128") {
      q::CtIntParams p;
      p.bits = 4, p.out_features = rows, p.in_features = cols, p.scale_rows = rows, p.scale_cols = g128;
      p.scale_dtype = DType::BF16;
      const q::CtIntTensors t{s[0], s[1], {}, {}};
      c.run = [p, t](std::span<uint8_t> out) { return q::dequantize_ct_int_rows(p, t, 0, p.out_features, DType::BF16, out); };
    } else {
      q::MlxParams p;
      p.bits = 4, p.group_size = 64, p.out_features = rows, p.in_features = cols, p.scale_dtype = DType::BF16;
      const q::MlxTensors t{s[0], s[1], s[2]};
      c.run = [p, t](std::span<uint8_t> out) { return q::dequantize_mlx_rows(p, t, 0, p.out_features, DType::BF16, out); };
    }
  }
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t rows = 4096, cols = 11008;
  std::string write_dir;
  std::vector<uint64_t> dims;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--write-inputs" && a + 1 < argc) write_dir = argv[++a];
    else dims.push_back(std::strtoull(arg.c_str(), nullptr, 10));
  }
  if (dims.size() == 2) rows = dims[0], cols = dims[1];
  if (rows == 0 || rows % 8 != 0 || cols % 128 != 0) {
    std::fprintf(stderr, "bench_quant_int: rows must be a multiple of 8, cols of 128\n");
    return 2;
  }
  const size_t n = static_cast<size_t>(rows * cols);
  constexpr int kRuns = 5;
  auto cases = make_cases(rows, cols);

  const std::string saved{amn::active_impl_name()};
  const auto impls = amn::available_impls();
  std::printf("Integer quantized-safetensors dequantization to BF16, %llu x %llu layer (%zu elements), one thread, "
              "best of %d runs, Melem/s (higher is better)\n\n",
              static_cast<unsigned long long>(rows), static_cast<unsigned long long>(cols), n, kRuns);
  print_impl_table_head(impls, saved, "memcpy (BF16 output)");

  std::vector<uint8_t> out(n * 2, 1), want(n * 2), src(n * 2, 2);
  int failures = 0;
  for (auto& c : cases) {
    amn::force_impl("scalar");
    if (!c.run(want).ok()) {
      std::fprintf(stderr, "bench_quant_int: %s: the reference failed\n", c.name.c_str());
      return 1;
    }
    std::printf("| %s |", c.name.c_str());
    for (auto name : impls) {
      amn::force_impl(name);
      bool ok = true;
      const double s = best_seconds(kRuns, [&] { ok = c.run(out).ok() && ok; });
      const bool same = ok && std::memcmp(out.data(), want.data(), n * 2) == 0;
      failures += !same;
      std::printf(" %.0f%s |", n / s / 1e6, same ? "" : " (WRONG)");
      std::fflush(stdout);
    }
    amn::force_impl(saved);
    const double s = best_seconds(kRuns, [&] { std::memcpy(out.data(), src.data(), n * 2); });
    std::printf(" %.0f |\n", n / s / 1e6);
    if (!write_dir.empty()) {
      for (const auto& p : c.parts) {
        std::ofstream f(write_dir + "/" + c.name + "." + p.name + ".bin", std::ios::binary);
        f.write(reinterpret_cast<const char*>(p.bytes.data()), std::streamsize(p.bytes.size()));
      }
      std::ofstream f(write_dir + "/" + c.name + ".out_bf16.bin", std::ios::binary);
      f.write(reinterpret_cast<const char*>(want.data()), std::streamsize(want.size()));
    }
  }
  return failures == 0 ? 0 : 1;
}
