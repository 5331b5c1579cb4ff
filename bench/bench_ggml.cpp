// GGUF block dequantization throughput per implementation (amn::dequantize_ggml to F32),
// against memcpy of the F32 output (what dequantizing costs at best once it is memory
// bound). Prints a markdown table; checks every output against the scalar reference.
// Every type dequantize_ggml handles is timed; every one has Highway kernels (the
// "scalar" column is the reference).
//
//   bench_ggml [elements] [--write-inputs DIR]
//
// (default 16 Mi elements; best of 5 runs each, single thread). --write-inputs writes
// each type's input blocks to DIR/<TYPE>.q, so that other dequantizers (ggml's to_float,
// gguf-py) can be timed on the very same bytes (bench/README.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/ggml_type.h"
#include "kernels/cast.h"
#include "kernels/ggml/dequantize.h"

namespace {

using amn::bench::best_seconds;
using amn::bench::cpu_model;
using amn::bench::kArch;

// Every type dequantize_ggml handles: the legacy and K types first, most used first,
// then the others. `scales` says where each block's scales are, so that they can be set
// to weight-like values.
enum class Scale {
  kF16,       // F16 scale (the first of a type: positive; later ones: min, either sign)
  kF32,       // F32 scale (Q8_K)
  kE8M0,      // E8M0 exponent byte (MXFP4): 2^-10 .. 2^-4
  kIq1mF16,   // IQ1_M: F16 scale in the top nibbles of the four uint16 scale words
};
struct ScaleAt {
  size_t offset;
  Scale kind = Scale::kF16;
};
struct BenchType {
  uint32_t id;
  const char* name;
  std::vector<ScaleAt> scales;
};
const BenchType kTypes[] = {
    {8, "Q8_0", {{0}}},
    {2, "Q4_0", {{0}}},
    {3, "Q4_1", {{0}, {2}}},
    {6, "Q5_0", {{0}}},
    {7, "Q5_1", {{0}, {2}}},
    {12, "Q4_K", {{0}, {2}}},
    {13, "Q5_K", {{0}, {2}}},
    {14, "Q6_K", {{208}}},
    {10, "Q2_K", {{80}, {82}}},
    {11, "Q3_K", {{108}}},
    {9, "Q8_1", {{0}, {2}}},  // s (offset 2) is not read; set finite anyway
    {15, "Q8_K", {{0, Scale::kF32}}},
    {16, "IQ2_XXS", {{0}}},
    {17, "IQ2_XS", {{0}}},
    {22, "IQ2_S", {{0}}},
    {18, "IQ3_XXS", {{0}}},
    {21, "IQ3_S", {{0}}},
    {19, "IQ1_S", {{0}}},
    {29, "IQ1_M", {{48, Scale::kIq1mF16}}},
    {20, "IQ4_NL", {{0}}},
    {23, "IQ4_XS", {{0}}},
    {34, "TQ1_0", {{52}}},
    {35, "TQ2_0", {{64}}},
    {39, "MXFP4", {{0, Scale::kE8M0}}},
    {40, "NVFP4", {}},  // UE4M3 scales: every byte is finite (0x7F reads as 0)
    {41, "Q1_0", {{0}}},
    {42, "Q2_0", {{0}}},
};

uint16_t f16_bits(float f) { return amn::scalar::f32_to_f16(f); }

// Weights-like blocks: random quants, scales around what quantizers produce for
// weights of σ ≈ 0.05 (normal F16 numbers, positive d, mins of either sign), so that
// no block decodes to NaN or infinity.
std::vector<uint8_t> make_blocks(const BenchType& t, size_t blocks) {
  const size_t bytes = amn::ggml_traits(static_cast<amn::GgmlType>(t.id))->block_bytes;
  std::mt19937 rng(t.id);
  std::uniform_real_distribution<float> scale(0.001f, 0.02f);
  std::vector<uint8_t> in(blocks * bytes);
  for (auto& b : in) b = uint8_t(rng());
  for (size_t i = 0; i < blocks; ++i) {
    uint8_t* block = in.data() + i * bytes;
    for (size_t k = 0; k < t.scales.size(); ++k) {
      const float v = k == 0 ? scale(rng) : (rng() & 1 ? -1.0f : 1.0f) * scale(rng);
      uint8_t* at = block + t.scales[k].offset;
      switch (t.scales[k].kind) {
        case Scale::kF16: {
          const uint16_t h = f16_bits(v);
          std::memcpy(at, &h, 2);
          break;
        }
        case Scale::kF32:
          std::memcpy(at, &v, 4);
          break;
        case Scale::kE8M0:
          *at = uint8_t(118 + rng() % 7);  // d = 2^(e - 128): 2^-10 .. 2^-4
          break;
        case Scale::kIq1mF16: {
          const uint16_t h = f16_bits(v);
          for (int w = 0; w < 4; ++w) {  // nibble w of h into bits 12..15 of word w
            uint16_t word;
            std::memcpy(&word, at + 2 * w, 2);
            word = uint16_t((word & 0x0FFF) | (((h >> (4 * w)) & 0xF) << 12));
            std::memcpy(at + 2 * w, &word, 2);
          }
          break;
        }
      }
    }
  }
  return in;
}

}  // namespace

