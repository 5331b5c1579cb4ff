// Cast throughput per implementation, against memcpy of the output bytes (what a cast
// costs at best once it is memory bound). Prints a markdown table.
//
//   bench_cast [elements]        (default 16 Mi elements; best of 5 runs each)
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
#include "kernels/cast.h"

namespace {

using amn::DType;
using amn::bench::best_seconds;
using amn::bench::cpu_model;
using amn::bench::kArch;

struct Cast {
  DType from, to;
  const char* label;
};
constexpr Cast kCasts[] = {
    {DType::F32, DType::BF16, "F32→BF16"},
    {DType::F16, DType::BF16, "F16→BF16"},
    {DType::F16, DType::F32, "F16→F32"},
    {DType::BF16, DType::F32, "BF16→F32"},
};

}  // namespace

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : size_t{16} << 20;
  constexpr int kRuns = 5;

  // Weights-like inputs: normal values, as a checkpoint holds (NaN-free).
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  std::vector<float> f32(n);
  for (auto& v : f32) v = dist(rng);
  std::vector<uint8_t> in_f32(n * 4), in_f16(n * 2), in_bf16(n * 2);
  std::memcpy(in_f32.data(), f32.data(), n * 4);
  amn::scalar::cast_floats(DType::F32, DType::F16, in_f32.data(), in_f16.data(), n);
  amn::scalar::cast_floats(DType::F32, DType::BF16, in_f32.data(), in_bf16.data(), n);
  auto input = [&](DType t) -> const uint8_t* {
    return t == DType::F32 ? in_f32.data() : t == DType::F16 ? in_f16.data() : in_bf16.data();
  };
  std::vector<uint8_t> out(n * 4, 1), want(n * 4);

  const std::string saved{amn::active_impl_name()};
  std::printf("Cast throughput, %zu elements, best of %d runs, Melem/s (higher is better)\n\n",
              n, kRuns);
  std::printf("CPU: %s; build: %s; default implementation: %s\n\n", cpu_model().c_str(), kArch,
              saved.c_str());
  std::printf("| implementation |");
  for (const auto& c : kCasts) std::printf(" %s |", c.label);
  std::printf("\n|---|");
  for (size_t i = 0; i < std::size(kCasts); ++i) std::printf("---:|");
  std::printf("\n");

  int mismatches = 0;
  for (auto name : amn::available_impls()) {
    amn::force_impl(name);
    std::printf("| %.*s |", int(name.size()), name.data());
    for (const auto& c : kCasts) {
      const size_t out_bytes = n * amn::dtype_info(c.to).block_bytes;
      const double s = best_seconds(kRuns, [&] { amn::cast_floats(c.from, c.to, input(c.from), out.data(), n); });
      amn::scalar::cast_floats(c.from, c.to, input(c.from), want.data(), n);
      const bool same = std::memcmp(out.data(), want.data(), out_bytes) == 0;
      mismatches += !same;
      std::printf(" %.0f%s |", n / s / 1e6, same ? "" : " (WRONG)");
    }
    std::printf("\n");
  }
  amn::force_impl(saved);

  // memcpy of as many bytes as each cast writes.
  std::printf("| memcpy (output bytes) |");
  for (const auto& c : kCasts) {
    const size_t out_bytes = n * amn::dtype_info(c.to).block_bytes;
    const uint8_t* src = input(DType::F32);
    const double s = best_seconds(kRuns, [&] { std::memcpy(out.data(), src, out_bytes); });
    std::printf(" %.0f |", n / s / 1e6);
  }
  std::printf("\n");
  return mismatches == 0 ? 0 : 1;
}
