// Scheme detection and dequantization through the converter, against the outputs the
// producers' own dequantizers wrote (fixtures/quantized/<family>/*.expected.safetensors;
// provenance beside them). The kernels' own tests are test_quant_<family>.cpp; these
// check that detection finds the parts, and that plan + execute reproduce the bytes.
#include <catch2/catch.hpp>

#include "convert/execute.h"
#include "convert/plan.h"
#include "scheme_support.h"
#include "support.h"

using namespace amn;
using amn::test::VecSink;
using amn::test::fixture_path;
using amn::test::read_file;
using namespace amn::test::schemes;

namespace {

void check_family(const std::string& family, const std::string& stem, const std::string& scheme) {
  INFO(family << "/" << stem);
  auto o = open_fixture("quantized/" + family, stem);
  REQUIRE(o->model);
  for (const auto& [name, want] : expected_tensors(fixture_path("quantized/" + family + "/" + stem + ".expected.safetensors"))) {
    INFO(name);
    const LogicalTensor* l = logical(*o->model, name);
    REQUIRE(l);
    CHECK(l->scheme == scheme);
    CHECK(l->error.empty());
    auto got = dequantized(*o, name, std::nullopt);
    REQUIRE(got);
    CHECK(*got == want.bytes);
  }
}

}  // namespace

TEST_CASE("FP8 weights are found and dequantized bit-exactly", "[schemes]") {
  check_family("fp8", "block_e4m3", "fp8");
  check_family("fp8", "channel_e4m3_ct", "fp8");
  check_family("fp8", "tensor_e5m2", "fp8");
}

TEST_CASE("an FP8 model converts with its scales consumed and other tensors kept", "[schemes]") {
  auto o = open_fixture("quantized/fp8", "channel_e4m3_ct");
  REQUIRE(o->model);
  auto plan = plan_convert(*o->model, cast_options(DType::BF16));
  REQUIRE(plan);
  std::vector<std::string> names;
  for (const auto& t : plan->tensors) names.push_back(t.name + " " + std::string(dtype_name(t.dtype)));
  // input_scale consumed; weight_scale consumed into the weight.
  CHECK(names == std::vector<std::string>{"model.layers.0.self_attn.k_proj.weight BF16",
                                          "model.layers.0.self_attn.o_proj.weight BF16"});
  auto block = open_fixture("quantized/fp8", "block_e4m3");
  REQUIRE(block->model);
  auto kept = plan_convert(*block->model, cast_options(DType::F16));
  REQUIRE(kept);
  bool norm_kept = false;
  for (const auto& t : kept->tensors) {
    if (t.name == "model.layers.0.input_layernorm.weight") norm_kept = t.dtype == DType::BF16;
  }
  CHECK(norm_kept);  // passthrough keeps its dtype without cast_all
  ConvertOptions all = cast_options(DType::F16);
  all.cast_all = true;
  auto cast = plan_convert(*block->model, all);
  REQUIRE(cast);
  for (const auto& t : cast->tensors) CHECK(t.dtype == DType::F16);
  CHECK(block->model->parameter_count() == 256 * 512 + 300 * 200 + 512);
}

TEST_CASE("an FP8 scale grid that fits no layout is reported, not guessed", "[schemes]") {
  // A 256x512 weight with a 3x3 scale grid: neither per-channel nor 128x128 blocks.
  std::vector<uint8_t> data(256 * 512 + 9 * 4, 0);
  auto file = amn::test::make_safetensors(
      R"({"w.weight":{"dtype":"F8_E4M3","shape":[256,512],"data_offsets":[0,131072]},)"
      R"("w.weight_scale_inv":{"dtype":"F32","shape":[3,3],"data_offsets":[131072,131108]}})",
      data);
  auto m = amn::test::open_memory(file);
  REQUIRE(m);
  REQUIRE(m->logical.size() == 1);
  CHECK(m->logical[0].error == "its scale_inv grid [3, 3] fits no scale layout for a [256, 512] weight with 128x128 blocks");
  auto plan = plan_convert(*m, cast_options(DType::BF16));
  REQUIRE_FALSE(plan);
  CHECK(plan.error().code == ErrorCode::parse);
  CHECK(plan.error().message == "tensor 'w.weight' (fp8): its scale_inv grid [3, 3] fits no scale layout for a [256, 512] weight with 128x128 blocks");
}
