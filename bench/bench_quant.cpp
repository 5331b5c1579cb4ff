// Quantized-safetensors dequantization throughput per implementation (kernels/quant: FP8,
// bitsandbytes, MXFP4, NVFP4) on one 4096 x 11008 layer (an MLP projection of a 7B model),
// to BF16 (what `amn remember` writes by default), against memcpy of the BF16 output.
// Prints a markdown table; checks every implementation's output against the scalar
// reference before it counts.
//
//   bench_quant [rows cols] [--write-inputs DIR]
//
// Best of 5 runs each, single thread. --write-inputs writes each case's inputs and our
// BF16 output to DIR/<case>.<part>.bin, so that bench/quant_torch.py can time PyTorch on
// the very same bytes and check it produces the same output.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "bench_util.h"
#include "kernels/cast.h"
#include "kernels/quant/bnb.h"
#include "kernels/quant/fp4.h"
#include "kernels/quant/fp8.h"

namespace {

using amn::DType;
using amn::bench::Part;
using amn::bench::random_bytes;
using Case = amn::bench::QuantCase;
namespace q = amn::quant;

template <class T>
std::vector<uint8_t> as_bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// FP8 codes of weight-like values: every finite E4M3 code but the two NaNs.
std::vector<uint8_t> fp8_weights(size_t n, std::mt19937& rng) {
  auto w = random_bytes(n, rng);
  for (auto& c : w)
    if ((c & 0x7F) == 0x7F) c ^= 1;
  return w;
}

std::vector<Case> make_cases(uint64_t rows, uint64_t cols) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> scale(0.5e-4f, 4e-4f);
  const uint64_t n = rows * cols;
  std::vector<Case> cases;

  {  // DeepSeek-V3 / transformers FP8: 128 x 128 blocks of F32 weight_scale_inv, F32 arithmetic.
    std::vector<float> s(((rows + 127) / 128) * ((cols + 127) / 128));
    for (auto& v : s) v = scale(rng);
    cases.push_back(Case{"fp8_block", {{"weight", fp8_weights(n, rng)}, {"scale", as_bytes(s)}}, {}});
  }
  {  // compressed-tensors FP8: per-channel BF16 scales, BF16 arithmetic.
    std::vector<uint16_t> s(rows);
    for (auto& v : s) v = amn::scalar::f32_to_bf16(scale(rng));
    cases.push_back(Case{"fp8_channel_bf16", {{"weight", fp8_weights(n, rng)}, {"scale", as_bytes(s)}}, {}});
  }
  for (const auto type : {q::Bnb4Type::nf4, q::Bnb4Type::fp4}) {  // bitsandbytes 4-bit, blocksize 64
    std::vector<float> absmax(n / 64);
    std::uniform_real_distribution<float> am(0.01f, 0.2f);
    for (auto& a : absmax) a = am(rng);
    cases.push_back(Case{type == q::Bnb4Type::nf4 ? "nf4" : "fp4",
                         {{"packed", random_bytes(n / 2, rng)}, {"absmax", as_bytes(absmax)}}, {}});
  }
  {  // LLM.int8(): I8 rows and one F32 SCB per row.
    std::vector<float> scb(rows);
    std::uniform_real_distribution<float> sc(0.02f, 0.5f);
    for (auto& v : scb) v = sc(rng);
    cases.push_back(Case{"int8", {{"weight", random_bytes(n, rng)}, {"scb", as_bytes(scb)}}, {}});
  }
  {  // gpt-oss MXFP4: 32 codes per E8M0 scale of 2^-10 .. 2^-4.
    auto scales = random_bytes(n / 32, rng);
    for (auto& s : scales) s = static_cast<uint8_t>(117 + s % 7);
    cases.push_back(Case{"mxfp4", {{"blocks", random_bytes(n / 2, rng)}, {"scales", std::move(scales)}}, {}});
  }
  {  // MLX mxfp8: E4M3 codes, 32 per E8M0 scale of 2^-10 .. 2^-4 (the FP8 kernel, 1 x 32 blocks).
    auto scales = random_bytes(n / 32, rng);
    for (auto& s : scales) s = static_cast<uint8_t>(117 + s % 7);
    cases.push_back(Case{"mxfp8_mlx", {{"weight", fp8_weights(n, rng)}, {"scales", std::move(scales)}}, {}});
  }
  {  // ModelOpt NVFP4: 16 codes per E4M3 scale (positive, finite), an F32 global scale.
    auto scales = random_bytes(n / 16, rng);
    for (auto& s : scales) s = static_cast<uint8_t>(0x20 + s % 0x50);
    const float global = 1.0f / 2688.0f;
    cases.push_back(Case{"nvfp4", {{"packed", random_bytes(n / 2, rng)}, {"scales", std::move(scales)},
                                   {"global", as_bytes(std::vector<float>{global})}}, {}});
  }

