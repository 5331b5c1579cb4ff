// GPTQ, AWQ, compressed-tensors integer and MLX detection end to end: every fixture of
// fixtures/quantized/{gptq,awq,compressed_tensors,mlx}/<variant>/ opened with its
// config.json (and again without it), every logical tensor planned, executed and compared
// byte for byte with what the producer's own dequantizer wrote; then the rejected/ files,
// each with its exact message.
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
using amn::test::VecSink;
using namespace amn::test::schemes;

namespace {

// A fixture's model.safetensors opened as a folder is, with config files beside it:
// (name it has in the folder, fixture path under quantized/). The sets are declared in
// the order every surface uses (config.json, quantize_config.json, quant_config.json).
using ConfigFiles = std::vector<std::pair<std::string, std::string>>;
std::unique_ptr<Opened> open_with(const std::string& dir, const ConfigFiles& configs) {
  auto o = std::make_unique<Opened>();
  o->model_bytes = read_file(fixture_path("quantized/" + dir + "/model.safetensors"));
  REQUIRE(!o->model_bytes.empty());
  o->files.add("model.safetensors", std::make_unique<MemorySource>(o->model_bytes));
  for (const auto& [name, path] : configs) {
    o->more_bytes.push_back(read_file(fixture_path("quantized/" + path)));
    REQUIRE(!o->more_bytes.back().empty());
    o->files.add(name, std::make_unique<MemorySource>(o->more_bytes.back()));
  }
  o->model = open_model(o->files, {});
  return o;
}

// A fixture folder (model.safetensors + config.json) opened as a folder is; without
// config.json when `with_config` is false.
std::unique_ptr<Opened> open_folder(const std::string& dir, bool with_config = true) {
  return open_with(dir, with_config ? ConfigFiles{{"config.json", dir + "/config.json"}} : ConfigFiles{});
}

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

// Every logical tensor of an opened fixture against the fixture's expected.safetensors:
// in the natural dtype (the producer's), then in the other two targets: the file's
// "<name>@bf16" / "@f16" / "@f32" tensor where it has one (GPTQ, AWQ, compressed-tensors:
// the exact product rounded once, packed.h "Exactness"), else PyTorch's cast of the
// natural output (MLX affine: MLX's own two roundings in the scales' dtype).
void check_opened(Opened& o, const std::string& dir, const std::string& scheme) {
  REQUIRE(o.model);
  auto expected = expected_tensors(fixture_path("quantized/" + dir + "/expected.safetensors"));
  REQUIRE(!expected.empty());
  std::map<std::string, Expected> targeted;
  for (auto it = expected.begin(); it != expected.end();) {
    if (it->first.find('@') == std::string::npos) {
      ++it;
      continue;
    }
    targeted.insert(*it);
    it = expected.erase(it);
  }
  CHECK(o.model->logical.size() == expected.size());
  for (const auto& [name, e] : expected) {
    INFO(name);
    const LogicalTensor* l = logical(*o.model, name);
    REQUIRE(l);
    CHECK(l->scheme == scheme);
    CHECK(l->error == "");
    CHECK(l->shape == e.shape);
    CHECK(l->natural == e.dtype);
    auto natural = dequantized(o, name, std::nullopt);
    REQUIRE(natural);
    CHECK(differing(*natural, e.bytes) == 0);
    for (DType to : {DType::BF16, DType::F16, DType::F32}) {
      if (to == e.dtype) continue;
      INFO(dtype_name(to));
      auto got = dequantized(o, name, to);
      REQUIRE(got);
      const auto t = targeted.find(name + (to == DType::BF16 ? "@bf16" : to == DType::F16 ? "@f16" : "@f32"));
      CHECK(differing(*got, t != targeted.end() ? t->second.bytes : cast(e.dtype, to, e.bytes)) == 0);
    }
  }
}

void check_variant(const std::string& dir, const std::string& scheme, bool with_config = true) {
  INFO(dir << (with_config ? "" : " without config.json"));
  check_opened(*open_folder(dir, with_config), dir, scheme);
}

// The names and dtypes a conversion writes.
std::vector<std::string> converted(const Model& m, std::optional<DType> to = std::nullopt) {
  auto plan = plan_convert(m, cast_options(to));
  REQUIRE(plan);
  std::vector<std::string> names;
  for (const auto& t : plan->tensors) names.push_back(t.name + " " + std::string(dtype_name(t.dtype)));
  std::sort(names.begin(), names.end());
  return names;
}

// Every record of the model is a part of a logical tensor or consumed: none is copied.
void check_all_consumed(const Model& m) {
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    INFO(m.tensors[i].name);
    CHECK(m.is_consumed(i));
  }
}

