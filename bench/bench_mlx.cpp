// MLX quantization, one thread: amn's MLX encoders (kernels/lethe: affine 2/3/4/5/6/8 bits,
// group 64; the mxfp4 / nvfp4 / mxfp8 modes) against MLX's own `quantize` on its CPU
// stream, on the same 4096 x 11008 F32 weight (bench_forget's layer, sigma 0.02). MLX is
// not built by this repository: its C API (mlx-c, libmlxc.so, which links MLX itself) is
// loaded at run time from the path the user gives in AMN_BENCH_MLX, as bench_ggml_quantize
// loads ggml. The two are timed round by round in this one process, alternately, and each
// case's bytes are compared (the program exits non-zero if one differs).
//
//   AMN_BENCH_MLX=/path/libmlxc.so bench_mlx [rows cols] [--rounds N]
//
// MLX's time is what `mx.eval(mx.quantize(w, ...))` costs on an evaluated input: building
// the graph and evaluating it (MLX is lazy), not copying the input in. Melem/s are each
// one's best round; the ratio is the median over rounds of MLX's time over amn's within a
// round (a shared machine's load moves both of a round alike).
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
#include "kernels/cast.h"
#include "kernels/lethe/mlx_encode.h"
#include "kernels/lethe/mlx_fp_encode.h"
#include "kernels/quant/mlx_fp.h"

namespace {

using amn::bench::Clock;

// The few declarations of mlx-c's C API (mlx/c/array.h, ops.h, stream.h, transforms.h,
// vector.h) this bench calls: every handle is a struct holding one pointer.
struct MlxHandle {
  void* ctx;
};
using MlxArray = MlxHandle;
using MlxVector = MlxHandle;
using MlxStream = MlxHandle;
struct MlxOptionalInt {
  int value;
  bool has_value;
};
constexpr int kMlxFloat32 = 10;  // mlx_dtype's MLX_FLOAT32 (array.h's enum order)

struct Mlx {
  MlxArray (*array_new_data)(const void* data, const int* shape, int dim, int dtype) = nullptr;
  int (*array_free)(MlxArray) = nullptr;
  size_t (*array_nbytes)(MlxArray) = nullptr;
  const uint8_t* (*array_data_uint8)(MlxArray) = nullptr;
  const uint32_t* (*array_data_uint32)(MlxArray) = nullptr;
  const float* (*array_data_float32)(MlxArray) = nullptr;
  int (*array_dtype)(MlxArray) = nullptr;
  MlxVector (*vector_new)() = nullptr;
  int (*vector_free)(MlxVector) = nullptr;
  size_t (*vector_size)(MlxVector) = nullptr;
  int (*vector_get)(MlxArray* out, MlxVector, size_t) = nullptr;
  MlxStream (*cpu_stream_new)() = nullptr;
  int (*eval)(MlxVector) = nullptr;
  int (*quantize)(MlxVector* res, MlxArray w, MlxOptionalInt group, MlxOptionalInt bits, const char* mode,
                  MlxArray global_scale, MlxStream s) = nullptr;
};

template <class F>
bool bind(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

bool load_mlx(const char* path, Mlx& m, std::string& error) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    error = dlerror();
    return false;
  }
  const bool ok = bind(lib, "mlx_array_new_data", m.array_new_data) && bind(lib, "mlx_array_free", m.array_free) &&
                  bind(lib, "mlx_array_nbytes", m.array_nbytes) && bind(lib, "mlx_array_data_uint8", m.array_data_uint8) &&
                  bind(lib, "mlx_array_data_uint32", m.array_data_uint32) &&
                  bind(lib, "mlx_array_data_float32", m.array_data_float32) && bind(lib, "mlx_array_dtype", m.array_dtype) &&
                  bind(lib, "mlx_vector_array_new", m.vector_new) && bind(lib, "mlx_vector_array_free", m.vector_free) &&
                  bind(lib, "mlx_vector_array_size", m.vector_size) && bind(lib, "mlx_vector_array_get", m.vector_get) &&
                  bind(lib, "mlx_default_cpu_stream_new", m.cpu_stream_new) && bind(lib, "mlx_eval", m.eval) &&
                  bind(lib, "mlx_quantize", m.quantize);
  if (!ok) error = "not mlx-c's C API (a symbol is missing)";
  return ok;
}

// One case: MLX's mode and parameters, and amn's encoder writing the same outputs.
struct Case {
  std::string name;
  const char* mode;
  int group, bits;
  std::vector<size_t> out_bytes;  // weight, scales[, biases]
  std::function<void(const float* in, std::vector<std::vector<uint8_t>>& outs)> run;
};

std::vector<Case> make_cases(uint64_t rows, uint64_t cols) {
  namespace lethe = amn::lethe;
  const uint64_t n = rows * cols;
  std::vector<Case> cases;
  for (const int bits : {2, 3, 4, 5, 6, 8}) {
    cases.push_back({"affine" + std::to_string(bits) + "_g64", "affine", 64, bits,
                     {n * bits / 8, n / 64 * 4, n / 64 * 4}, [=](const float* in, auto& o) {
                       lethe::mlx_affine_quantize_rows(in, rows, cols, bits, 64, amn::DType::F32, o[0].data(),
                                                       o[1].data(), o[2].data());
                     }});
  }
  for (const auto mode : {amn::quant::MlxFpMode::mxfp4, amn::quant::MlxFpMode::nvfp4, amn::quant::MlxFpMode::mxfp8}) {
    const auto& f = amn::quant::mlx_fp_format(mode);
    cases.push_back({f.name, f.name, int(f.group_size), int(f.bits), {n * f.bits / 8, n / f.group_size},
                     [=](const float* in, auto& o) {
                       lethe::mlx_fp_quantize_rows(mode, in, rows, cols, amn::DType::F32, o[0].data(), o[1].data());
                     }});
  }
  return cases;
}

