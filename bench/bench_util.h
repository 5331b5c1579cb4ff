// What every benchmark prints and times the same way: the machine line and best-of-N;
// and the driver the quantized-safetensors benchmarks share (bench_quant, bench_quant_int).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/cast.h"

namespace amn::bench {

using Clock = std::chrono::steady_clock;

inline std::string cpu_model() {
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

inline constexpr const char* kArch =
#if defined(__wasm__)
    "wasm32";
#elif defined(__aarch64__)
    "aarch64";
#elif defined(__x86_64__)
    "x86-64";
#else
    "other";
#endif

// The fastest of `runs` runs, in seconds (the least disturbed by a shared machine).
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

// The head of a per-implementation table: the machine line, then one column per
// implementation and a memcpy column.
template <class Impls>
void print_impl_table_head(const Impls& impls, std::string_view default_impl, const char* memcpy_column) {
  std::printf("CPU: %s; build: %s; default implementation: %.*s\n\n", cpu_model().c_str(), kArch,
              int(default_impl.size()), default_impl.data());
  std::printf("| case |");
  for (auto name : impls) std::printf(" %.*s |", int(name.size()), name.data());
  std::printf(" %s |\n|---|", memcpy_column);
  for (size_t i = 0; i <= impls.size(); ++i) std::printf("---:|");
  std::printf("\n");
}

// ---- The quantized-safetensors benchmarks (bench_quant, bench_quant_int) ----

// One input tensor of a case, as the PyTorch peers read it (DIR/<case>.<name>.bin).
struct Part {
  std::string name;
  std::vector<uint8_t> bytes;
};

// One benchmark case: its inputs and the kernel that turns them into rows * cols BF16
// values (false when the kernel reports an error).
struct QuantCase {
  std::string name;
  std::vector<Part> parts;
  std::function<bool(uint8_t* out)> run;
};

inline std::vector<uint8_t> random_bytes(size_t n, std::mt19937& rng) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i += 4) {
    const uint32_t r = static_cast<uint32_t>(rng());
    std::memcpy(v.data() + i, &r, std::min<size_t>(4, n - i));
  }
  return v;
}

// The layer benches' command line: `[rows cols] [--write-inputs DIR]` (default 4096 ×
// 11008). False, after a message, when rows are not a multiple of row_multiple or cols
// of 128.
struct BenchArgs {
  uint64_t rows = 4096, cols = 11008;
  std::string write_dir;
};
inline bool parse_bench_args(int argc, char** argv, const char* program, uint64_t row_multiple, BenchArgs& args) {
  std::vector<uint64_t> dims;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--write-inputs" && a + 1 < argc) args.write_dir = argv[++a];
    else dims.push_back(std::strtoull(arg.c_str(), nullptr, 10));
  }
  if (dims.size() == 2) args.rows = dims[0], args.cols = dims[1];
  if (args.rows == 0 || args.rows % row_multiple != 0 || args.cols % 128 != 0) {
    std::fprintf(stderr, "%s: rows must be a multiple of %llu, cols of 128\n", program,
                 static_cast<unsigned long long>(row_multiple));
    return false;
  }
  return true;
}

// `program [rows cols] [--write-inputs DIR]`: one table row per case (Melem/s under every
// implementation, then memcpy of the BF16 output), each output checked against the scalar
// reference's; with DIR, each case's parts and the reference's BF16 output are written
// to DIR/<case>.<part>.bin and DIR/<case>.out_bf16.bin. Rows must be a multiple of
// row_multiple, cols of 128. Returns main's exit code: 0, 1 if an output differs or a
// kernel fails, 2 for bad arguments.
inline int run_quant_bench(int argc, char** argv, const char* program, const char* title, uint64_t row_multiple,
                           const std::function<std::vector<QuantCase>(uint64_t rows, uint64_t cols)>& make_cases) {
  BenchArgs args;
  if (!parse_bench_args(argc, argv, program, row_multiple, args)) return 2;
  const uint64_t rows = args.rows, cols = args.cols;
  const std::string& write_dir = args.write_dir;
  const size_t n = static_cast<size_t>(rows * cols);
  constexpr int kRuns = 5;
  auto cases = make_cases(rows, cols);

  const std::string saved{amn::active_impl_name()};
  const auto impls = amn::available_impls();
  std::printf("%s to BF16, %llu x %llu layer (%zu elements), one thread, best of %d runs, "
              "Melem/s (higher is better)\n\n",
              title, static_cast<unsigned long long>(rows), static_cast<unsigned long long>(cols), n, kRuns);
  print_impl_table_head(impls, saved, "memcpy (BF16 output)");

  std::vector<uint8_t> out(n * 2, 1), want(n * 2), src(n * 2, 2);
  int failures = 0;
  for (auto& c : cases) {
    amn::force_impl("scalar");
    if (!c.run(want.data())) {
      std::fprintf(stderr, "%s: %s: the reference failed\n", program, c.name.c_str());
      return 1;
    }
    std::printf("| %s |", c.name.c_str());
    for (auto name : impls) {
      amn::force_impl(name);
      bool ok = true;
      const double s = best_seconds(kRuns, [&] { ok = c.run(out.data()) && ok; });
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

}  // namespace amn::bench