const char* const kGptq[] = {"w4_g128_sym_v1", "w4_g128_asym_actorder_v1", "w4_g128_asym_v2", "w8_g128_sym_v1",
                             "w3_g128_asym_v1", "w2_gm1_sym_v2",          "w4_g128_odd_v1"};
const char* const kAwq[] = {"w4_g128", "w4_g64_odd"};
const char* const kCt[] = {"w4a16_g128_sym", "w4a16_g128_asym_actorder", "w8a16_channel_sym",
                           "mixed_odd",      "int8_channel_sym_naive",   "int8_channel_asym"};
const char* const kMlx[] = {"f16", "mixed_bf16", "modes_bf16"};

// Rows [b, e) through the op directly, as a piece that does not start at row 0 runs.
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

}  // namespace

TEST_CASE("GPTQ, AWQ, compressed-tensors and MLX fixtures dequantize bit-exactly", "[schemes]") {
  for (const char* v : kGptq) check_variant(std::string("gptq/") + v, "gptq");
  for (const char* v : kAwq) check_variant(std::string("awq/") + v, "awq");
  for (const char* v : kCt) check_variant(std::string("compressed_tensors/") + v, "compressed-tensors");
  for (const char* v : kMlx) check_variant(std::string("mlx/") + v, "mlx");
}