int main(int argc, char** argv) {
  size_t n = size_t{16} << 20;
  std::string write_dir;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--write-inputs" && a + 1 < argc) {
      write_dir = argv[++a];
    } else {
      n = std::strtoull(arg.c_str(), nullptr, 10);
    }
  }
  n = std::max<size_t>(n / 256, 1) * 256;  // whole blocks of every type
  constexpr int kRuns = 5;

  const std::string saved{amn::active_impl_name()};
  const auto impls = amn::available_impls();
  std::printf("GGUF dequantization to F32, %zu elements, one thread, best of %d runs, Melem/s "
              "(higher is better)\n\n", n, kRuns);
  std::printf("CPU: %s; build: %s; default implementation: %s\n\n", cpu_model().c_str(), kArch,
              saved.c_str());
  std::printf("| type |");
  for (auto name : impls) std::printf(" %.*s |", int(name.size()), name.data());
  std::printf(" memcpy (F32 output) |\n|---|");
  for (size_t i = 0; i <= impls.size(); ++i) std::printf("---:|");
  std::printf("\n");

  std::vector<float> out(n, 1.0f), want(n), src(n, 2.0f);
  int mismatches = 0;
  for (const auto& t : kTypes) {
    const auto* info = amn::ggml_traits(static_cast<amn::GgmlType>(t.id));
    const size_t blocks = n / info->block_elements;
    const auto in = make_blocks(t, blocks);
    if (!write_dir.empty()) {
      std::ofstream f(write_dir + "/" + t.name + ".q", std::ios::binary);
      f.write(reinterpret_cast<const char*>(in.data()), std::streamsize(in.size()));
    }
    amn::ggml::dequantizer(static_cast<amn::GgmlType>(t.id))(in.data(), want.data(), blocks);
    std::printf("| %s |", t.name);
    for (auto name : impls) {
      amn::force_impl(name);
      const double s = best_seconds(kRuns, [&] { amn::dequantize_ggml(static_cast<amn::GgmlType>(t.id), in.data(), out.data(), blocks); });
      const bool same = std::memcmp(out.data(), want.data(), n * 4) == 0;
      mismatches += !same;
      std::printf(" %.0f%s |", n / s / 1e6, same ? "" : " (WRONG)");
      std::fflush(stdout);
    }
    amn::force_impl(saved);
    const double s = best_seconds(kRuns, [&] { std::memcpy(out.data(), src.data(), n * 4); });
    std::printf(" %.0f |\n", n / s / 1e6);
  }
  return mismatches == 0 ? 0 : 1;
}
