// GGUF block quantization, one thread: amn::quantize_ggml against ggml's own
// ggml_quantize_chunk on the same F32 rows, for every type amn quantizes to. ggml is not
// built by this repository: its library is loaded at run time from the path the user
// gives in AMN_BENCH_GGML (a libggml-base.so of ggml's portable build, the reference the
// encoders are bit-exact with), and the two are timed round by round in this one process,
// alternately, so that a shared machine disturbs both alike. Where ggml was loaded, every
// type's bytes are compared too (the program exits non-zero if one differs).
//
//   AMN_BENCH_GGML=/path/libggml-base.so bench_ggml_quantize [elements] [--rounds N] [--only TYPE] [--imatrix no|yes]
//
// Melem/s are each one's best round; the ratio is the median over rounds of the two's
// time ratio within one round (robust to a shared machine's load, which moves both of a
// round alike). Without AMN_BENCH_GGML only amn's column is printed. Each type is timed twice where
// its encoder reads an importance matrix: without one (llama-quantize without
// --imatrix), and with a synthetic one (the same for both); the types ggml refuses
// without one (IQ2_XXS, IQ2_XS, IQ1_S) only with it. In WASM (under Node) only amn's
// column is printed, to set beside a native run's.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/ggml_type.h"
#include "kernels/cast.h"
#include "kernels/ggml/quantize.h"

namespace {

using amn::bench::Clock;
using amn::bench::cpu_model;
using amn::bench::kArch;

// ggml.h's ggml_quantize_chunk and ggml_quantize_init; enum ggml_type is passed as its id.
using GgmlQuantizeChunk = size_t (*)(int type, const float* src, void* dst, int64_t start, int64_t nrows,
                                     int64_t n_per_row, const float* imatrix);
using GgmlQuantizeInit = void (*)(int type);

struct Ggml {
  GgmlQuantizeChunk chunk = nullptr;
  GgmlQuantizeInit init = nullptr;
};

Ggml load_ggml(const char* path, std::string& error) {
  Ggml g;
#ifdef __EMSCRIPTEN__
  (void)path;
  error = "no native library in WASM";  // amn's column alone, against a native run's
  return g;
#endif
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    error = dlerror();
    return g;
  }
  g.chunk = reinterpret_cast<GgmlQuantizeChunk>(dlsym(lib, "ggml_quantize_chunk"));
  g.init = reinterpret_cast<GgmlQuantizeInit>(dlsym(lib, "ggml_quantize_init"));
  if (!g.chunk || !g.init) error = "no ggml_quantize_chunk / ggml_quantize_init in it";
  return g;
}

