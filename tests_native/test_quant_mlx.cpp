// MLX affine kernel against mx.dequantize's output (fixtures/quantized/mlx, made by MLX
// itself through make_fixtures.py there): 0 differing bytes in the scales' dtype (BF16 and
// F16 files) and in the other types (PyTorch casts of it), for bits 2, 3, 4, 5, 6, 8 and
// group sizes 32, 64, 128 taken from config.json's per-layer "quantization" entries,
// under every implementation (the reference and each Highway target).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <simdjson.h>

#include "kernels/cast.h"
#include "kernels/quant/mlx.h"
#include "quant_support.h"
#include "support.h"

using namespace amn::test::quant_fixtures;

namespace {

using amn::DType;

// Runs the enclosing test case once per implementation this binary can run (GENERATE
// below), the reference ("scalar") included; restores the one in use afterwards.
struct EachImpl {
  std::string saved{amn::active_impl_name()};
  explicit EachImpl(const std::string& impl) { REQUIRE(amn::force_impl(impl)); }
  ~EachImpl() { amn::force_impl(saved); }
};
std::vector<std::string> impl_names() {
  const auto names = amn::available_impls();
  return {names.begin(), names.end()};
}

}  // namespace

TEST_CASE("MLX dequantization equals mx.dequantize", "[quant][mlx]") {
  const std::string impl = GENERATE(Catch::Generators::from_range(impl_names()));
  const EachImpl scope(impl);
  INFO("implementation " << impl);
  int layers_checked = 0;
  for (const char* dir : {"mixed_bf16", "f16"}) {
    const std::string root = std::string("quantized/mlx/") + dir;
    const auto model = open_fixture(root + "/model.safetensors");
    const auto expected = open_fixture(root + "/expected.safetensors");
    const auto config = amn::test::read_file(amn::test::fixture_path(root + "/config.json"));
    simdjson::dom::parser parser;
    simdjson::dom::object quant;
    REQUIRE(!parser.parse(reinterpret_cast<const char*>(config.data()), config.size())["quantization"].get_object().get(quant));
    uint64_t default_bits = 0, default_group = 0;
    REQUIRE(!quant["bits"].get_uint64().get(default_bits));
    REQUIRE(!quant["group_size"].get_uint64().get(default_group));
    for (const auto& t : expected.model.tensors) {
      const std::string base = t.name.substr(0, t.name.size() - std::string(".weight").size());
      INFO(dir << " " << base);
      amn::quant::MlxParams p;
      p.bits = uint32_t(default_bits);
      p.group_size = default_group;
      simdjson::dom::object layer;
      if (!quant[base].get_object().get(layer)) {  // a per-layer override
        uint64_t b = 0, g = 0;
        REQUIRE(!layer["bits"].get_uint64().get(b));
        REQUIRE(!layer["group_size"].get_uint64().get(g));
        p.bits = uint32_t(b);
        p.group_size = g;
      }
      const auto& w = model.tensor(base + ".weight");
      const auto& s = model.tensor(base + ".scales");
      REQUIRE(w.dtype == DType::U32);
      p.out_features = w.shape[0];
      p.in_features = w.shape[1] * 32 / p.bits;
      p.scale_dtype = s.dtype;
      REQUIRE(t.dtype == s.dtype);
      REQUIRE(t.shape == std::vector<uint64_t>{p.out_features, p.in_features});
      const amn::quant::MlxTensors mt{model.data(base + ".weight"), model.data(base + ".scales"),
                                      model.data(base + ".biases")};
      for (DType out : {DType::F16, DType::BF16, DType::F32}) {
        INFO(amn::dtype_name(out));
        const auto want = expected_as(expected.data(t.name), t.dtype, out);
        std::vector<uint8_t> got(want.size(), 0xAB);
        REQUIRE(amn::quant::dequantize_mlx_rows(p, mt, 0, p.out_features, out, got).ok());
        CHECK(differing(got, want) == 0);
        std::vector<uint8_t> pieces(want.size(), 0xCD);
        const size_t row_bytes = p.in_features * amn::dtype_info(out).block_bytes;
        for (uint64_t r = 0; r < p.out_features; r += 3) {
          const uint64_t e = std::min<uint64_t>(r + 3, p.out_features);
          REQUIRE(amn::quant::dequantize_mlx_rows(p, mt, r, e, out, std::span<uint8_t>(pieces).subspan(r * row_bytes)).ok());
        }
        CHECK(differing(pieces, want) == 0);
      }
      ++layers_checked;
    }
  }
  CHECK(layers_checked == 13);
}

