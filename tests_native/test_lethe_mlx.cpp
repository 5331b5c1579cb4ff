// MLX affine encoder (kernels/lethe/mlx_encode.h) against mx.quantize: MLX's own bytes
// (fixtures/quantized/mlx, from the inputs fixtures/lethe/mlx draws again) and the edge
// cases of fixtures/lethe/mlx/edge.safetensors (README.md there), and the round trip
// through amn's MLX reader with the same scales and biases.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/lethe/mlx_encode.h"
#include "kernels/quant/mlx.h"
#include "quant_support.h"
#include "support.h"

using namespace amn;
using namespace amn::lethe;
using namespace amn::test::quant_fixtures;

namespace {

struct Encoded {
  std::vector<uint8_t> packed, scales, biases;
};

Encoded encode(const std::vector<float>& x, uint64_t rows, uint64_t cols, uint32_t bits, uint64_t group, DType dt) {
  const uint64_t size = dtype_info(dt).block_bytes;
  Encoded e{std::vector<uint8_t>(rows * cols * bits / 8), std::vector<uint8_t>(rows * cols / group * size),
            std::vector<uint8_t>(rows * cols / group * size)};
  mlx_affine_quantize_rows(x.data(), rows, cols, bits, group, dt, e.packed.data(), e.scales.data(), e.biases.data());
  return e;
}

}  // namespace

TEST_CASE("lethe mlx: scale and bias of a group (mx.quantize's edge cases)", "[lethe][mlx]") {
  std::vector<float> g(32, 0.0f);
  auto a = mlx_affine_params(g.data(), 32, 4);
  CHECK(a.scale == -1e-7f);  // all zero: -eps, no bias
  CHECK(a.bias == 0.0f);
  for (int i = 0; i < 32; ++i) g[i] = float(i) * 0.03125f;  // 0 .. 0.96875
  a = mlx_affine_params(g.data(), 32, 4);
  CHECK(a.bias == 0.96875f);  // the edge is the max (|min| is not larger), q0 = -15
  CHECK(a.scale == 0.96875f / -15.0f);
  for (int i = 0; i < 32; ++i) g[i] = -1.0f - float(i) / 31.0f;  // negative only: the edge is the min
  a = mlx_affine_params(g.data(), 32, 4);
  CHECK(a.bias == -2.0f);
  CHECK(a.scale > 0.0f);
}

TEST_CASE("lethe mlx: mx.quantize's own bytes for every bits and group of the MLX fixtures", "[lethe][mlx]") {
  for (const std::string dir : {"mixed_bf16", "f16"}) {
    const StFile in = open_fixture("lethe/mlx/" + dir + ".input.safetensors");
    const StFile ex = open_fixture("quantized/mlx/" + dir + "/model.safetensors");
    for (const auto& rec : in.model.tensors) {
      const std::string& name = rec.name;
      if (name == "model.norm.weight") continue;
      INFO(dir << " " << name);
      const auto& t = in.tensor(name);
      const std::string base = name.substr(0, name.size() - 7);
      const uint64_t rows = t.shape[0], cols = t.shape[1];
      const uint32_t bits = uint32_t(ex.tensor(name).shape[1] * 32 / cols);
      const uint64_t group = cols / ex.tensor(base + ".scales").shape[1];
      const std::vector<float> x = as_f32(in, name);
      const Encoded e = encode(x, rows, cols, bits, group, t.dtype);
      CHECK(differing(e.packed, bytes_of(ex, name)) == 0);
      CHECK(differing(e.scales, bytes_of(ex, base + ".scales")) == 0);
      CHECK(differing(e.biases, bytes_of(ex, base + ".biases")) == 0);
    }
  }
}

TEST_CASE("lethe mlx: edge cases (zeros, constants, one-signed groups, ties, NaN, Inf) in F32, BF16, F16",
          "[lethe][mlx]") {
  const StFile in = open_fixture("lethe/mlx/edge.input.safetensors");
  const StFile ex = open_fixture("lethe/mlx/edge.safetensors");
  for (const std::string dt : {"f32", "bf16", "f16"}) {
    const auto& t = in.tensor(dt);
    const uint64_t rows = t.shape[0], cols = t.shape[1];
    const std::vector<float> x = as_f32(in, dt);
    for (uint32_t bits : {2u, 3u, 4u, 5u, 6u, 8u}) {
      for (uint64_t group : {32u, 64u, 128u}) {
        const std::string n = dt + ".b" + std::to_string(bits) + "g" + std::to_string(group);
        INFO(n);
        const Encoded e = encode(x, rows, cols, bits, group, t.dtype);
        CHECK(differing(e.packed, bytes_of(ex, n + ".weight")) == 0);
        CHECK(differing(e.scales, bytes_of(ex, n + ".scales")) == 0);
        CHECK(differing(e.biases, bytes_of(ex, n + ".biases")) == 0);
        // forget(remember(...)) with the same scales and biases: amn's reader (F32), encoded
        // again. Whole F32 groups only: a BF16/F16 dequantization rounds, and at 8 bits
        // (BF16) several codes give one value (docs/formats/quantized/mlx.md).
        if (dt != "f32") continue;
        std::vector<float> back(rows * cols);
        quant::MlxParams p{bits, group, rows, cols, t.dtype};
        REQUIRE(quant::dequantize_mlx_rows(p, {e.packed, e.scales, e.biases}, 0, rows, DType::F32,
                                           {reinterpret_cast<uint8_t*>(back.data()), back.size() * 4})
                    .ok());
        Encoded again = e;
        mlx_affine_quantize_rows(back.data(), rows, cols, bits, group, t.dtype, again.packed.data(),
                                 again.scales.data(), again.biases.data(), true);
        CHECK(differing(again.packed, e.packed) == 0);
      }
    }
  }
}
