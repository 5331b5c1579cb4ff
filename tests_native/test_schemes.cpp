// Scheme detection and dequantization through the converter, against the outputs the
// producers' own dequantizers wrote (fixtures/quantized/<family>/*.expected.safetensors;
// provenance beside them). The kernels' own tests are test_quant_<family>.cpp; these
// check that detection finds the parts, and that plan + execute reproduce the bytes.
#include <catch2/catch.hpp>

#include <tuple>

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

TEST_CASE("without weight_block_size, the FP8 block is inferred from the shapes when one size is natural", "[schemes]") {
  // block_inferred has no config.json: q_proj [8, 8] with a [2, 2] grid (4..7 fit; 4 tiles
  // exactly and is the power of two), down_proj [320, 256] with [3, 2] (rows 107..159
  // fit: 128, the power of two; a partial last block).
  check_family("fp8", "block_inferred", "fp8");
  auto o = open_fixture("quantized/fp8", "block_inferred");
  REQUIRE(o->model);
  CHECK(logical(*o->model, "model.layers.0.self_attn.q_proj.weight")->variant ==
        "e4m3, 4x4 blocks (inferred from shapes), F32 scale_inv");
  CHECK(logical(*o->model, "model.layers.0.mlp.down_proj.weight")->variant ==
        "e4m3, 128x128 blocks (inferred from shapes), F32 scale_inv");
  CHECK(o->model->warnings ==
        std::vector<std::string>{"FP8 block size 128x128 inferred from the weight and scale shapes (no config names "
                                 "weight_block_size): model.layers.0.mlp.down_proj.weight",
                                 "FP8 block size 4x4 inferred from the weight and scale shapes (no config names "
                                 "weight_block_size): model.layers.0.self_attn.q_proj.weight"});
  // With a config naming the block, no inference and no warning (block_e4m3).
  auto configured = open_fixture("quantized/fp8", "block_e4m3");
  REQUIRE(configured->model);
  CHECK(configured->model->warnings.empty());
}

TEST_CASE("an FP8 block that the shapes leave ambiguous or inconsistent is reported", "[schemes]") {
  struct Case {
    uint64_t rows, cols, grid_rows, grid_cols;
    const char* error;
  };
  const Case cases[] = {
      // 300 rows in 3 blocks: 100..149 fit; 100 tiles exactly, 128 is the power of two.
      {300, 256, 3, 2,
       "its scale_inv grid [3, 2] gives no single block size for a [300, 256] weight and no config names "
       "weight_block_size (rows: every block size from 100 to 149 gives 3 blocks over 300, and both 100 and 128 "
       "are natural)"},
      // 24 columns in 2 blocks: 12..23 fit; 12 tiles exactly, 16 is the power of two.
      {8, 24, 2, 2,
       "its scale_inv grid [2, 2] gives no single block size for a [8, 24] weight and no config names "
       "weight_block_size (columns: every block size from 12 to 23 gives 2 blocks over 24, and both 12 and 16 are "
       "natural)"},
      // 14 rows in 3 blocks: 5..6 fit, none natural.
      {14, 8, 3, 1,
       "its scale_inv grid [3, 1] gives no single block size for a [14, 8] weight and no config names "
       "weight_block_size (rows: every block size from 5 to 6 gives 3 blocks over 14)"},
      // 10 rows in 6 blocks: no size gives 6 (5 gives 2, 2 gives 5, 1 gives 10).
      {10, 8, 6, 2,
       "its scale_inv grid [6, 2] gives no single block size for a [10, 8] weight and no config names "
       "weight_block_size (rows: no block size gives 6 blocks over 10)"},
  };
  for (const auto& c : cases) {
    INFO(c.rows << "x" << c.cols);
    const uint64_t wbytes = c.rows * c.cols, sbytes = c.grid_rows * c.grid_cols * 4;
    std::vector<uint8_t> data(wbytes + sbytes, 0);
    auto file = amn::test::make_safetensors(
        R"({"w.weight":{"dtype":"F8_E4M3","shape":[)" + std::to_string(c.rows) + "," + std::to_string(c.cols) +
            R"(],"data_offsets":[0,)" + std::to_string(wbytes) + R"(]},"w.weight_scale_inv":{"dtype":"F32","shape":[)" +
            std::to_string(c.grid_rows) + "," + std::to_string(c.grid_cols) + R"(],"data_offsets":[)" +
            std::to_string(wbytes) + "," + std::to_string(wbytes + sbytes) + "]}}",
        data);
    auto m = amn::test::open_memory(file);
    REQUIRE(m);
    REQUIRE(m->logical.size() == 1);
    CHECK(m->logical[0].error == c.error);
    CHECK(m->warnings.empty());
  }
  // Exactly one size fits: 10 rows in 4 blocks (3 only), 7 rows in 3 blocks (3 only).
  for (const auto& [rows, grid, block] : {std::tuple<uint64_t, uint64_t, uint64_t>{10, 4, 3}, {7, 3, 3}}) {
    const uint64_t wbytes = rows * 8, sbytes = grid * 4;
    std::vector<uint8_t> data(wbytes + sbytes, 0);
    auto file = amn::test::make_safetensors(
        R"({"w.weight":{"dtype":"F8_E4M3","shape":[)" + std::to_string(rows) + R"(,8],"data_offsets":[0,)" +
            std::to_string(wbytes) + R"(]},"w.weight_scale_inv":{"dtype":"F32","shape":[)" + std::to_string(grid) +
            R"(,1],"data_offsets":[)" + std::to_string(wbytes) + "," + std::to_string(wbytes + sbytes) + "]}}",
        data);
    auto m = amn::test::open_memory(file);
    REQUIRE(m);
    INFO(rows << " rows, grid " << grid);
    REQUIRE(m->logical.size() == 1);
    CHECK(m->logical[0].error == "");
    CHECK(m->logical[0].variant == "e4m3, " + std::to_string(block) + "x8 blocks (inferred from shapes), F32 scale_inv");
  }
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
  const std::string why =
      "its scale_inv grid [3, 3] gives no single block size for a [256, 512] weight and no config names "
      "weight_block_size (rows: every block size from 86 to 127 gives 3 blocks over 256)";
  CHECK(m->logical[0].error == why);
  auto plan = plan_convert(*m, cast_options(DType::BF16));
  REQUIRE_FALSE(plan);
  CHECK(plan.error().code == ErrorCode::parse);
  CHECK(plan.error().message == "tensor 'w.weight' (fp8): " + why);
}
