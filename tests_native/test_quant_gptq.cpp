// GPTQ kernels against GPTQModel's own dequantize_weight output
// (fixtures/quantized/gptq, made by make_fixtures.py there): 0 differing bytes for F16
// (what dequantize_weight returns) and for BF16 / F32 (the exact F32 product rounded
// once, as GPTQModel's convert_gptq_file computes it: make_round_once.py), whole and
// in row pieces, under every implementation (the reference and each Highway target);
// and every hostile parameter rejected with an error.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/cast.h"
#include "kernels/quant/gptq.h"
#include "quant_support.h"
#include "support.h"

using namespace amn::test::quant_fixtures;

namespace {

using amn::DType;

struct Variant {
  const char* dir;
  uint32_t bits;
  int group_size;
  amn::quant::GptqZeros zeros;
};

const Variant kVariants[] = {
    {"w4_g128_sym_v1", 4, 128, amn::quant::GptqZeros::v1},
    {"w4_g128_asym_actorder_v1", 4, 128, amn::quant::GptqZeros::v1},
    {"w4_g128_asym_v2", 4, 128, amn::quant::GptqZeros::v2},
    {"w8_g128_sym_v1", 8, 128, amn::quant::GptqZeros::v1},
    {"w3_g128_asym_v1", 3, 128, amn::quant::GptqZeros::v1},
    {"w2_gm1_sym_v2", 2, -1, amn::quant::GptqZeros::v2},
    {"w4_g128_odd_v1", 4, 128, amn::quant::GptqZeros::v1},
};

const std::string kBase = "model.layers.0.self_attn.q_proj";

struct Layer {
  StFile model, expected;
  amn::quant::GptqParams params;
  amn::quant::GptqTensors tensors;
};

Layer load_layer(const Variant& v) {
  Layer l{open_fixture(std::string("quantized/gptq/") + v.dir + "/model.safetensors"),
          open_fixture(std::string("quantized/gptq/") + v.dir + "/expected.safetensors"), {}, {}};
  const auto& scales = l.model.tensor(kBase + ".scales");
  amn::quant::GptqParams& p = l.params;
  p.bits = v.bits;
  p.in_features = l.model.tensor(kBase + ".g_idx").shape[0];
  p.out_features = scales.shape[1];
  p.groups = scales.shape[0];
  p.group_size = v.group_size == -1 ? p.in_features : uint64_t(v.group_size);
  p.scale_dtype = scales.dtype;
  p.zeros = v.zeros;
  l.tensors = {l.model.data(kBase + ".qweight"), l.model.data(kBase + ".qzeros"), l.model.data(kBase + ".scales"),
               l.model.data(kBase + ".g_idx")};
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

TEST_CASE("GPTQ dequantization equals GPTQModel's dequantize_weight", "[quant][gptq]") {
  const std::string impl = GENERATE(Catch::Generators::from_range(impl_names()));
  const EachImpl scope(impl);
  INFO("implementation " << impl);
  for (const auto& v : kVariants) {
    INFO(v.dir);
    auto l = load_layer(v);
    const auto& exp = l.expected.tensor(kBase + ".weight");
    REQUIRE(exp.dtype == DType::F16);
    REQUIRE(exp.shape == std::vector<uint64_t>{l.params.out_features, l.params.in_features});
    REQUIRE(amn::quant::validate_gptq(l.params, l.tensors).ok());
    for (DType out : {DType::F16, DType::BF16, DType::F32}) {
      INFO(amn::dtype_name(out));
      const auto want = expected_for(l.expected, kBase + ".weight", DType::F16, out);
      std::vector<uint8_t> got(want.size(), 0xAB);
      REQUIRE(amn::quant::dequantize_gptq_rows(l.params, l.tensors, 0, l.params.out_features, out, got).ok());
      CHECK(differing(got, want) == 0);
      // in pieces of whole rows, as the converter runs it
      std::vector<uint8_t> pieces(want.size(), 0xCD);
      const size_t row_bytes = l.params.in_features * amn::dtype_info(out).block_bytes;
      for (uint64_t r = 0; r < l.params.out_features; r += 5) {
        const uint64_t e = std::min<uint64_t>(r + 5, l.params.out_features);
        REQUIRE(amn::quant::dequantize_gptq_rows(l.params, l.tensors, r, e, out,
                                                 std::span<uint8_t>(pieces).subspan(r * row_bytes)).ok());
      }
      CHECK(differing(pieces, want) == 0);
    }
  }
}

TEST_CASE("GPTQ v1 zero points carry across fields as GPTQModel adds them", "[quant][gptq]") {
  // w4_g128_odd_v1 has groups whose zero point is 0 (stored as 15): GPTQModel's
  // v1 -> v2 word addition carries into the next field. Decoding field by field
  // ((stored + 1) & 15, AutoGPTQ's way) must give different bytes, or the fixture
  // would not be testing the carry.
  auto l = load_layer(kVariants[6]);
  std::vector<uint8_t> fieldwise_zeros(l.tensors.qzeros.begin(), l.tensors.qzeros.end());
  bool any15 = false;
  for (size_t w = 0; w + 4 <= fieldwise_zeros.size(); w += 4) {
    uint32_t word, fixed = 0;
    std::memcpy(&word, &fieldwise_zeros[w], 4);
    for (int f = 0; f < 8; ++f) {
      const uint32_t z = (word >> (4 * f)) & 15u;
      any15 |= z == 15;
      fixed |= ((z + 1) & 15u) << (4 * f);
    }
    std::memcpy(&fieldwise_zeros[w], &fixed, 4);
  }
  REQUIRE(any15);
  auto p2 = l.params;
  p2.zeros = amn::quant::GptqZeros::v2;
  auto t2 = l.tensors;
  t2.qzeros = fieldwise_zeros;
  const size_t n = l.params.out_features * l.params.in_features * 2;
  std::vector<uint8_t> carry(n), fieldwise(n);
  REQUIRE(amn::quant::dequantize_gptq_rows(l.params, l.tensors, 0, l.params.out_features, DType::F16, carry).ok());
  REQUIRE(amn::quant::dequantize_gptq_rows(p2, t2, 0, l.params.out_features, DType::F16, fieldwise).ok());
  CHECK(differing(carry, fieldwise) > 0);
}

TEST_CASE("GPTQ rejects inconsistent parameters and tensors", "[quant][gptq]") {
  auto l = load_layer(kVariants[0]);
  const auto& p = l.params;
  std::vector<uint8_t> out(p.out_features * p.in_features * 4);
  auto run = [&](const amn::quant::GptqParams& q, const amn::quant::GptqTensors& t, DType o = DType::F16,
                 uint64_t b = 0, uint64_t e = ~uint64_t{0}) {
    return amn::quant::dequantize_gptq_rows(q, t, b, e == ~uint64_t{0} ? q.out_features : e, o, out);
  };
  REQUIRE(run(p, l.tensors).ok());

  auto bad_bits = p;
  bad_bits.bits = 5;
  CHECK(run(bad_bits, l.tensors).error().code == amn::ErrorCode::unsupported);

  auto wrong_bits = p;  // 8-bit read of 4-bit tensors: the sizes cannot match
  wrong_bits.bits = 8;
  CHECK(run(wrong_bits, l.tensors).error().code == amn::ErrorCode::parse);

  auto short_qzeros = l.tensors;
  short_qzeros.qzeros = short_qzeros.qzeros.first(short_qzeros.qzeros.size() - 4);
  const auto e1 = run(p, short_qzeros);
  CHECK(e1.error().code == amn::ErrorCode::parse);
  CHECK(e1.error().message.find("qzeros") != std::string::npos);

  auto short_scales = l.tensors;
  short_scales.scales = short_scales.scales.first(10);
  CHECK(run(p, short_scales).error().code == amn::ErrorCode::parse);

  std::vector<uint8_t> g(l.tensors.g_idx.begin(), l.tensors.g_idx.end());
  const int32_t outside = int32_t(p.groups);
  std::memcpy(&g[4 * 7], &outside, 4);
  auto bad_g = l.tensors;
  bad_g.g_idx = g;
  const auto e2 = run(p, bad_g);
  CHECK(e2.error().code == amn::ErrorCode::parse);
  CHECK(e2.error().message.find("g_idx[7]") != std::string::npos);
  const int32_t negative = -1;
  std::memcpy(&g[4 * 7], &negative, 4);
  CHECK(run(p, bad_g).error().code == amn::ErrorCode::parse);

  auto no_g = p;  // without g_idx the group size must give the scales' rows
  no_g.has_g_idx = false;
  no_g.group_size = 100;
  auto t_no_g = l.tensors;
  t_no_g.g_idx = {};
  CHECK(run(no_g, t_no_g).error().code == amn::ErrorCode::parse);
  no_g.group_size = 128;
  // without g_idx, groups follow i / group_size: the same bytes as the fixture's g_idx
  std::vector<uint8_t> with_g(p.out_features * p.in_features * 2), without_g(with_g.size());
  REQUIRE(amn::quant::dequantize_gptq_rows(p, l.tensors, 0, p.out_features, DType::F16, with_g).ok());
  REQUIRE(amn::quant::dequantize_gptq_rows(no_g, t_no_g, 0, p.out_features, DType::F16, without_g).ok());
  CHECK(differing(with_g, without_g) == 0);

  auto i8_scales = p;
  i8_scales.scale_dtype = DType::I8;
  CHECK(run(i8_scales, l.tensors).error().code == amn::ErrorCode::parse);
  CHECK(run(p, l.tensors, DType::I32).error().code == amn::ErrorCode::invalid_argument);
  CHECK(run(p, l.tensors, DType::F16, 5, 4).error().code == amn::ErrorCode::invalid_argument);
  CHECK(run(p, l.tensors, DType::F16, 0, p.out_features + 1).error().code == amn::ErrorCode::invalid_argument);
  std::vector<uint8_t> small(10);
  CHECK(amn::quant::dequantize_gptq_rows(p, l.tensors, 0, 1, DType::F16, small).error().code ==
        amn::ErrorCode::invalid_argument);

  auto huge = p;
  huge.in_features = uint64_t{1} << 62;
  CHECK(!run(huge, l.tensors).ok());
}

TEST_CASE("GPTQ rejected-file fixtures are rejected", "[quant][gptq]") {
  // Parameters taken from the files as a detector would (in from g_idx, out and groups
  // from scales, bits from the config): each defect must surface as an error.
  for (const char* name : {"g_idx_out_of_range", "qzeros_wrong_shape", "scales_wrong_length", "g_idx_wrong_length"}) {
    INFO(name);
    const std::string dir = std::string("rejected/") + name;
    auto model = open_fixture("quantized/gptq/" + dir + "/model.safetensors");
    const auto& scales = model.tensor(kBase + ".scales");
    amn::quant::GptqParams p;
    p.bits = 4;
    p.in_features = model.tensor(kBase + ".g_idx").shape[0];
    p.out_features = scales.shape[1];
    p.groups = scales.shape[0];
    p.group_size = 128;
    p.scale_dtype = scales.dtype;
    p.zeros = amn::quant::GptqZeros::v2;
    const amn::quant::GptqTensors t{model.data(kBase + ".qweight"), model.data(kBase + ".qzeros"),
                                    model.data(kBase + ".scales"), model.data(kBase + ".g_idx")};
    std::vector<uint8_t> out(p.out_features * p.in_features * 2);
    const auto r = amn::quant::dequantize_gptq_rows(p, t, 0, p.out_features, DType::F16, out);
    REQUIRE(!r.ok());
    CHECK(r.error().code == amn::ErrorCode::parse);
    CHECK(!r.error().message.empty());
  }
  auto missing = open_fixture("quantized/gptq/rejected/missing_scales/model.safetensors");
  CHECK(missing.model.find(kBase + ".scales") == nullptr);
  CHECK(missing.model.find(kBase + ".qweight") != nullptr);
}
