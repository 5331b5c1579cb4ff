// bitsandbytes, MXFP4 and NVFP4 detection end to end: each fixture opened with its
// config.json, every logical tensor planned, executed and compared byte for byte with what
// the producer's own dequantizer wrote (fixtures/quantized/<family>/, provenance beside
// them); then the rejected files of fixtures/quantized/bad/ (README there), each with
// its exact message.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "convert/execute.h"
#include "convert/plan.h"
#include "kernels/cast.h"
#include "scheme_support.h"
#include "support.h"

using namespace amn;
using amn::test::fixture_path;
using amn::test::read_file;
using namespace amn::test::schemes;
using amn::test::VecSink;

namespace {

std::vector<uint8_t> cast(DType from, DType to, const std::vector<uint8_t>& in) {
  const size_t n = in.size() / dtype_info(from).block_bytes;
  std::vector<uint8_t> out(n * dtype_info(to).block_bytes);
  cast_floats(from, to, in.data(), out.data(), n);
  return out;
}

size_t differing(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return std::max(a.size(), b.size());
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

// Every expected tensor in the natural dtype (0 differing bytes), and in the other two
// targets where the canonical function's output determines them: an F32 result rounded
// once (PyTorch's cast of it), or compressed-tensors' BF16 widened / cast.
void check_variant(const std::string& family, const std::string& stem, const std::string& scheme) {
  INFO(family << "/" << stem);
  auto o = open_fixture("quantized/" + family, stem);
  REQUIRE(o->model);
  auto expected = expected_tensors(fixture_path("quantized/" + family + "/" + stem + ".expected.safetensors"));
  REQUIRE(!expected.empty());
  for (const auto& [name, e] : expected) {
    INFO(name);
    const LogicalTensor* l = logical(*o->model, name);
    REQUIRE(l);
    CHECK(l->scheme == scheme);
    CHECK(l->error.empty());
    CHECK(l->shape == e.shape);
    CHECK(l->natural == e.dtype);
    auto natural = dequantized(*o, name, std::nullopt);
    REQUIRE(natural);
    CHECK(differing(*natural, e.bytes) == 0);
    const bool f32_once = e.dtype == DType::F32;
    const bool bf16_widened = family == "nvfp4" && stem == "compressed_tensors";
    if (!f32_once && !bf16_widened) continue;
    for (DType to : {DType::BF16, DType::F16, DType::F32}) {
      if (to == e.dtype) continue;
      INFO(dtype_name(to));
      auto got = dequantized(*o, name, to);
      REQUIRE(got);
      CHECK(differing(*got, cast(e.dtype, to, e.bytes)) == 0);
    }
  }
}

// The names a lossless conversion writes, with their dtypes.
std::vector<std::string> converted(const Model& m, std::optional<DType> to = std::nullopt) {
  auto plan = plan_convert(m, cast_options(to));
  REQUIRE(plan);
  std::vector<std::string> names;
  for (const auto& t : plan->tensors) names.push_back(t.name + " " + std::string(dtype_name(t.dtype)));
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("bitsandbytes NF4, FP4 and int8 weights dequantize bit-exactly", "[schemes]") {
  check_variant("bnb", "nf4", "bnb-nf4");
  check_variant("bnb", "fp4", "bnb-fp4");
  check_variant("bnb", "int8", "bnb-int8");
  // mixed4: no config.json; an FP4 nested F16 layer and an NF4 F32 layer with blocksize 32.
  auto o = open_fixture("quantized/bnb", "mixed4");
  REQUIRE(o->model);
  auto expected = expected_tensors(fixture_path("quantized/bnb/mixed4.expected.safetensors"));
  REQUIRE(expected.size() == 2);
  for (const auto& [name, e] : expected) {
    INFO(name);
    const LogicalTensor* l = logical(*o->model, name);
    REQUIRE(l);
    CHECK(l->shape == e.shape);
    CHECK(l->natural == e.dtype);
    auto got = dequantized(*o, name, std::nullopt);
    REQUIRE(got);
    CHECK(differing(*got, e.bytes) == 0);
  }
  CHECK(logical(*o->model, "model.layers.0.self_attn.v_proj.weight")->scheme == "bnb-fp4");
  CHECK(logical(*o->model, "model.layers.0.self_attn.o_proj.weight")->scheme == "bnb-nf4");
}

TEST_CASE("bitsandbytes double quantization is decided by nested_absmax, as QuantState.from_dict decides", "[schemes]") {
  // nf4_nested_keys: "nested_blocksize": 0, "nested_offset": 0.0 in the quant_state, a
  // plain F32 absmax and no nested tensors: plain NF4 (fixtures/quantized/bnb/README.md).
  check_variant("bnb", "nf4_nested_keys", "bnb-nf4");
  auto o = open_fixture("quantized/bnb", "nf4_nested_keys");
  REQUIRE(o->model);
  const LogicalTensor* l = logical(*o->model, "model.layers.0.self_attn.o_proj.weight");
  REQUIRE(l);
  CHECK(l->variant == "nf4, blocksize 32");
  CHECK(o->model->warnings.empty());
}

TEST_CASE("a bitsandbytes quant_state without dtype is read as BF16, with a warning", "[schemes]") {
  // nf4_minimal_state: {"quant_type":"nf4","blocksize":32,"shape":[48,96],"nested":false}.
  check_variant("bnb", "nf4_minimal_state", "bnb-nf4");
  auto o = open_fixture("quantized/bnb", "nf4_minimal_state");
  REQUIRE(o->model);
  const LogicalTensor* l = logical(*o->model, "model.layers.0.self_attn.o_proj.weight");
  REQUIRE(l);
  CHECK(l->natural == DType::BF16);
  CHECK(l->variant == "nf4, blocksize 32");
  CHECK(o->model->warnings == std::vector<std::string>{
                                  "bitsandbytes quant_state without \"dtype\" (bitsandbytes always writes it): "
                                  "dequantized to bfloat16 by default: model.layers.0.self_attn.o_proj.weight"});
  // The values do not depend on the dtype: F32 is the producer's F32 output (mixed4's layer).
  auto f32 = dequantized(*o, l->name, DType::F32);
  REQUIRE(f32);
  CHECK(differing(*f32, expected_tensors(fixture_path("quantized/bnb/mixed4.expected.safetensors")).at(l->name).bytes) == 0);
}

TEST_CASE("bitsandbytes logical tensors: names, variants, parts, parameter count", "[schemes]") {
  auto nf4 = open_fixture("quantized/bnb", "nf4");
  REQUIRE(nf4->model);
  const Model& m = *nf4->model;
  REQUIRE(m.logical.size() == 2);
  const LogicalTensor* q = logical(m, "model.layers.0.self_attn.q_proj.weight");
  REQUIRE(q);
  CHECK(q->variant == "nf4, blocksize 64, double-quantized (nested blocksize 256)");
  CHECK(q->parts.size() == 6);  // quant_state, weight, absmax, quant_map, nested_absmax, nested_quant_map
  CHECK(q->stored_bytes == 169 + 65536 + 2048 + 64 + 32 + 1024);
  CHECK(q->bits_per_weight() > 4.0);
  CHECK(m.parameter_count() == 256 * 512 + 37 * 99 + 512);
  CHECK(converted(m) == std::vector<std::string>{"model.layers.0.mlp.down_proj.weight BF16",
                                                 "model.layers.0.self_attn.q_proj.weight BF16",
                                                 "model.norm.weight BF16"});
  auto fp4 = open_fixture("quantized/bnb", "fp4");
  REQUIRE(fp4->model);
  CHECK(logical(*fp4->model, "model.layers.0.mlp.down_proj.weight")->variant == "fp4, blocksize 64");
  CHECK(converted(*fp4->model, DType::F32) == std::vector<std::string>{"model.layers.0.mlp.down_proj.weight F32",
                                                                       "model.layers.0.self_attn.q_proj.weight F32",
                                                                       "model.norm.weight BF16"});
  auto int8 = open_fixture("quantized/bnb", "int8");
  REQUIRE(int8->model);
  const LogicalTensor* g = logical(*int8->model, "model.layers.0.mlp.gate_proj.weight");
  REQUIRE(g);
  CHECK(g->variant == "LLM.int8(), row-wise F32 SCB");
  CHECK(g->parts.size() == 3);  // weight, SCB, weight_format
  CHECK(int8->model->parameter_count() == 256 * 512 + 37 * 99);
  CHECK(converted(*int8->model) == std::vector<std::string>{"model.layers.0.mlp.gate_proj.weight F32",
                                                            "model.layers.0.mlp.up_proj.weight F32"});
}

TEST_CASE("bitsandbytes quant_states are read in one need_bytes round", "[schemes]") {
  auto bytes = read_file(fixture_path("quantized/bnb/nf4.safetensors"));
  auto sparse = amn::test::open_sparse({{"model.safetensors", bytes}});
  REQUIRE(sparse.model);
  CHECK(sparse.rounds == 3);  // the header, then both quant_states together
  CHECK(sparse.model->logical.size() == 2);
  for (const auto& l : sparse.model->logical) CHECK(l.error.empty());
}

TEST_CASE("MXFP4 (gpt-oss) experts dequantize bit-exactly in every target dtype", "[schemes]") {
  auto o = open_fixture("quantized/mxfp4", "gpt_oss");
  REQUIRE(o->model);
  auto expected = expected_tensors(fixture_path("quantized/mxfp4/gpt_oss.expected.safetensors"));
  REQUIRE(expected.size() == 6);
  for (const auto& [key, e] : expected) {
    INFO(key);
    const std::string name = key.substr(0, key.find('@'));
    const DType to = e.dtype;
    const LogicalTensor* l = logical(*o->model, name);
    REQUIRE(l);
    CHECK(l->scheme == "mxfp4");
    CHECK(l->natural == DType::BF16);
    // transformers returns [experts, in, out]; the logical tensor is [experts, out, in].
    REQUIRE(e.shape.size() == 3);
    CHECK(l->shape == std::vector<uint64_t>{e.shape[0], e.shape[2], e.shape[1]});
    auto got = dequantized(*o, name, to);
    REQUIRE(got);
    const uint64_t experts = e.shape[0], in = e.shape[1], out = e.shape[2], el = dtype_info(to).block_bytes;
    std::vector<uint8_t> transposed(e.bytes.size());
    for (uint64_t x = 0; x < experts; ++x)
      for (uint64_t i = 0; i < in; ++i)
        for (uint64_t r = 0; r < out; ++r)
          std::copy_n(e.bytes.begin() + static_cast<std::ptrdiff_t>(((x * in + i) * out + r) * el), el,
                      transposed.begin() + static_cast<std::ptrdiff_t>(((x * out + r) * in + i) * el));
    CHECK(differing(*got, transposed) == 0);
  }
  CHECK(logical(*o->model, "model.layers.0.mlp.experts.down_proj")->variant == "e2m1, 32 per E8M0 scale");
  CHECK(o->model->parameter_count() == 2 * 37 * 96 + 256 * 512 + 2 * 37 + 256 + 4 * 512);
  // Biases and the router pass through; blocks and scales become the two logical tensors.
  CHECK(converted(*o->model) == std::vector<std::string>{"model.layers.0.mlp.experts.down_proj BF16",
                                                         "model.layers.0.mlp.experts.down_proj_bias BF16",
                                                         "model.layers.0.mlp.experts.gate_up_proj BF16",
                                                         "model.layers.0.mlp.experts.gate_up_proj_bias BF16",
                                                         "model.layers.0.mlp.router.weight BF16"});
}

TEST_CASE("NVFP4 in the ModelOpt and compressed-tensors layouts dequantizes bit-exactly", "[schemes]") {
  check_variant("nvfp4", "modelopt", "nvfp4");
  check_variant("nvfp4", "compressed_tensors", "nvfp4");
  auto mo = open_fixture("quantized/nvfp4", "modelopt");
  REQUIRE(mo->model);
  CHECK(logical(*mo->model, "model.layers.0.mlp.down_proj.weight")->variant == "ModelOpt, e2m1, 16 per E4M3 scale");
  CHECK(mo->model->parameter_count() == 256 * 512 + 37 * 144);
  // input_scale consumed; weight_scale and weight_scale_2 are parts.
  CHECK(converted(*mo->model, DType::BF16) == std::vector<std::string>{"model.layers.0.mlp.down_proj.weight BF16",
                                                                       "model.layers.0.self_attn.q_proj.weight BF16"});
  auto ct = open_fixture("quantized/nvfp4", "compressed_tensors");
  REQUIRE(ct->model);
  CHECK(logical(*ct->model, "model.layers.0.self_attn.q_proj.weight")->variant ==
        "compressed-tensors, e2m1, 16 per E4M3 scale");
  CHECK(ct->model->parameter_count() == 256 * 512 + 37 * 144);
  CHECK(converted(*ct->model) == std::vector<std::string>{"model.layers.0.mlp.down_proj.weight BF16",
                                                          "model.layers.0.self_attn.q_proj.weight BF16"});
}

// Rows [b, e) through the op directly, as a piece that does not start at row 0 runs
// (the fixtures are small enough for single pieces, so plans never do this).
std::vector<uint8_t> op_rows(Opened& o, const LogicalTensor& l, uint64_t b, uint64_t e, DType to) {
  std::vector<std::vector<uint8_t>> copies;
  for (const auto& r : l.op->inputs(b, e)) {
    auto bytes = o.files.read(r.file, r.offset, r.length);
    REQUIRE(bytes);
    copies.emplace_back(bytes->begin(), bytes->end());
  }
  std::vector<std::span<const uint8_t>> views(copies.begin(), copies.end());
  std::vector<uint8_t> out((e - b) * l.shape.back() * dtype_info(to).block_bytes);
  REQUIRE(l.op->run(views, b, e, to, out.data()));
  return out;
}

TEST_CASE("pieces starting at any row read the right companions", "[schemes]") {
  const std::pair<const char*, const char*> fixtures[] = {
      {"quantized/bnb", "nf4"},       {"quantized/bnb", "fp4"},    {"quantized/bnb", "mixed4"},
      {"quantized/bnb", "int8"},      {"quantized/mxfp4", "gpt_oss"}, {"quantized/nvfp4", "modelopt"},
      {"quantized/nvfp4", "compressed_tensors"},
  };
  for (const auto& [dir, stem] : fixtures) {
    auto o = open_fixture(dir, stem);
    REQUIRE(o->model);
    for (const auto& l : o->model->logical) {
      INFO(stem << " " << l.name);
      REQUIRE(l.op);
      const uint64_t cols = l.shape.back(), rows = l.elements / cols, el = dtype_info(DType::F32).block_bytes;
      auto whole = dequantized(*o, l.name, DType::F32);
      REQUIRE(whole);
      // Every row alone, then uneven runs crossing absmax and nested-absmax blocks.
      std::vector<std::pair<uint64_t, uint64_t>> runs;
      for (uint64_t r = 0; r < rows; ++r) runs.emplace_back(r, r + 1);
      for (uint64_t r = 0; r < rows; r += 7) runs.emplace_back(r, std::min(rows, r + 11));
      for (const auto& [b, e] : runs) {
        auto got = op_rows(*o, l, b, e, DType::F32);
        const std::vector<uint8_t> want(whole->begin() + static_cast<std::ptrdiff_t>(b * cols * el),
                                        whole->begin() + static_cast<std::ptrdiff_t>(e * cols * el));
        if (got != want) FAIL("rows " << b << ".." << e << " differ");
      }
    }
  }
}

// fixtures/quantized/bad/README.md lists the same cases.
TEST_CASE("rejected quantized files say what is wrong", "[schemes]") {
  struct Case {
    const char* stem;
    const char* tensor;
    const char* scheme;
    const char* detect_error;   // LogicalTensor::error, or "" when detection accepts it
    const char* execute_error;  // when the defect is in the data
  };
  const Case cases[] = {
      {"fp8_scale_grid", "model.layers.0.self_attn.o_proj.weight", "fp8",
       "its scale grid [1, 37] gives no single block size for a [37, 45] weight and no config names "
       "weight_block_size (columns: no block size gives 37 blocks over 45)", ""},
      {"fp8_scale_dtype", "model.layers.0.self_attn.o_proj.weight", "fp8",
       "its scale is I16 (F32, BF16 or F16 expected)", ""},
      {"bnb_no_absmax", "model.layers.0.mlp.down_proj.weight", "bnb-nf4",
       "no model.layers.0.mlp.down_proj.weight.absmax beside the packed weight", ""},
      {"bnb_no_nested_absmax", "model.layers.0.mlp.down_proj.weight", "bnb-nf4",
       "its absmax is U8 codes, yet there is no model.layers.0.mlp.down_proj.weight.nested_absmax (double "
       "quantization needs it; F32 absmax expected without)", ""},
      {"bnb_absmax_length", "model.layers.0.mlp.down_proj.weight", "bnb-fp4",
       "bitsandbytes: absmax has 57 values, the shape needs 58 (one per 64)", ""},
      {"bnb_shape_mismatch", "model.layers.0.mlp.down_proj.weight", "bnb-fp4",
       "bitsandbytes: packed weight has 1832 bytes, the shape needs 1850", ""},
      {"bnb_blocksize", "model.layers.0.mlp.down_proj.weight", "bnb-fp4",
       "bitsandbytes: blocksize 48 is not a power of two in 32..4096", ""},
      {"bnb_quant_state_oversized", "model.layers.0.mlp.down_proj.weight", "bnb-fp4",
       "its quant_state is 5000 bytes (at most 4096 expected)", ""},
      {"bnb_quant_state_malformed", "model.layers.0.mlp.down_proj.weight", "bnb-fp4",
       "quant_state: not a JSON object", ""},
      {"bnb_quant_state_type", "model.layers.0.mlp.down_proj.weight", "bnb-fp4",
       "quant_state: quant_type 'nf4' disagrees with the name's 'fp4'", ""},
      {"bnb_int8_scb_length", "model.layers.0.mlp.up_proj.weight", "bnb-int8",
       "bitsandbytes: SCB has 36 values, expected one per row (37)", ""},
      {"bnb_int8_weight_format", "model.layers.0.mlp.up_proj.weight", "bnb-int8", "",
       "bitsandbytes: weight_format 2 (a tiled GPU layout) is not supported; 0 (row-major) is"},
      {"mxfp4_no_scales", "model.layers.0.mlp.experts.down_proj", "mxfp4",
       "no model.layers.0.mlp.experts.down_proj_scales beside the blocks", ""},
      {"mxfp4_scales_shape", "model.layers.0.mlp.experts.down_proj", "mxfp4",
       "its scales shape [2, 3, 37] is not the blocks' [2, 37, 3] (one per 32 values)", ""},
      {"mxfp4_block_bytes", "model.layers.0.mlp.experts.down_proj", "mxfp4",
       "blocks shape [2, 37, 6, 8] is not [..., rows, groups, 16] (16 bytes per 32 values)", ""},
      {"nvfp4_no_scale", "model.layers.0.mlp.down_proj.weight", "nvfp4",
       "no model.layers.0.mlp.down_proj.weight_scale beside the packed weight", ""},
      {"nvfp4_scale_shape", "model.layers.0.mlp.down_proj.weight", "nvfp4",
       "its weight_scale shape [9, 37] is not [37, 9] (one per 16 inputs)", ""},
      {"nvfp4_odd_columns", "model.layers.0.mlp.down_proj.weight", "nvfp4",
       "in_features 72 is not a multiple of 16 (the scale block)", ""},
      {"nvfp4_global_0d", "model.layers.0.mlp.down_proj.weight", "nvfp4",
       "its weight_global_scale is 0-d (compressed-tensors writes [1]; a 0-d one divides in BF16, not handled)", ""},
      {"nvfp4_global_inf", "model.layers.0.mlp.down_proj.weight", "nvfp4", "",
       "nvfp4: weight_scale_2 is inf (a finite, non-zero scale expected)"},
  };
  for (const auto& c : cases) {
    INFO(c.stem);
    auto o = open_fixture("quantized/bad", c.stem);
    check_rejected(*o, c.tensor, c.scheme, c.detect_error, c.execute_error);
  }
}

TEST_CASE("lookalikes without a quantization config are left alone", "[schemes]") {
  // A U8 `*_blocks` without scales and an I8 weight without SCB are plain tensors.
  std::vector<uint8_t> data(64 + 16, 1);
  auto file = amn::test::make_safetensors(
      R"({"a.idx_blocks":{"dtype":"U8","shape":[2,2,16],"data_offsets":[0,64]},)"
      R"("b.weight":{"dtype":"I8","shape":[4,4],"data_offsets":[64,80]}})",
      data);
  auto m = amn::test::open_memory(file);
  REQUIRE(m);
  CHECK(m->logical.empty());
  CHECK(m->parameter_count() == 64 + 16);
}