double seconds_of(const std::function<void()>& fn) {
  const auto t0 = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t rows = 4096, cols = 11008;
  int rounds = 5;
  std::vector<uint64_t> dims;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--rounds" && a + 1 < argc) rounds = std::max(1, std::atoi(argv[++a]));
    else dims.push_back(std::strtoull(arg.c_str(), nullptr, 10));
  }
  if (dims.size() == 2) rows = dims[0], cols = dims[1];
  const uint64_t n = rows * cols;

  const char* path = std::getenv("AMN_BENCH_MLX");
  Mlx mlx;
  std::string error;
  if (!path || !*path) {
    std::fprintf(stderr, "bench_mlx: set AMN_BENCH_MLX to mlx-c's libmlxc.so (a build of ml-explore/mlx-c)\n");
    return 2;
  }
  if (!load_mlx(path, mlx, error)) {
    std::fprintf(stderr, "bench_mlx: cannot load %s: %s\n", path, error.c_str());
    return 2;
  }

  // Weight-like values: normal, sigma 0.02 (bench_forget's layer), seeded alike.
  std::vector<float> input(n);
  std::mt19937 rng(15);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (auto& v : input) v = normal(rng);
  const int shape[2] = {int(rows), int(cols)};
  const MlxArray w = mlx.array_new_data(input.data(), shape, 2, kMlxFloat32);
  const MlxStream cpu = mlx.cpu_stream_new();

  std::printf("MLX quantize, F32 %llu x %llu (%llu elements), one thread, %d interleaved rounds, Melem/s "
              "(best round each); amn / MLX: the median over rounds of MLX's time over amn's within a round\n\n",
              static_cast<unsigned long long>(rows), static_cast<unsigned long long>(cols),
              static_cast<unsigned long long>(n), rounds);
  std::printf("CPU: %s; build: %s; amn implementation: %s\nMLX: %s (mx.quantize on the default CPU stream)\n\n",
              amn::bench::cpu_model().c_str(), amn::bench::kArch, std::string(amn::active_impl_name()).c_str(), path);
  std::printf("| mode | group | bits | amn | MLX | amn / MLX | bytes |\n|---|---:|---:|---:|---:|---:|---|\n");

  bool all_same = true;
  for (auto& c : make_cases(rows, cols)) {
    std::vector<std::vector<uint8_t>> ours;
    for (const size_t b : c.out_bytes) ours.emplace_back(b);
    MlxVector res{nullptr};
    auto run_mlx = [&] {
      if (res.ctx) mlx.vector_free(res);
      res = mlx.vector_new();
      if (mlx.quantize(&res, w, {c.group, true}, {c.bits, true}, c.mode, MlxArray{nullptr}, cpu) != 0 || mlx.eval(res) != 0) {
        std::fprintf(stderr, "bench_mlx: mlx_quantize failed for %s\n", c.name.c_str());
        std::exit(1);
      }
    };
    auto run_ours = [&] { c.run(input.data(), ours); };
    run_mlx();  // one untimed call each: first-use costs are not timed
    run_ours();
    std::vector<double> ours_s, mlx_s, ratios;
    for (int r = 0; r < rounds; ++r) {
      double a, b;
      if (r % 2 == 0) a = seconds_of(run_ours), b = seconds_of(run_mlx);
      else b = seconds_of(run_mlx), a = seconds_of(run_ours);
      ours_s.push_back(a), mlx_s.push_back(b), ratios.push_back(b / a);
    }
    // Bytes: each MLX output against amn's (weights as uint32 words, scales and biases as stored).
    bool same = mlx.vector_size(res) == c.out_bytes.size();
    for (size_t i = 0; same && i < c.out_bytes.size(); ++i) {
      MlxArray a{nullptr};
      mlx.vector_get(&a, res, i);
      const void* data = i == 0 ? static_cast<const void*>(mlx.array_data_uint32(a))
                         : mlx.array_dtype(a) == kMlxFloat32 ? static_cast<const void*>(mlx.array_data_float32(a))
                                                             : static_cast<const void*>(mlx.array_data_uint8(a));
      same = mlx.array_nbytes(a) == c.out_bytes[i] && std::memcmp(data, ours[i].data(), c.out_bytes[i]) == 0;
      mlx.array_free(a);
    }
    mlx.vector_free(res);
    all_same = all_same && same;
    std::printf("| %s | %d | %d | %.0f | %.0f | %.2f | %s |\n", c.mode, c.group, c.bits,
                n / *std::min_element(ours_s.begin(), ours_s.end()) / 1e6,
                n / *std::min_element(mlx_s.begin(), mlx_s.end()) / 1e6, median(ratios), same ? "identical" : "DIFFER");
    std::fflush(stdout);
  }
  mlx.array_free(w);
  return all_same ? 0 : 1;
}
