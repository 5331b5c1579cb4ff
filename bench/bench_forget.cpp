// Forget (lethe) encoder throughput (kernels/lethe: bitsandbytes NF4 / FP4 / INT8, FP8
// block / channel / tensor, MXFP4, NVFP4, MLX affine and fp modes, with --reuse-scales
// too) on one 4096 x 11008 F32 layer of weight-like values (seeded normal, sigma 0.02),
// one thread, best of 5 runs, against memcpy
// of the same input bytes (the bandwidth yardstick: an encoder "at memory speed" is as fast
// as copying its input). Each run is the whole tensor's encode as the schemes call it:
// scales (and a tensor's amax, a global scale, double quantization) and codes; not the
// Lethe distance and not the F32 load from the source dtype. The encoder and memcpy runs
// alternate, so that their ratio is measured under the same load.
//
//   bench_forget [rows cols] [--write-inputs DIR]
//
// --write-inputs writes the input (DIR/input.f32.bin, row-major F32) and each case's
// outputs (DIR/<case>.<part>.bin), so that bench/forget_torch.py can time the producers'
// arithmetic in PyTorch on the very same values and count the bytes that differ.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
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

namespace {

namespace lethe = amn::lethe;
using amn::DType;

// One output tensor of a case, as the PyTorch peer compares it (DIR/<case>.<name>.bin).
struct Out {
  std::string name;
  std::vector<uint8_t> bytes;
};

struct Case {
  std::string name;
  std::vector<Out> outs;
  std::function<void(const float* in, std::vector<Out>& outs)> run;
  // Run once before the timed runs (--reuse-scales: the scales the run reads).
  std::function<void(const float* in, std::vector<Out>& outs)> prepare = {};
};

template <class T>
T* as(std::vector<uint8_t>& b) {
  return reinterpret_cast<T*>(b.data());
}

std::vector<Case> make_cases(uint64_t rows, uint64_t cols) {
  const uint64_t n = rows * cols;
  std::vector<Case> cases;
  for (const auto type : {lethe::Bnb4Type::nf4, lethe::Bnb4Type::fp4})
    for (const bool nested : {false, true}) {
      // quantize_4bit, blocksize 64 (transformers' default); with compress_statistics the
      // absmax is double quantized (offset, 256-blocks of the dynamic map).
      const uint64_t blocks = n / 64;
      std::vector<Out> outs{{"packed", std::vector<uint8_t>(n / 2)}, {"absmax", std::vector<uint8_t>(blocks * 4)}};
      if (nested) {
        outs.push_back({"absmax_codes", std::vector<uint8_t>(blocks)});
        outs.push_back({"nested_absmax", std::vector<uint8_t>((blocks + 255) / 256 * 4)});
        outs.push_back({"offset", std::vector<uint8_t>(4)});
      }
      std::string name = type == lethe::Bnb4Type::nf4 ? "nf4" : "fp4";
      if (nested) name += "_dq";
      cases.push_back({name, std::move(outs), [=](const float* in, std::vector<Out>& o) {
                         lethe::bnb4_quantize(type, in, n, 64, o[0].bytes.data(), as<float>(o[1].bytes));
                         if (!nested) return;
                         const float offset = lethe::bnb4_double_quant(as<float>(o[1].bytes), blocks, o[2].bytes.data(),
                                                                       as<float>(o[3].bytes));
                         std::memcpy(o[4].bytes.data(), &offset, 4);
                       }});
    }
  // LLM.int8(): int8_vectorwise_quant per row (SCB F32).
  cases.push_back({"int8",
                   {{"weight", std::vector<uint8_t>(n)}, {"scb", std::vector<uint8_t>(rows * 4)}},
                   [=](const float* in, std::vector<Out>& o) {
                     for (uint64_t r = 0; r < rows; ++r)
                       lethe::bnb_int8_quantize_row(in + r * cols, cols, as<int8_t>(o[0].bytes) + r * cols,
                                                    as<float>(o[1].bytes) + r);
                   }});
  {  // transformers FineGrainedFP8 / DeepSeek-V3: 128 x 128 tiles, weight_scale_inv F32.
    const uint64_t tiles = ((rows + 127) / 128) * ((cols + 127) / 128);
    cases.push_back({"fp8_block",
                     {{"weight", std::vector<uint8_t>(n)},
                      {"scale_inv", std::vector<uint8_t>(tiles * 4)},
                      {"scale", std::vector<uint8_t>(tiles * 4)}},
                     [=](const float* in, std::vector<Out>& o) {
                       // A band of 128 rows at a time, scales then codes, as the fp8-block
                       // scheme runs them (schemes/forget_fp8.cpp).
                       const lethe::Fp8Block block{128, 128};
                       const uint64_t tile_cols = (cols + 127) / 128;
                       for (uint64_t r0 = 0; r0 < rows; r0 += 128) {
                         const uint64_t r1 = std::min(rows, r0 + 128);
                         float* scale = as<float>(o[2].bytes) + r0 / 128 * tile_cols;
                         lethe::fp8_block_scales(in + r0 * cols, cols, r0, r1, block, scale,
                                                 as<float>(o[1].bytes) + r0 / 128 * tile_cols);
                         lethe::fp8_block_quantize_rows(in + r0 * cols, cols, r0, r1, block, scale,
                                                        o[0].bytes.data() + r0 * cols);
                       }
                     }});
  }
  // compressed-tensors float-quantized, an F32 weight: per row, and one scale for the tensor.
  cases.push_back({"fp8_channel",
                   {{"weight", std::vector<uint8_t>(n)}, {"scale", std::vector<uint8_t>(rows * 4)}},
                   [=](const float* in, std::vector<Out>& o) {
                     lethe::ct_fp8_channel_scales(in, cols, 0, rows, DType::F32, as<float>(o[1].bytes));
                     lethe::ct_fp8_quantize_rows(in, cols, 0, rows, DType::F32, as<float>(o[1].bytes), true, false,
                                                 o[0].bytes.data());
                   }});
  cases.push_back({"fp8_tensor",
                   {{"weight", std::vector<uint8_t>(n)}, {"scale", std::vector<uint8_t>(4)}},
                   [=](const float* in, std::vector<Out>& o) {
                     const float s = lethe::ct_fp8_scale(lethe::absmax(in, n), DType::F32);
                     std::memcpy(o[1].bytes.data(), &s, 4);
                     lethe::ct_fp8_quantize_rows(in, cols, 0, rows, DType::F32, &s, false, false, o[0].bytes.data());
                   }});
  // gpt-oss MXFP4 (transformers' quantize_to_mxfp4: the weight cast to BF16 first).
  cases.push_back({"mxfp4",
                   {{"blocks", std::vector<uint8_t>(n / 2)}, {"scales", std::vector<uint8_t>(n / 32)}},
                   [=](const float* in, std::vector<Out>& o) {
                     lethe::mxfp4_quantize_rows(in, rows, cols, o[0].bytes.data(), o[1].bytes.data());
                   }});
  // ModelOpt / compressed-tensors NVFP4 of an F32 weight: tensor amax, global scale, E4M3
  // scale per 16, then the codes.
  cases.push_back({"nvfp4",
                   {{"packed", std::vector<uint8_t>(n / 2)},
                    {"scale", std::vector<uint8_t>(n / 16)},
                    {"global_scale", std::vector<uint8_t>(4)}},
                   [=](const float* in, std::vector<Out>& o) {
                     const float g = lethe::nvfp4_global_scale(lethe::absmax(in, n), DType::F32);
                     std::memcpy(o[2].bytes.data(), &g, 4);
                     lethe::nvfp4_block_scales(in, cols, 0, rows, DType::F32, g, o[1].bytes.data());
                     lethe::nvfp4_quantize_rows(in, cols, 0, rows, o[1].bytes.data(), g, o[0].bytes.data());
                   }});
  // mx.quantize affine, group 64, F32 scales and biases (the input's dtype).
  for (const uint32_t bits : {2u, 3u, 4u, 5u, 6u, 8u}) {
    cases.push_back({"mlx_affine" + std::to_string(bits) + "_g64",
                     {{"weight", std::vector<uint8_t>(n * bits / 8)},
                      {"scales", std::vector<uint8_t>(n / 64 * 4)},
                      {"biases", std::vector<uint8_t>(n / 64 * 4)}},
                     [=](const float* in, std::vector<Out>& o) {
                       lethe::mlx_affine_quantize_rows(in, rows, cols, bits, 64, DType::F32, o[0].bytes.data(),
                                                       o[1].bytes.data(), o[2].bytes.data());
                     }});
  }
  // --reuse-scales (forget --like REF): the same codes with REF's scales and biases given
  // (here the ones the encoder made), each value checked against its code's neighbours.
  for (const uint32_t bits : {4u, 8u}) {
    const auto encode = [=](const float* in, std::vector<Out>& o, bool reuse) {
      lethe::mlx_affine_quantize_rows(in, rows, cols, bits, 64, DType::F32, o[0].bytes.data(), o[1].bytes.data(),
                                      o[2].bytes.data(), reuse);
    };
    cases.push_back({"mlx_affine" + std::to_string(bits) + "_g64_reuse",
                     {{"weight", std::vector<uint8_t>(n * bits / 8)},
                      {"scales", std::vector<uint8_t>(n / 64 * 4)},
                      {"biases", std::vector<uint8_t>(n / 64 * 4)}},
                     [=](const float* in, std::vector<Out>& o) { encode(in, o, true); },
                     [=](const float* in, std::vector<Out>& o) { encode(in, o, false); }});
  }
  // mx.quantize(w, mode=...) of an F32 weight: E8M0 (mxfp4, mxfp8) or E4M3 (nvfp4) scales.
  for (const auto mode : {amn::quant::MlxFpMode::mxfp4, amn::quant::MlxFpMode::nvfp4, amn::quant::MlxFpMode::mxfp8}) {
    const auto& f = amn::quant::mlx_fp_format(mode);
    cases.push_back({std::string("mlx_") + f.name,
                     {{"weight", std::vector<uint8_t>(n * f.bits / 8)}, {"scales", std::vector<uint8_t>(n / f.group_size)}},
                     [=](const float* in, std::vector<Out>& o) {
                       lethe::mlx_fp_quantize_rows(mode, in, rows, cols, DType::F32, o[0].bytes.data(), o[1].bytes.data());
                     }});
  }
  for (const auto mode : {amn::quant::MlxFpMode::mxfp4, amn::quant::MlxFpMode::mxfp8}) {
    const auto& f = amn::quant::mlx_fp_format(mode);
    const auto encode = [=](const float* in, std::vector<Out>& o, bool reuse) {
      lethe::mlx_fp_quantize_rows(mode, in, rows, cols, DType::F32, o[0].bytes.data(), o[1].bytes.data(), reuse);
    };
    cases.push_back({std::string("mlx_") + f.name + "_reuse",
                     {{"weight", std::vector<uint8_t>(n * f.bits / 8)}, {"scales", std::vector<uint8_t>(n / f.group_size)}},
                     [=](const float* in, std::vector<Out>& o) { encode(in, o, true); },
                     [=](const float* in, std::vector<Out>& o) { encode(in, o, false); }});
  }
  return cases;
}

void write_file(const std::string& path, const void* data, size_t size) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), std::streamsize(size));
}

}  // namespace