TEST_CASE("integer schemes: variants, parts, parameter count, conversion", "[schemes]") {
  struct Case {
    const char* dir;
    const char* tensor;
    const char* variant;
    size_t parts;
  };
  const Case cases[] = {
      {"gptq/w4_g128_sym_v1", "model.layers.0.self_attn.q_proj.weight", "4-bit, group 128, sym, gptq (v1) zeros", 4},
      {"gptq/w4_g128_asym_actorder_v1", "model.layers.0.self_attn.q_proj.weight",
       "4-bit, group 128, act-order, asym, gptq (v1) zeros", 4},
      {"gptq/w2_gm1_sym_v2", "model.layers.0.self_attn.q_proj.weight", "2-bit, one group, sym, gptq_v2 zeros", 4},
      {"gptq/w3_g128_asym_v1", "model.layers.0.self_attn.q_proj.weight",
       "3-bit, group 128, act-order, asym, gptq (v1) zeros", 4},
      {"awq/w4_g128", "model.layers.0.self_attn.q_proj.weight", "GEMM, 4-bit, group 128", 3},
      {"awq/w4_g64_odd", "model.layers.0.mlp.up_proj.weight", "GEMM, 4-bit, one group", 3},
      {"compressed_tensors/w4a16_g128_sym", "model.layers.0.self_attn.q_proj.weight",
       "pack-quantized, 4-bit, group 128, sym", 3},
      {"compressed_tensors/w4a16_g128_asym_actorder", "model.layers.0.self_attn.q_proj.weight",
       "pack-quantized, 4-bit, group 128, asym, actorder (g_idx)", 5},
      {"compressed_tensors/w8a16_channel_sym", "model.layers.0.self_attn.q_proj.weight",
       "pack-quantized, 8-bit, channel, sym", 3},
      {"compressed_tensors/mixed_odd", "model.layers.0.mlp.down_proj.weight", "pack-quantized, 4-bit, group 32, asym", 4},
      {"compressed_tensors/mixed_odd", "model.layers.0.mlp.up_proj.weight", "pack-quantized, 8-bit, channel, asym", 4},
      {"compressed_tensors/int8_channel_sym_naive", "model.layers.0.self_attn.q_proj.weight",
       "naive-quantized, 8-bit, channel, sym", 2},
      {"compressed_tensors/int8_channel_asym", "model.layers.0.self_attn.q_proj.weight",
       "int-quantized, 8-bit, channel, asym", 3},
      {"mlx/f16", "model.layers.0.self_attn.k_proj.weight", "affine, 6-bit, group 128", 3},
      {"mlx/mixed_bf16", "model.layers.0.self_attn.o_proj.weight", "affine, 5-bit, group 128", 3},
      {"mlx/modes_bf16", "model.layers.0.self_attn.q_proj.weight", "mxfp4: e2m1, 32 per E8M0 scale", 2},
      {"mlx/modes_bf16", "model.layers.0.self_attn.k_proj.weight", "nvfp4: e2m1, 16 per E4M3 scale, no global scale",
       2},
      {"mlx/modes_bf16", "model.layers.0.self_attn.v_proj.weight", "mxfp8: e4m3, 32 per E8M0 scale", 2},
      // A per-layer entry without "mode" is affine (to_quantized's default), whatever the model's mode.
      {"mlx/modes_bf16", "model.layers.0.self_attn.o_proj.weight", "affine, 4-bit, group 64", 3},
      {"mlx/modes_bf16", "model.layers.0.mlp.switch_mlp.down_proj.weight", "affine, 4-bit, group 32", 3},
  };
  for (const auto& c : cases) {
    INFO(c.dir << " " << c.tensor);
    auto o = open_folder(c.dir);
    REQUIRE(o->model);
    const LogicalTensor* l = logical(*o->model, c.tensor);
    REQUIRE(l);
    CHECK(l->variant == c.variant);
    CHECK(l->parts.size() == c.parts);
  }

  // Packed values count as what they encode; qzeros, scales and g_idx not at all.
  auto gptq = open_folder("gptq/w4_g128_sym_v1");
  REQUIRE(gptq->model);
  CHECK(gptq->model->parameter_count() == 256 * 512);
  const LogicalTensor* g = logical(*gptq->model, "model.layers.0.self_attn.q_proj.weight");
  CHECK(g->stored_bytes == 64 * 256 * 4 + 4 * 32 * 4 + 4 * 256 * 2 + 512 * 4);
  CHECK(g->bits_per_weight() > 4.0);
  check_all_consumed(*gptq->model);
  CHECK(converted(*gptq->model) == std::vector<std::string>{"model.layers.0.self_attn.q_proj.weight F16"});
  CHECK(converted(*gptq->model, DType::BF16) == std::vector<std::string>{"model.layers.0.self_attn.q_proj.weight BF16"});

  auto awq = open_folder("awq/w4_g64_odd");
  REQUIRE(awq->model);
  CHECK(awq->model->parameter_count() == 96 * 192 + 32 * 64);
  check_all_consumed(*awq->model);
  CHECK(converted(*awq->model) == std::vector<std::string>{"model.layers.0.mlp.down_proj.weight F16",
                                                           "model.layers.0.mlp.up_proj.weight F16"});

  auto ct = open_folder("compressed_tensors/mixed_odd");
  REQUIRE(ct->model);
  CHECK(ct->model->parameter_count() == 50 * 224 + 50 * 198);
  check_all_consumed(*ct->model);
  CHECK(converted(*ct->model, DType::F32) == std::vector<std::string>{"model.layers.0.mlp.down_proj.weight F32",
                                                                      "model.layers.0.mlp.up_proj.weight F32"});
  auto naive = open_folder("compressed_tensors/int8_channel_asym");
  REQUIRE(naive->model);
  CHECK(naive->model->parameter_count() == 48 * 200);
  check_all_consumed(*naive->model);

  // MLX: norm.weight passes through in its dtype; the three parts of each layer are consumed.
  auto mlx = open_folder("mlx/f16");
  REQUIRE(mlx->model);
  CHECK(mlx->model->parameter_count() == 32 * 128 + 16 * 256 + 16 * 96 + 128);
  CHECK(converted(*mlx->model, DType::F32) == std::vector<std::string>{"model.layers.0.self_attn.k_proj.weight F32",
                                                                       "model.layers.0.self_attn.q_proj.weight F32",
                                                                       "model.layers.0.self_attn.v_proj.weight F32",
                                                                       "model.norm.weight F16"});
}