TEST_CASE("MLX rejects inconsistent parameters and tensors", "[quant][mlx]") {
  const auto model = open_fixture("quantized/mlx/f16/model.safetensors");
  const std::string base = "model.layers.0.self_attn.q_proj";
  amn::quant::MlxParams p;
  p.bits = 4;
  p.group_size = 64;
  p.out_features = 32;
  p.in_features = 128;
  p.scale_dtype = DType::F16;
  const amn::quant::MlxTensors t{model.data(base + ".weight"), model.data(base + ".scales"), model.data(base + ".biases")};
  std::vector<uint8_t> out(32 * 128 * 4);
  auto run = [&](const amn::quant::MlxParams& q, const amn::quant::MlxTensors& tt) {
    return amn::quant::dequantize_mlx_rows(q, tt, 0, q.out_features, DType::F32, out);
  };
  REQUIRE(run(p, t).ok());
  auto q = p;
  q.bits = 7;
  CHECK(run(q, t).error().code == amn::ErrorCode::unsupported);
  q = p;
  q.group_size = 48;
  CHECK(run(q, t).error().code == amn::ErrorCode::parse);
  q.group_size = 32;  // divides, but the scales hold 2 groups per row, not 4
  const auto e = run(q, t);
  CHECK(e.error().code == amn::ErrorCode::parse);
  CHECK(e.error().message.find("scales") != std::string::npos);
  q = p;
  q.in_features = 100;  // 100 * 4 bits is not whole words
  CHECK(run(q, t).error().code == amn::ErrorCode::parse);
  auto tt = t;
  tt.biases = tt.biases.first(tt.biases.size() - 2);
  CHECK(run(p, tt).error().code == amn::ErrorCode::parse);
  CHECK(amn::quant::dequantize_mlx_rows(p, t, 0, 33, DType::F32, out).error().code == amn::ErrorCode::invalid_argument);
}

TEST_CASE("MLX rejected-file fixtures are rejected", "[quant][mlx]") {
  const std::string base = "model.layers.0.self_attn.q_proj";
  const struct {
    const char* name;
    uint32_t bits;
    amn::ErrorCode code;
  } cases[] = {{"scales_wrong_length", 4, amn::ErrorCode::parse},
               {"bits_not_matching", 3, amn::ErrorCode::parse},
               {"unsupported_bits", 7, amn::ErrorCode::unsupported}};
  for (const auto& c : cases) {
    INFO(c.name);
    const auto model = open_fixture(std::string("quantized/mlx/rejected/") + c.name + "/model.safetensors");
    amn::quant::MlxParams p;
    p.bits = c.bits;  // what each file's config.json says for this layer
    p.group_size = 64;
    p.out_features = model.tensor(base + ".weight").shape[0];
    p.in_features = model.tensor(base + ".weight").shape[1] * 32 / c.bits;
    p.scale_dtype = model.tensor(base + ".scales").dtype;
    const amn::quant::MlxTensors t{model.data(base + ".weight"), model.data(base + ".scales"), model.data(base + ".biases")};
    std::vector<uint8_t> out(p.out_features * p.in_features * 4 + 64);
    const auto r = amn::quant::dequantize_mlx_rows(p, t, 0, p.out_features, DType::F32, out);
    REQUIRE(!r.ok());
    CHECK(r.error().code == c.code);
  }
  const auto missing = open_fixture("quantized/mlx/rejected/missing_biases/model.safetensors");
  CHECK(missing.model.find(base + ".biases") == nullptr);
}

TEST_CASE("MLX kernel runs on row slices of its tensors", "[quant][mlx]") {
  const std::string base = "model.layers.0.self_attn.k_proj";  // 6-bit, group 128, 16 x 256
  const auto model = open_fixture("quantized/mlx/f16/model.safetensors");
  amn::quant::MlxParams p;
  p.bits = 6;
  p.group_size = 128;
  p.out_features = 16;
  p.in_features = 256;
  p.scale_dtype = DType::F16;
  const amn::quant::MlxTensors t{model.data(base + ".weight"), model.data(base + ".scales"), model.data(base + ".biases")};
  std::vector<uint8_t> full(16 * 256 * 2);
  REQUIRE(amn::quant::dequantize_mlx_rows(p, t, 0, 16, DType::F16, full).ok());
  const uint64_t b = 5, e = 11, words = 256 * 6 / 32;
  auto q = p;
  q.out_features = e - b;
  const amn::quant::MlxTensors s{t.weight.subspan(b * words * 4, (e - b) * words * 4),
                                 t.scales.subspan(b * 2 * 2, (e - b) * 2 * 2), t.biases.subspan(b * 2 * 2, (e - b) * 2 * 2)};
  std::vector<uint8_t> part((e - b) * 256 * 2);
  REQUIRE(amn::quant::dequantize_mlx_rows(q, s, 0, e - b, DType::F16, part).ok());
  CHECK(std::equal(part.begin(), part.end(), full.begin() + b * 256 * 2));
}