int main(int argc, char** argv) {
  amn::bench::BenchArgs args;
  if (!amn::bench::parse_bench_args(argc, argv, "bench_forget", 128, args)) return 2;
  const uint64_t rows = args.rows, cols = args.cols;
  const std::string& write_dir = args.write_dir;
  const uint64_t n = rows * cols;
  constexpr int kRuns = 5;

  // Weight-like values: normal, sigma 0.02 (an initialiser's scale), seeded.
  std::vector<float> input(n);
  std::mt19937 rng(15);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (auto& v : input) v = normal(rng);
  std::vector<float> copy(n, 1.0f);

  std::printf("Forget encoders, F32 %llu x %llu layer (%llu elements), one thread, best of %d runs, "
              "Melem/s (higher is better); memcpy of the same %llu input bytes, alternated with each "
              "encoder's runs\n\n",
              static_cast<unsigned long long>(rows), static_cast<unsigned long long>(cols),
              static_cast<unsigned long long>(n), kRuns, static_cast<unsigned long long>(n * 4));
  std::printf("CPU: %s; build: %s; implementation: %s (AMN_FORCE_IMPL=scalar for the reference)\n\n",
              amn::bench::cpu_model().c_str(), amn::bench::kArch, std::string(amn::active_impl_name()).c_str());
  std::printf("| encoder | Melem/s | memcpy Melem/s | encoder / memcpy |\n|---|---:|---:|---:|\n");

  auto cases = make_cases(rows, cols);
  for (auto& c : cases) {
    double enc = 1e30, cpy = 1e30;
    if (c.prepare) c.prepare(input.data(), c.outs);
    for (int r = 0; r < kRuns; ++r) {
      enc = std::min(enc, amn::bench::best_seconds(1, [&] { c.run(input.data(), c.outs); }));
      cpy = std::min(cpy, amn::bench::best_seconds(1, [&] { std::memcpy(copy.data(), input.data(), n * 4); }));
    }
    std::printf("| %s | %.0f | %.0f | %.3f |\n", c.name.c_str(), n / enc / 1e6, n / cpy / 1e6, cpy / enc);
    std::fflush(stdout);
    if (!write_dir.empty())
      for (const auto& o : c.outs) write_file(write_dir + "/" + c.name + "." + o.name + ".bin", o.bytes.data(), o.bytes.size());
  }
  if (!write_dir.empty()) write_file(write_dir + "/input.f32.bin", input.data(), n * 4);
  return 0;
}