TEST_CASE("integer schemes without config.json: from the shapes where they tell", "[schemes]") {
  // GPTQ: bits from qzeros (8-bit is not taken for 4), in from g_idx; absent config means
  // v1 zeros, so the v1 fixtures give the same bytes.
  for (const char* v : {"w4_g128_sym_v1", "w4_g128_asym_actorder_v1", "w8_g128_sym_v1", "w3_g128_asym_v1",
                        "w4_g128_odd_v1"}) {
    check_variant(std::string("gptq/") + v, "gptq", false);
  }
  auto w8 = open_folder("gptq/w8_g128_sym_v1", false);
  REQUIRE(w8->model);
  CHECK(logical(*w8->model, "model.layers.0.self_attn.q_proj.weight")->variant ==
        "8-bit, group 128, gptq (v1) zeros (no config: v1 assumed)");
  // gptq_v2 cannot be told from the tensors: read as v1 it decodes, to other values.
  auto v2 = open_folder("gptq/w4_g128_asym_v2", false);
  REQUIRE(v2->model);
  const LogicalTensor* l = logical(*v2->model, "model.layers.0.self_attn.q_proj.weight");
  REQUIRE(l);
  CHECK(l->error == "");
  auto as_v1 = dequantized(*v2, l->name, std::nullopt);
  REQUIRE(as_v1);
  auto expected = expected_tensors(fixture_path("quantized/gptq/w4_g128_asym_v2/expected.safetensors"));
  CHECK(differing(*as_v1, expected.begin()->second.bytes) > 0);

  for (const char* v : kAwq) check_variant(std::string("awq/") + v, "awq", false);
  // compressed-tensors: W4A16 / W8A16 by the packed row length, naive int8 by its I8 weight.
  for (const char* v : kCt) check_variant(std::string("compressed_tensors/") + v, "compressed-tensors", false);

  // MLX: bits and group size trade off (4-bit g64 = 2-bit g128 = 8-bit g32 in shapes), so
  // a layer is decoded only when one pair fits, else reported.
  auto mlx = open_folder("mlx/mixed_bf16", false);
  REQUIRE(mlx->model);
  auto want = expected_tensors(fixture_path("quantized/mlx/mixed_bf16/expected.safetensors"));
  CHECK(logical(*mlx->model, "model.layers.0.self_attn.q_proj.weight")->error ==
        "bits and group size cannot be told from the shapes alone (4-bit group 64, 2-bit group 128, 8-bit group 32 fit); "
        "config.json's quantization gives them");
  const LogicalTensor* v3 = logical(*mlx->model, "model.layers.0.self_attn.v_proj.weight");  // 3-bit g64 = 6-bit g32
  REQUIRE(v3);
  CHECK(v3->error == "bits and group size cannot be told from the shapes alone (3-bit group 64, 6-bit group 32 fit); "
                     "config.json's quantization gives them");
  size_t decoded = 0;
  for (const auto& t : mlx->model->logical) {
    INFO(t.name);
    CHECK(t.scheme == "mlx");
    if (!t.error.empty()) continue;
    auto got = dequantized(*mlx, t.name, std::nullopt);
    REQUIRE(got);
    CHECK(differing(*got, want.at(t.name).bytes) == 0);
    ++decoded;
  }
  CHECK(decoded == 5);  // 2-bit g32, 5-bit g128, 8-bit g128, 3-bit g32, 5-bit g32: one pair fits each
  CHECK(logical(*mlx->model, "model.layers.1.self_attn.q_proj.weight")->variant == "affine, 3-bit, group 32 (from shapes: no config)");
  CHECK(logical(*mlx->model, "model.layers.1.self_attn.k_proj.weight")->variant == "affine, 5-bit, group 32 (from shapes: no config)");

  // MLX's floating-point modes: U8 scales without biases, one mode per scales-per-word
  // ratio, so every such layer decodes; the two affine layers are ambiguous, as above.
  auto modes = open_folder("mlx/modes_bf16", false);
  REQUIRE(modes->model);
  auto want_modes = expected_tensors(fixture_path("quantized/mlx/modes_bf16/expected.safetensors"));
  decoded = 0;
  for (const auto& t : modes->model->logical) {
    INFO(t.name);
    CHECK(t.scheme == "mlx");
    if (!t.error.empty()) {
      CHECK(t.variant.empty());
      continue;
    }
    CHECK(t.variant.find(" (from shapes: no config)") != std::string::npos);
    auto got = dequantized(*modes, t.name, std::nullopt);
    REQUIRE(got);
    CHECK(differing(*got, want_modes.at(t.name).bytes) == 0);
    ++decoded;
  }
  CHECK(decoded == 8);
  CHECK(logical(*modes->model, "model.layers.1.self_attn.k_proj.weight")->variant ==
        "nvfp4: e2m1, 16 per E4M3 scale, no global scale (from shapes: no config)");
}

