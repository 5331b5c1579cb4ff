// What every benchmark prints and times the same way: the machine line and best-of-N.
#pragma once
#include <cstdio>
#include <string_view>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>

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

}  // namespace amn::bench
