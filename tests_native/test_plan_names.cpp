// Output names must be unique: a quantized weight's logical name that is also a stored
// tensor (a folder holding a GPTQ model and its dequantized copy, opened together) is
// refused before anything is written, naming both sources.
#include <catch2/catch.hpp>

#include "convert/plan.h"
#include "scheme_support.h"
#include "support.h"

using namespace amn;
using amn::test::fixture_path;
using amn::test::read_file;
using amn::test::schemes::Opened;

namespace {

// fixtures/quantized/gptq/w4_g128_sym_v1 as a folder where `amn remember` also wrote its
// output: model.safetensors (qweight, qzeros, scales, g_idx), config.json and
// model-bf16.safetensors holding ...q_proj.weight (the fixture's expected.safetensors,
// F16 there, the same name).
std::unique_ptr<Opened> open_model_and_copy() {
  auto o = std::make_unique<Opened>();
  const std::string dir = fixture_path("quantized/gptq/w4_g128_sym_v1/");
  o->model_bytes = read_file(dir + "model.safetensors");
  o->config_bytes = read_file(dir + "config.json");
  o->more_bytes.push_back(read_file(dir + "expected.safetensors"));
  REQUIRE(!o->model_bytes.empty());
  REQUIRE(!o->more_bytes.back().empty());
  o->files.add("model.safetensors", std::make_unique<MemorySource>(o->model_bytes));
  o->files.add("model-bf16.safetensors", std::make_unique<MemorySource>(o->more_bytes.back()));
  o->files.add("config.json", std::make_unique<MemorySource>(o->config_bytes));
  o->model = open_model(o->files, {});
  return o;
}

}  // namespace

TEST_CASE("a logical name that is also a stored tensor is refused before writing", "[plan]") {
  auto o = open_model_and_copy();
  REQUIRE(o->model);
  const std::string name = "model.layers.0.self_attn.q_proj.weight";
  REQUIRE(o->model->logical.size() == 1);
  REQUIRE(o->model->find(name));

  for (auto to : {OutputFormat::safetensors, OutputFormat::gguf}) {
    ConvertOptions options;
    options.to = to;
    auto plan = plan_convert(*o->model, options);
    REQUIRE_FALSE(plan);
    CHECK(plan.error().code == ErrorCode::parse);
    const std::string& m = plan.error().message;
    INFO(m);
    CHECK_THAT(m, Catch::Contains("two output tensors would be named '" + name + "'"));
    // Both sources: the parts and their file, the stored tensor and its file.
    CHECK_THAT(m, Catch::Contains("gptq weight made of"));
    CHECK_THAT(m, Catch::Contains("q_proj.qweight"));
    CHECK_THAT(m, Catch::Contains("(in model.safetensors)"));
    CHECK_THAT(m, Catch::Contains("F16 tensor " + name + " (in model-bf16.safetensors)"));
  }
  // One tensor by that name is just as ambiguous.
  auto one = plan_tensor(*o->model, name, std::nullopt);
  REQUIRE_FALSE(one);
  CHECK_THAT(one.error().message, Catch::Contains("two output tensors"));
}

TEST_CASE("the quantized model alone still converts", "[plan]") {
  auto o = open_model_and_copy();
  auto alone = std::make_unique<Opened>();
  alone->model_bytes = o->model_bytes;
  alone->config_bytes = o->config_bytes;
  alone->files.add("model.safetensors", std::make_unique<MemorySource>(alone->model_bytes));
  alone->files.add("config.json", std::make_unique<MemorySource>(alone->config_bytes));
  alone->model = open_model(alone->files, {});
  REQUIRE(alone->model);
  CHECK(plan_convert(*alone->model, {}));
}
