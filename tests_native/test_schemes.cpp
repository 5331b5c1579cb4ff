// Scheme detection and dequantization through the converter, against the outputs the
// producers' own dequantizers wrote (fixtures/quantized/<family>/*.expected.safetensors;
// provenance beside them). The kernels' own tests are test_quant_<family>.cpp; these
// check that detection finds the parts, and that plan + execute reproduce the bytes.
#include <catch2/catch.hpp>

#include "convert/execute.h"
#include "convert/plan.h"
#include "support.h"

using namespace amn;
using amn::test::fixture_path;
using amn::test::read_file;

namespace {

struct VecSink : Sink {
  std::vector<uint8_t> bytes;
  Status write(std::span<const uint8_t> b) override {
    bytes.insert(bytes.end(), b.begin(), b.end());
    return {};
  }
};

// A fixture model (with its config.json when it has one), opened as the CLI opens a folder.
struct Opened {
  std::vector<uint8_t> model_bytes, config_bytes;
  FileSet files;
  Result<Model> model = make_error(ErrorCode::internal, "not opened");
};

std::unique_ptr<Opened> open_fixture(const std::string& family, const std::string& stem) {
  auto o = std::make_unique<Opened>();
  o->model_bytes = read_file(fixture_path("quantized/" + family + "/" + stem + ".safetensors"));
  o->config_bytes = read_file(fixture_path("quantized/" + family + "/" + stem + ".config.json"));
  o->files.add("model.safetensors", std::make_unique<MemorySource>(o->model_bytes));
  if (!o->config_bytes.empty()) o->files.add("config.json", std::make_unique<MemorySource>(o->config_bytes));
  o->model = open_model(o->files, {});
  return o;
}

// Every tensor of the expected file, by name: the dequantized bytes.
std::vector<std::pair<std::string, std::vector<uint8_t>>> expected_tensors(const std::string& path) {
  auto bytes = read_file(path);
  FileSet set;
  set.add("e.safetensors", std::make_unique<MemorySource>(bytes));
  auto m = open_model(set, {});
  REQUIRE(m);
  std::vector<std::pair<std::string, std::vector<uint8_t>>> out;
  for (const auto& t : m->tensors) {
    out.emplace_back(t.name, std::vector<uint8_t>(bytes.begin() + t.offset, bytes.begin() + t.offset + t.nbytes));
  }
  return out;
}

std::vector<uint8_t> dequantized(Opened& o, const std::string& name) {
  auto plan = plan_tensor(*o.model, name, std::nullopt);
  REQUIRE(plan);
  VecSink sink;
  REQUIRE(execute_plan(*plan, o.files, sink));
  return sink.bytes;
}

void check_family(const std::string& family, const std::string& stem, const std::string& scheme) {
  INFO(family << "/" << stem);
  auto o = open_fixture(family, stem);
  REQUIRE(o->model);
  for (const auto& [name, bytes] : expected_tensors(fixture_path("quantized/" + family + "/" + stem + ".expected.safetensors"))) {
    INFO(name);
    const LogicalTensor* l = nullptr;
    for (const auto& x : o->model->logical) if (x.name == name) l = &x;
    REQUIRE(l);
    CHECK(l->scheme == scheme);
    CHECK(l->error.empty());
    CHECK(dequantized(*o, name) == bytes);
  }
}

}  // namespace

TEST_CASE("FP8 weights are found and dequantized bit-exactly", "[schemes]") {
  check_family("fp8", "block_e4m3", "fp8");
  check_family("fp8", "channel_e4m3_ct", "fp8");
  check_family("fp8", "tensor_e5m2", "fp8");
}

TEST_CASE("an FP8 model converts with its scales consumed and other tensors kept", "[schemes]") {
  auto o = open_fixture("fp8", "channel_e4m3_ct");
  REQUIRE(o->model);
  auto plan = plan_convert(*o->model, cast_options(DType::BF16));
  REQUIRE(plan);
  std::vector<std::string> names;
  for (const auto& t : plan->tensors) names.push_back(t.name + " " + std::string(dtype_name(t.dtype)));
  // input_scale consumed; weight_scale consumed into the weight.
  CHECK(names == std::vector<std::string>{"model.layers.0.self_attn.k_proj.weight BF16",
                                          "model.layers.0.self_attn.o_proj.weight BF16"});
  auto block = open_fixture("fp8", "block_e4m3");
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