TEST_CASE("the quantizer's own config file decides, as GPTQModel reads it", "[schemes]") {
  const std::string q = "model.layers.0.self_attn.q_proj.weight";
  const std::string v2 = "gptq/w4_g128_asym_v2";
  // gptq_v2 only in quantize_config.json (config.json has no quantization_config): the
  // canonical values. Without it (the control) the same tensors decode as v1, to others.
  for (const char* qc : {"gptq/w4_g128_asym_v2/quantize_config.json", "gptq/config_files/quantize_config.gptqmodel_v2.json"}) {
    INFO(qc);
    auto o = open_with(v2, {{"config.json", "gptq/config_files/config.no_quantization_config.json"},
                            {"quantize_config.json", qc}});
    check_opened(*o, v2, "gptq");
    CHECK(logical(*o->model, q)->variant == "4-bit, group 128, asym, gptq_v2 zeros (quantize_config.json)");
    CHECK(o->model->quant_config_file == "quantize_config.json");
    CHECK(o->model->warnings.empty());
  }
  auto control = open_with(v2, {{"config.json", "gptq/config_files/config.no_quantization_config.json"}});
  REQUIRE(control->model);
  CHECK(logical(*control->model, q)->variant == "4-bit, group 128, gptq (v1) zeros (no config: v1 assumed)");
  auto as_v1 = dequantized(*control, q, std::nullopt);
  REQUIRE(as_v1);
  CHECK(differing(*as_v1, expected_tensors(fixture_path("quantized/" + v2 + "/expected.safetensors")).at(q).bytes) > 0);

  // The two disagree: quantize_config.json wins (GPTQModel's order), and a warning says so.
  auto both = open_with(v2, {{"config.json", "gptq/config_files/config.checkpoint_format_gptq.json"},
                             {"quantize_config.json", v2 + "/quantize_config.json"}});
  check_opened(*both, v2, "gptq");
  CHECK(both->model->warnings == std::vector<std::string>{
      "quantize_config.json and config.json's quantization_config disagree on checkpoint_format "
      "(\"gptq_v2\" vs \"gptq\"); quantize_config.json is used, as GPTQModel does"});

  // AutoGPTQ 0.4: no quant_method, no checkpoint_format: GPTQ with v1 zeros, and its sym.
  auto old = open_with("gptq/w4_g128_sym_v1", {{"quantize_config.json", "gptq/config_files/quantize_config.autogptq_0.4.json"}});
  check_opened(*old, "gptq/w4_g128_sym_v1", "gptq");
  CHECK(logical(*old->model, q)->variant == "4-bit, group 128, sym, gptq (v1) zeros (quantize_config.json)");

  // A fixture folder with both files that agree: no warning, and the same bytes.
  auto agree = open_with(v2, {{"config.json", v2 + "/config.json"}, {"quantize_config.json", v2 + "/quantize_config.json"}});
  check_opened(*agree, v2, "gptq");
  CHECK(agree->model->warnings.empty());

  // AutoAWQ's quant_config.json (w_bit, q_group_size, version GEMM, no quant_method) alone.
  auto awq = open_with("awq/w4_g128", {{"quant_config.json", "awq/w4_g128/quant_config.json"}});
  check_opened(*awq, "awq/w4_g128", "awq");
  CHECK(logical(*awq->model, q)->variant == "GEMM, 4-bit, group 128 (quant_config.json)");
  // What it says and the tensors cannot: another packing, another group size.
  auto gemv = open_with("awq/w4_g128", {{"quant_config.json", "awq/config_files/quant_config.gemv.json"}});
  REQUIRE(gemv->model);
  CHECK(logical(*gemv->model, q)->error == "AWQ version 'gemv' (another packing) is not handled; gemm is");
  auto g64 = open_with("awq/w4_g128", {{"quant_config.json", "awq/config_files/quant_config.group_size_64.json"}});
  REQUIRE(g64->model);
  CHECK(logical(*g64->model, q)->error ==
        "quant_config.json's group_size 64 disagrees with the shapes' 128 (4 groups of scales for 512 inputs)");
}

