// Without a target dtype nothing loses precision (issue 18, item 6): stored tensors keep
// their dtype, quantized weights take their natural one; cast_all without a target casts
// the other floats to that natural dtype, and is refused when the quantized weights'
// natural dtypes differ.
#include <catch2/catch.hpp>

#include <map>

#include "convert/plan.h"
#include "scheme_support.h"
#include "support.h"

using namespace amn;
using amn::test::fixture_path;
using amn::test::read_file;

namespace {

std::map<std::string, DType> dtypes_of(const Plan& plan) {
  std::map<std::string, DType> out;
  for (const auto& t : plan.tensors) out[t.name] = t.dtype;
  return out;
}

ConvertOptions options(std::optional<DType> dtype, bool cast_all) {
  ConvertOptions o;
  o.dtype = dtype;
  o.cast_all = cast_all;
  return o;
}

}  // namespace

TEST_CASE("no target: quantized weights natural, the rest as stored; cast_all: the rest natural too", "[plan]") {
  // FP8 block-wise with F32 scale_inv (natural F32) and a BF16 layer norm.
  auto o = test::schemes::open_fixture("quantized/fp8", "block_e4m3");
  REQUIRE(o->model);
  const std::string norm = "model.layers.0.input_layernorm.weight", q = "model.layers.0.self_attn.q_proj.weight";
  auto kept = plan_convert(*o->model, options(std::nullopt, false));
  REQUIRE(kept);
  CHECK(dtypes_of(*kept)[q] == DType::F32);
  CHECK(dtypes_of(*kept)[norm] == DType::BF16);
  auto all = plan_convert(*o->model, options(std::nullopt, true));
  REQUIRE(all);
  CHECK(dtypes_of(*all)[q] == DType::F32);
  CHECK(dtypes_of(*all)[norm] == DType::F32);
  // A target still wins: the norm keeps BF16 without cast_all, takes F16 with it.
  CHECK(dtypes_of(*plan_convert(*o->model, options(DType::F16, false)))[norm] == DType::BF16);
  CHECK(dtypes_of(*plan_convert(*o->model, options(DType::F16, true)))[norm] == DType::F16);
}

TEST_CASE("cast_all without a target: refused when the natural dtypes differ, nothing when nothing is quantized",
          "[plan]") {
  // bitsandbytes NF4 (F32 quant_state dtype) and FP4 (F16) in one file.
  auto bytes = read_file(fixture_path("quantized/bnb/mixed4.safetensors"));
  auto mixed = test::open_memory(bytes);
  REQUIRE(mixed);
  REQUIRE(plan_convert(*mixed, options(std::nullopt, false)));
  auto refused = plan_convert(*mixed, options(std::nullopt, true));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::invalid_argument);
  INFO(refused.error().message);
  CHECK(refused.error().message ==
        "the quantized weights' natural dtypes differ: F32 (model.layers.0.self_attn.o_proj.weight), "
        "F16 (model.layers.0.self_attn.v_proj.weight); casting the other tensors too needs a target dtype");
  CHECK(plan_convert(*mixed, options(DType::BF16, true)));

  auto plain = test::open_memory(test::make_safetensors(
      R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[4,8]}})",
      std::vector<uint8_t>(8)));
  REQUIRE(plain);
  auto same = plan_convert(*plain, options(std::nullopt, true));
  REQUIRE(same);
  CHECK(dtypes_of(*same) == std::map<std::string, DType>{{"a", DType::F16}, {"b", DType::BF16}});
}

TEST_CASE("GGUF blocks: F32 without a target (ggml's to_float); cast_all takes the plain floats there too", "[plan]") {
  auto bytes = read_file(fixture_path("gguf/valid/tensor_types.gguf"));
  auto m = test::open_memory(bytes, "tensor_types.gguf");
  REQUIRE(m);
  auto kept = plan_convert(*m, options(std::nullopt, false));
  auto all = plan_convert(*m, options(std::nullopt, true));
  REQUIRE(kept);
  REQUIRE(all);
  int blocks = 0, floats = 0;
  for (const auto& t : m->tensors) {
    INFO(t.name);
    if (t.ggml_type != kNoGgmlType) {
      ++blocks;
      CHECK(dtypes_of(*kept)[t.name] == DType::F32);
      CHECK(dtypes_of(*all)[t.name] == DType::F32);
    } else if (is_castable_float(t.dtype)) {
      ++floats;
      CHECK(dtypes_of(*kept)[t.name] == t.dtype);
      CHECK(dtypes_of(*all)[t.name] == DType::F32);
    } else {
      CHECK(dtypes_of(*all)[t.name] == t.dtype);
    }
  }
  CHECK(blocks >= 2);
  CHECK(floats >= 3);
  // GGUF output copies blocks through: nothing is dequantized, so cast_all has nothing to follow.
  ConvertOptions gguf = options(std::nullopt, true);
  gguf.to = OutputFormat::gguf;
  auto copied = plan_convert(*m, gguf);
  REQUIRE(copied);
  for (const auto& t : m->tensors) {
    if (t.ggml_type == kNoGgmlType && is_castable_float(t.dtype)) CHECK(dtypes_of(*copied)[t.name] == t.dtype);
  }
}
