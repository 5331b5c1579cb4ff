// What every benchmark prints and times the same way: the machine line and best-of-N.
#pragma once
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

}  // namespace amn::bench