TEST_CASE("integer schemes: pieces starting at any allowed row read the right bytes", "[schemes]") {
  std::vector<std::string> dirs;
  for (const char* v : kGptq) dirs.push_back(std::string("gptq/") + v);
  for (const char* v : kAwq) dirs.push_back(std::string("awq/") + v);
  for (const char* v : kCt) dirs.push_back(std::string("compressed_tensors/") + v);
  for (const char* v : kMlx) dirs.push_back(std::string("mlx/") + v);
  for (const auto& dir : dirs) {
    auto o = open_folder(dir);
    REQUIRE(o->model);
    for (const auto& l : o->model->logical) {
      INFO(dir << " " << l.name);
      REQUIRE(l.op);
      const uint64_t cols = l.shape.back(), rows = l.elements / cols, el = 4;
      const uint64_t gran = std::max<uint64_t>(1, l.op->row_granularity());
      auto whole = dequantized(*o, l.name, DType::F32);
      REQUIRE(whole);
      std::vector<std::pair<uint64_t, uint64_t>> runs;
      for (uint64_t r = 0; r < rows; r += gran) runs.emplace_back(r, std::min(rows, r + gran));
      for (uint64_t r = 0; r < rows; r += 3 * gran) runs.emplace_back(r, std::min(rows, r + 5 * gran + 1));
      for (const auto& [b, e] : runs) {
        auto got = op_rows(*o, l, b, e, DType::F32);
        const std::vector<uint8_t> want(whole->begin() + static_cast<std::ptrdiff_t>(b * cols * el),
                                        whole->begin() + static_cast<std::ptrdiff_t>(e * cols * el));
        if (got != want) FAIL("rows " << b << ".." << e << " differ");
      }
    }
  }
  // A packed zero point holds 32 / bits rows per word row.
  auto ct = open_folder("compressed_tensors/mixed_odd");
  REQUIRE(ct->model);
  CHECK(logical(*ct->model, "model.layers.0.mlp.down_proj.weight")->op->row_granularity() == 8);
  CHECK(logical(*ct->model, "model.layers.0.mlp.up_proj.weight")->op->row_granularity() == 4);
}

