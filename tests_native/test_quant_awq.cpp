// AWQ kernel against AutoAWQ's own dequantize_gemm output (fixtures/quantized/awq,
// made by make_fixtures.py there): 0 differing bytes for F16 (what dequantize_gemm
// returns) and BF16 / F32 (the exact F32 product rounded once, convert_awq_file's
// arithmetic: the "@bf16" / "@f32" tensors of make_round_once.py), under every
// implementation (the reference and each Highway target); hostile parameters rejected.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cast.h"
#include "kernels/quant/awq.h"
#include "quant_support.h"
#include "support.h"

using namespace amn::test::quant_fixtures;

namespace {

using amn::DType;

struct Layer {
  amn::quant::AwqParams params;
  amn::quant::AwqTensors tensors;
};

Layer layer(const StFile& f, const std::string& base) {
  const auto& qweight = f.tensor(base + ".qweight");
  const auto& scales = f.tensor(base + ".scales");
  Layer l;
  l.params.in_features = qweight.shape[0];
  l.params.out_features = scales.shape[1];
  l.params.group_size = qweight.shape[0] / scales.shape[0];
  l.params.scale_dtype = scales.dtype;
  l.tensors = {f.data(base + ".qweight"), f.data(base + ".qzeros"), f.data(base + ".scales")};
  return l;
}

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

TEST_CASE("AWQ dequantization equals AutoAWQ's dequantize_gemm", "[quant][awq]") {
  const std::string impl = GENERATE(Catch::Generators::from_range(impl_names()));
  const EachImpl scope(impl);
  INFO("implementation " << impl);
  const std::pair<const char*, std::vector<std::string>> variants[] = {
      {"w4_g128", {"model.layers.0.self_attn.q_proj"}},
      {"w4_g64_odd", {"model.layers.0.mlp.down_proj", "model.layers.0.mlp.up_proj"}},
  };
  for (const auto& [dir, bases] : variants) {
    const auto model = open_fixture(std::string("quantized/awq/") + dir + "/model.safetensors");
    const auto expected = open_fixture(std::string("quantized/awq/") + dir + "/expected.safetensors");
    for (const auto& base : bases) {
      INFO(dir << " " << base);
      const auto l = layer(model, base);
      REQUIRE(expected.tensor(base + ".weight").shape == std::vector<uint64_t>{l.params.out_features, l.params.in_features});
      for (DType out : {DType::F16, DType::BF16, DType::F32}) {
        INFO(amn::dtype_name(out));
        const auto want = expected_for(expected, base + ".weight", DType::F16, out);
        std::vector<uint8_t> got(want.size(), 0xAB);
        REQUIRE(amn::quant::dequantize_awq_rows(l.params, l.tensors, 0, l.params.out_features, out, got).ok());
        CHECK(differing(got, want) == 0);
        std::vector<uint8_t> pieces(want.size(), 0xCD);
        const size_t row_bytes = l.params.in_features * amn::dtype_info(out).block_bytes;
        for (uint64_t r = 0; r < l.params.out_features; r += 7) {
          const uint64_t e = std::min<uint64_t>(r + 7, l.params.out_features);
          REQUIRE(amn::quant::dequantize_awq_rows(l.params, l.tensors, r, e, out,
                                                  std::span<uint8_t>(pieces).subspan(r * row_bytes)).ok());
        }
        CHECK(differing(pieces, want) == 0);
      }
    }
  }
}

TEST_CASE("AWQ rejects inconsistent parameters and tensors", "[quant][awq]") {
  const auto model = open_fixture("quantized/awq/w4_g128/model.safetensors");
  const auto l = layer(model, "model.layers.0.self_attn.q_proj");
  std::vector<uint8_t> out(l.params.out_features * l.params.in_features * 4);
  auto run = [&](const amn::quant::AwqParams& p, const amn::quant::AwqTensors& t) {
    return amn::quant::dequantize_awq_rows(p, t, 0, p.out_features, DType::F16, out);
  };
  REQUIRE(run(l.params, l.tensors).ok());
  auto p = l.params;
  p.bits = 8;
  CHECK(run(p, l.tensors).error().code == amn::ErrorCode::unsupported);
  p = l.params;
  p.group_size = 96;  // does not divide 512
  CHECK(run(p, l.tensors).error().code == amn::ErrorCode::parse);
  p.group_size = 64;  // divides, but the scales have 4 rows, not 8
  CHECK(run(p, l.tensors).error().code == amn::ErrorCode::parse);
  p = l.params;
  p.out_features = 252;
  CHECK(run(p, l.tensors).error().code == amn::ErrorCode::parse);
  auto t = l.tensors;
  t.qzeros = t.qzeros.first(t.qzeros.size() / 2);
  const auto e = run(l.params, t);
  CHECK(e.error().code == amn::ErrorCode::parse);
  CHECK(e.error().message.find("qzeros") != std::string::npos);
  t = l.tensors;
  t.scales = {};
  CHECK(run(l.params, t).error().code == amn::ErrorCode::parse);
}

TEST_CASE("AWQ rejected-file fixtures are rejected", "[quant][awq]") {
  for (const char* name : {"qzeros_wrong_rows", "scales_wrong_length", "group_not_dividing"}) {
    INFO(name);
    const auto model = open_fixture(std::string("quantized/awq/rejected/") + name + "/model.safetensors");
    const auto l = layer(model, "model.layers.0.mlp.up_proj");
    std::vector<uint8_t> out(l.params.out_features * l.params.in_features * 2 + 64);
    const auto r = amn::quant::dequantize_awq_rows(l.params, l.tensors, 0, l.params.out_features, DType::F16, out);
    REQUIRE(!r.ok());
    CHECK(r.error().code == amn::ErrorCode::parse);
  }
  const auto missing = open_fixture("quantized/awq/rejected/missing_qzeros/model.safetensors");
  CHECK(missing.model.find("model.layers.0.mlp.up_proj.qzeros") == nullptr);
}