double seconds_of(const std::function<void()>& fn) {
  const auto t0 = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  size_t n = size_t{1} << 20;
  int rounds = 5;
  std::string only, with_matrix;  // --imatrix no / yes: only that row of each type
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--rounds" && a + 1 < argc) rounds = std::max(1, std::atoi(argv[++a]));
    else if (arg == "--only" && a + 1 < argc) only = argv[++a];
    else if (arg == "--imatrix" && a + 1 < argc) with_matrix = argv[++a];
    else n = std::strtoull(arg.c_str(), nullptr, 10);
  }
  constexpr int64_t kRow = 4096;  // a typical hidden size: whole blocks of every type
  const int64_t rows = std::max<int64_t>(static_cast<int64_t>(n) / kRow, 1);
  n = static_cast<size_t>(rows * kRow);

  Ggml ggml;
  std::string ggml_error;
  const char* ggml_path = std::getenv("AMN_BENCH_GGML");
  if (ggml_path && *ggml_path) ggml = load_ggml(ggml_path, ggml_error);

  // Weight-like rows (normal, sigma 0.05) and a positive importance vector per column.
  std::vector<float> src(n), imatrix(kRow);
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  for (auto& v : src) v = normal(rng);
  std::uniform_real_distribution<float> weight(0.05f, 4.0f);
  for (auto& v : imatrix) v = weight(rng);

  std::printf("GGUF quantization from F32, %zu elements (%lld rows of %lld), one thread, %d "
              "interleaved rounds, Melem/s (higher is better; best round each); amn / ggml: the median over rounds "
              "of the two's time ratio within a round\n\n",
              n, static_cast<long long>(rows), static_cast<long long>(kRow), rounds);
  std::printf("CPU: %s; build: %s; default implementation: %.*s\n", cpu_model().c_str(), kArch,
              int(amn::active_impl_name().size()), amn::active_impl_name().data());
  if (ggml.chunk) std::printf("ggml: %s\n\n", ggml_path);
  else if (ggml_path && *ggml_path) std::printf("ggml: not loaded (%s): %s\n\n", ggml_path, ggml_error.c_str());
  else std::printf("ggml: not loaded (set AMN_BENCH_GGML to a libggml-base.so)\n\n");
  std::printf("| type | imatrix | amn | ggml | amn / ggml | bytes |\n|---|---|---:|---:|---:|---|\n");

  bool all_same = true;
  for (uint32_t id = 0; id < amn::kGgmlTypeCount; ++id) {
    const auto type = static_cast<amn::GgmlType>(id);
    if (!amn::ggml_can_quantize(type)) continue;
    const amn::GgmlTraits& info = *amn::ggml_traits(type);
    if (!only.empty() && only != info.name) continue;
    const size_t bytes = static_cast<size_t>(rows) * (kRow / info.block_elements) * info.block_bytes;
    std::vector<const float*> matrices;
    if (!amn::ggml_quantize_requires_imatrix(type)) matrices.push_back(nullptr);
    if (amn::ggml_quantize_reads_imatrix(type)) matrices.push_back(imatrix.data());
    for (const float* w : matrices) {
      if (!with_matrix.empty() && with_matrix != (w ? "yes" : "no")) continue;
      std::vector<uint8_t> ours(bytes), theirs(bytes);
      // One untimed call each first: grids and tables built on first use are not timed.
      amn::quantize_ggml(type, src.data(), ours.data(), 1, kRow, w);
      if (ggml.chunk) {
        ggml.init(static_cast<int>(id));
        ggml.chunk(static_cast<int>(id), src.data(), theirs.data(), 0, 1, kRow, w);
      }
      // Per round: amn's time and ggml's, the order alternating. The ratio reported is
      // the median over rounds of ggml's time over amn's in the same round (a shared
      // machine's load moves both of a round alike); Melem/s are each one's best round.
      std::vector<double> ours_s, theirs_s, ratios;
      size_t wrote = 0, wrote_theirs = 0;
      auto run_ours = [&] { wrote = amn::quantize_ggml(type, src.data(), ours.data(), rows, kRow, w); };
      auto run_theirs = [&] { wrote_theirs = ggml.chunk(static_cast<int>(id), src.data(), theirs.data(), 0, rows, kRow, w); };
      for (int r = 0; r < rounds; ++r) {
        double a = 0, b = 0;
        if (r % 2 == 0 || !ggml.chunk) a = seconds_of(run_ours);
        if (ggml.chunk) b = seconds_of(run_theirs);
        if (r % 2 == 1 && ggml.chunk) a = seconds_of(run_ours);
        ours_s.push_back(a);
        if (ggml.chunk) {
          theirs_s.push_back(b);
          ratios.push_back(b / a);
        }
      }
      const double mel = n / *std::min_element(ours_s.begin(), ours_s.end()) / 1e6;
      std::printf("| %.*s | %s | %.1f |", int(info.name.size()), info.name.data(), w ? "yes" : "no", mel);
      if (ggml.chunk) {
        const double theirs_mel = n / *std::min_element(theirs_s.begin(), theirs_s.end()) / 1e6;
        std::sort(ratios.begin(), ratios.end());
        const double median = ratios.size() % 2 ? ratios[ratios.size() / 2]
                                                : (ratios[ratios.size() / 2 - 1] + ratios[ratios.size() / 2]) / 2;
        const bool same = wrote == bytes && wrote_theirs == bytes && ours == theirs;
        all_same = all_same && same;
        std::printf(" %.1f | %.2f | %s |\n", theirs_mel, median, same ? "identical" : "DIFFERENT");
      } else {
        std::printf(" - | - | %s |\n", wrote == bytes ? "-" : "WRONG SIZE");
        all_same = all_same && wrote == bytes;
      }
      std::fflush(stdout);
    }
  }
  return all_same ? 0 : 1;
}