TEST_CASE("compressed-tensors weight_shape values are read at detection, in one round", "[schemes]") {
  // Past the first read of this 68 KB file, so detection asks for it.
  auto bytes = read_file(fixture_path("quantized/compressed_tensors/w4a16_g128_sym/model.safetensors"));
  auto config = read_file(fixture_path("quantized/compressed_tensors/w4a16_g128_sym/config.json"));
  auto sparse = amn::test::open_sparse({{"model.safetensors", bytes}, {"config.json", config}});
  REQUIRE(sparse.model);
  // One round more than a GPTQ file of the same size, whose detection reads nothing.
  auto gptq = read_file(fixture_path("quantized/gptq/w4_g128_sym_v1/model.safetensors"));
  auto gptq_config = read_file(fixture_path("quantized/gptq/w4_g128_sym_v1/config.json"));
  CHECK(sparse.rounds == amn::test::open_sparse({{"model.safetensors", gptq}, {"config.json", gptq_config}}).rounds + 1);
  REQUIRE(sparse.model->logical.size() == 1);
  CHECK(sparse.model->logical[0].error == "");
  CHECK(sparse.model->logical[0].shape == std::vector<uint64_t>{256, 512});
  // Two layers' weight_shapes come in one round too.
  auto mixed = read_file(fixture_path("quantized/compressed_tensors/mixed_odd/model.safetensors"));
  auto two = amn::test::open_sparse({{"model.safetensors", mixed}});
  REQUIRE(two.model);
  CHECK(two.rounds <= 3);
  CHECK(two.model->logical.size() == 2);
}