  // The kernels, bound to the parts now that the vectors stay put.
  for (auto& c : cases) {
    const auto& parts = c.parts;
    const uint8_t* a = parts[0].bytes.data();
    const uint8_t* b = parts[1].bytes.data();
    if (c.name == "fp8_block" || c.name == "fp8_channel_bf16") {
      q::Fp8Params p;
      p.rows = rows, p.cols = cols;
      if (c.name == "fp8_block") {
        p.block_rows = 128, p.block_cols = 128, p.scale_rows = (rows + 127) / 128, p.scale_cols = (cols + 127) / 128;
      } else {
        p.block_rows = 1, p.block_cols = cols, p.scale_rows = rows, p.scale_cols = 1;
        p.scale = DType::BF16, p.compute = DType::BF16;
      }
      c.run = [p, a, b](uint8_t* out) {
        q::dequantize_fp8_rows(p, a, b, 0, p.rows, DType::BF16, out);
        return true;
      };
    } else if (c.name == "nf4" || c.name == "fp4") {
      const q::Bnb4Params p{c.name == "nf4" ? q::Bnb4Type::nf4 : q::Bnb4Type::fp4, n, 64};
      const std::span<const float> absmax(reinterpret_cast<const float*>(b), n / 64);
      c.run = [p, a, absmax](uint8_t* out) {
        q::dequantize_bnb4(p, a, absmax, 0, p.elements, DType::BF16, out);
        return true;
      };
    } else if (c.name == "int8") {
      c.run = [rows, cols, a, b](uint8_t* out) {
        q::dequantize_bnb_int8_rows(cols, a, b, 0, rows, DType::BF16, out);
        return true;
      };
    } else if (c.name == "mxfp4") {
      const q::Mxfp4Params p{rows, cols / 32};
      c.run = [p, a, b](uint8_t* out) {
        q::dequantize_mxfp4_rows(p, a, b, 0, p.rows, DType::BF16, out);
        return true;
      };
    } else if (c.name == "mxfp8_mlx") {
      q::Fp8Params p;
      p.rows = rows, p.cols = cols, p.scale = DType::F8_E8M0;
      p.block_rows = 1, p.block_cols = 32, p.scale_rows = rows, p.scale_cols = cols / 32;
      c.run = [p, a, b](uint8_t* out) {
        q::dequantize_fp8_rows(p, a, b, 0, p.rows, DType::BF16, out);
        return true;
      };
    } else if (c.name == "nvfp4") {
      q::Nvfp4Params p;
      p.rows = rows, p.cols = cols;
      std::memcpy(&p.global_scale, parts[2].bytes.data(), 4);
      c.run = [p, a, b](uint8_t* out) {
        q::dequantize_nvfp4_rows(p, a, b, 0, p.rows, DType::BF16, out);
        return true;
      };
    }
  }
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  return amn::bench::run_quant_bench(argc, argv, "bench_quant", "Quantized-safetensors dequantization", 1, make_cases);
}
