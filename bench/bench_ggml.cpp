// GGUF block dequantization throughput per implementation (amn::dequantize_ggml to F32),
// against memcpy of the F32 output (what dequantizing costs at best once it is memory
// bound). Prints a markdown table; checks every output against the scalar reference.
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

#include "formats/gguf/types.h"
#include "kernels/cast.h"
#include "kernels/ggml/dequantize.h"

namespace {

using Clock = std::chrono::steady_clock;

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");  // Linux; under Node through NODERAWFS
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0 || line.rfind("CPU part", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

constexpr const char* kArch =
#if defined(__wasm__)
    "wasm32";
#elif defined(__aarch64__)
    "aarch64";
#elif defined(__x86_64__)
    "x86-64";
#else
    "other";
#endif

template <class Fn>
double best_seconds(int runs, Fn fn) {
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = Clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

// The types with SIMD kernels, most used first, and where their F16 scales are.
struct BenchType {
  uint32_t id;
  const char* name;
  std::vector<size_t> f16_scales;
};
const BenchType kTypes[] = {
    {8, "Q8_0", {0}},    {2, "Q4_0", {0}},     {3, "Q4_1", {0, 2}},  {6, "Q5_0", {0}},
    {7, "Q5_1", {0, 2}}, {12, "Q4_K", {0, 2}}, {13, "Q5_K", {0, 2}}, {14, "Q6_K", {208}},
    {10, "Q2_K", {80, 82}}, {11, "Q3_K", {108}},
};

uint16_t f16_bits(float f) { return amn::scalar::f32_to_f16(f); }

// Weights-like blocks: random quants, scales around what quantizers produce for
// weights of σ ≈ 0.05 (normal F16 numbers, positive d, mins of either sign).
std::vector<uint8_t> make_blocks(const BenchType& t, size_t blocks) {
  const size_t bytes = amn::ggml_type_info(t.id)->block_bytes;
  std::mt19937 rng(t.id);
  std::uniform_real_distribution<float> scale(0.001f, 0.02f);
  std::vector<uint8_t> in(blocks * bytes);
  for (auto& b : in) b = uint8_t(rng());
  for (size_t i = 0; i < blocks; ++i) {
    for (size_t k = 0; k < t.f16_scales.size(); ++k) {
      const float v = k == 0 ? scale(rng) : (rng() & 1 ? -1.0f : 1.0f) * scale(rng);
      const uint16_t h = f16_bits(v);
      std::memcpy(in.data() + i * bytes + t.f16_scales[k], &h, 2);
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
    const auto* info = amn::ggml_type_info(t.id);
    const size_t blocks = n / info->block_elements;
    const auto in = make_blocks(t, blocks);
    if (!write_dir.empty()) {
      std::ofstream f(write_dir + "/" + t.name + ".q", std::ios::binary);
      f.write(reinterpret_cast<const char*>(in.data()), std::streamsize(in.size()));
    }
    amn::ggml::dequantizer(t.id)(in.data(), want.data(), blocks);
    std::printf("| %s |", t.name);
    for (auto name : impls) {
      amn::force_impl(name);
      const double s = best_seconds(kRuns, [&] { amn::dequantize_ggml(t.id, in.data(), out.data(), blocks); });
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