// fixtures/quantized/<family>/rejected/README.md lists the same cases.
TEST_CASE("rejected GPTQ, AWQ, compressed-tensors and MLX files say what is wrong", "[schemes]") {
  struct Case {
    const char* dir;
    const char* tensor;
    const char* scheme;
    const char* detect_error;   // LogicalTensor::error, or "" when detection accepts it
    const char* execute_error;  // when the defect is in the data
  };
  const char* q = "model.layers.0.self_attn.q_proj.weight";
  const char* up = "model.layers.0.mlp.up_proj.weight";
  const Case cases[] = {
      {"gptq/rejected/g_idx_out_of_range", q, "gptq", "", "GPTQ g_idx[7] = 2 is outside the 2 groups"},
      {"gptq/rejected/qzeros_wrong_shape", q, "gptq",
       "GPTQ qzeros has 120 bytes where the quantization parameters need 128", ""},
      {"gptq/rejected/scales_wrong_length", q, "gptq",
       "GPTQ scales has 480 bytes where the quantization parameters need 512", ""},
      {"gptq/rejected/missing_scales", q, "gptq",
       "no model.layers.0.self_attn.q_proj.scales beside model.layers.0.self_attn.q_proj.qweight", ""},
      {"gptq/rejected/g_idx_wrong_length", q, "gptq",
       "its g_idx has 200 entries, but qweight [32, 128] holds 256 inputs of 4 bits", ""},
      {"awq/rejected/qzeros_wrong_rows", up, "awq", "AWQ qzeros has 32 bytes where the quantization parameters need 16",
       ""},
      {"awq/rejected/scales_wrong_length", up, "awq",
       "its scales [1, 24] have 24 columns, but qweight [64, 4] holds 32 outputs (8 per column)", ""},
      {"awq/rejected/group_not_dividing", up, "awq", "its 3 groups (scales rows) do not divide in_features 64", ""},
      {"awq/rejected/missing_qzeros", up, "awq",
       "no model.layers.0.mlp.up_proj.qzeros beside model.layers.0.mlp.up_proj.qweight", ""},
      {"compressed_tensors/rejected/weight_shape_mismatch", q, "compressed-tensors",
       "weight_packed [128, 64] fits weight_shape [128, 640] at none of 4 bits", ""},
      {"compressed_tensors/rejected/g_idx_out_of_range", q, "compressed-tensors", "",
       "weight_g_idx[11] = 4 is outside the 4 groups"},
      {"compressed_tensors/rejected/zero_point_wrong_shape", q, "compressed-tensors",
       "weight_zero_point has 240 bytes where the quantization parameters need 256", ""},
      {"compressed_tensors/rejected/scale_groups_not_dividing", q, "compressed-tensors",
       "weight_scale has 3 groups, which do not divide in_features (512)", ""},
      {"compressed_tensors/rejected/missing_weight_scale", q, "compressed-tensors",
       "no model.layers.0.self_attn.q_proj.weight_scale beside model.layers.0.self_attn.q_proj.weight_packed", ""},
      {"mlx/rejected/scales_wrong_length", q, "mlx", "MLX scales has 64 bytes where the quantization parameters need 128",
       ""},
      {"mlx/rejected/missing_biases", q, "mlx", "no model.layers.0.self_attn.q_proj.biases beside the U32 weight", ""},
      {"mlx/rejected/bits_not_matching", q, "mlx",
       "its weight rows of 16 words hold 512 bits, not a whole number of 3-bit values", ""},
      {"mlx/rejected/unsupported_bits", q, "mlx",
       "MLX affine quantization with 7 bits (supported: 2, 3, 4, 5, 6, 8)", ""},
      {"mlx/rejected/fp_with_biases", q, "mlx",
       "MLX mode 'mxfp4' has no biases, yet model.layers.0.self_attn.q_proj.biases is there", ""},
      {"mlx/rejected/fp_scales_bf16", q, "mlx", "its scales are BF16; MLX mode 'mxfp4' stores them as U8", ""},
      {"mlx/rejected/fp_wrong_group", "model.layers.0.self_attn.k_proj.weight", "mlx",
       "MLX mode 'nvfp4' takes 4 bits in groups of 16; config.json's quantization gives 4 bits, group size 32", ""},
      {"mlx/rejected/unknown_mode", q, "mlx", "MLX mode 'mxfp6' is not one of affine, mxfp4, nvfp4, mxfp8", ""},
      {"mlx/rejected/experts_scales_flat", "model.layers.0.mlp.switch_mlp.gate_proj.weight", "mlx",
       "its scales shape [128, 8] does not fit a weight [4, 32, 32] of 256 mxfp4 values per row ([4, 32, 8] expected)",
       ""},
  };
  for (const auto& c : cases) {
    INFO(c.dir);
    auto o = open_folder(c.dir);
    check_rejected(*o, c.tensor, c.scheme, c.detect_error, c.execute_error);
  }
}

TEST_CASE("integer-scheme lookalikes without a config are left alone", "[schemes]") {
  // A lone I32 `*.qweight`, a U32 `*.weight` without scales, an I8 weight without a scale
  // and an I32 `*.weight_packed`-less weight_shape are plain tensors.
  std::vector<uint8_t> data(64 + 64 + 16 + 16, 1);
  auto file = amn::test::make_safetensors(
      R"({"a.qweight":{"dtype":"I32","shape":[4,4],"data_offsets":[0,64]},)"
      R"("b.weight":{"dtype":"U32","shape":[4,4],"data_offsets":[64,128]},)"
      R"("c.weight":{"dtype":"I8","shape":[4,4],"data_offsets":[128,144]},)"
      R"("d.weight_shape":{"dtype":"I64","shape":[2],"data_offsets":[144,160]}})",
      data);
  auto m = amn::test::open_memory(file);
  REQUIRE(m);
  CHECK(m->logical.empty());
  CHECK(m->parameter_count() == 16 + 16 + 16 + 2);
}
