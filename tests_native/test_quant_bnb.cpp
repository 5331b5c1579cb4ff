// bitsandbytes dequantization (kernels/quant/bnb.h) against bitsandbytes' own kernels:
// fixtures/quantized/bnb (C++ CPU kernel for 4-bit, int8_vectorwise_dequant for int8), under
// every implementation (the scalar reference and each Highway target).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include <catch2/catch.hpp>
#include <simdjson.h>

#include "formats/safetensors/parse.h"
#include "kernels/cast.h"
#include "kernels/quant/bnb.h"
#include "quant_support.h"
#include "support.h"

using namespace amn;
using namespace amn::quant;
using namespace amn::test::quant_fixtures;

namespace {
std::vector<float> f32s(std::span<const uint8_t> b) {
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

// The absmax of one Linear4bit weight: plain F32, or rebuilt from the nested companions.
std::vector<float> absmax_of(const StFile& in, const std::string& w, uint64_t blocksize_nested, float offset) {
  const auto& a = in.tensor(w + ".absmax");
  if (a.dtype == DType::F32) return f32s(in.data(w + ".absmax"));
  REQUIRE(a.dtype == DType::U8);
  const auto na = in.data(w + ".nested_absmax");
  const auto nm = in.data(w + ".nested_quant_map");
  REQUIRE(validate_bnb_nested(a.elements, blocksize_nested, na.size() / 4, nm.size() / 4));
  std::vector<float> out(a.elements);
  resolve_bnb_nested_absmax(in.data(w + ".absmax").data(), a.elements, nm.data(), na.data(), blocksize_nested, offset,
                            out.data());
  return out;
}

// The packed quant_state JSON, read with simdjson (the keys bitsandbytes writes).
struct QuantState {
  std::string quant_type, dtype;
  uint64_t blocksize = 0, elements = 1, nested_blocksize = 0;
  double nested_offset = 0;
};

QuantState quant_state(const StFile& in, const std::string& w, const std::string& type) {
  const auto b = in.data(w + ".quant_state.bitsandbytes__" + type);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  REQUIRE(!parser.parse(reinterpret_cast<const char*>(b.data()), b.size()).get(doc));
  QuantState q;
  std::string_view sv;
  REQUIRE(!doc["quant_type"].get(sv));
  q.quant_type = sv;
  REQUIRE(!doc["dtype"].get(sv));
  q.dtype = sv;
  REQUIRE(!doc["blocksize"].get(q.blocksize));
  simdjson::dom::array shape;
  REQUIRE(!doc["shape"].get(shape));
  for (auto d : shape) {
    uint64_t n = 0;
    REQUIRE(!d.get(n));
    q.elements *= n;
  }
  if (doc["nested_blocksize"].get(q.nested_blocksize) == simdjson::SUCCESS) REQUIRE(!doc["nested_offset"].get(q.nested_offset));
  return q;
}

void check_4bit(const std::string& variant, const std::string& base, const std::string& type) {
  const StFile in = open_fixture("quantized/bnb/" + variant + ".safetensors");
  const StFile ex = open_fixture("quantized/bnb/" + variant + ".expected.safetensors");
  const std::string w = base + ".weight";
  const QuantState qs = quant_state(in, w, type);
  REQUIRE(qs.quant_type == type);
  Bnb4Params p;
  p.type = type == "fp4" ? Bnb4Type::fp4 : Bnb4Type::nf4;
  p.elements = qs.elements;
  p.blocksize = qs.blocksize;
  const auto absmax = absmax_of(in, w, qs.nested_blocksize, static_cast<float>(qs.nested_offset));
  const auto packed = in.data(w);
  REQUIRE(validate_bnb4(p, packed.size(), absmax.size()));
  const auto& et = ex.tensor(w);
  for_each_impl_and_target([&](DType to) {
    INFO(variant << " " << base << " -> " << dtype_name(to));
    // The canonical function takes the output dtype as a parameter: compare the fixture's
    // own dtype directly; the others with the casts (exact for these finite values).
    std::vector<uint8_t> got(p.elements * esize(to));
    for (uint64_t i = 0; i < p.elements; i += 1000) {
      const uint64_t e = std::min(p.elements, i + 1000);
      dequantize_bnb4(p, packed.data(), absmax, i, e, to, got.data() + i * esize(to));
    }
    if (to == et.dtype) {
      const auto canon = ex.data(w);
      CHECK(differing(got, std::vector<uint8_t>(canon.begin(), canon.end())) == 0);
    } else if (et.dtype == DType::F32) {
      CHECK(differing(got, expected_as(ex.data(w), DType::F32, to)) == 0);
    }
  });
}

}  // namespace

TEST_CASE("bitsandbytes: NF4 with double quantization matches bitsandbytes", "[quant][bnb]") {
  check_4bit("nf4", "model.layers.0.self_attn.q_proj", "nf4");
  check_4bit("nf4", "model.layers.0.mlp.down_proj", "nf4");  // 37 x 99: partial block, odd count
}

TEST_CASE("bitsandbytes: FP4 matches the CUDA / C++ kernels, -0.0 included", "[quant][bnb]") {
  check_4bit("fp4", "model.layers.0.self_attn.q_proj", "fp4");
  check_4bit("fp4", "model.layers.0.mlp.down_proj", "fp4");
  check_4bit("mixed4", "model.layers.0.self_attn.v_proj", "fp4");  // F16, nested, blocksize 128
  check_4bit("mixed4", "model.layers.0.self_attn.o_proj", "nf4");  // F32, blocksize 32
  CHECK(std::signbit(bnb4_codebook(Bnb4Type::fp4, 8)));
  CHECK(!std::signbit(bnb4_codebook(Bnb4Type::nf4, 7)));
}

TEST_CASE("bitsandbytes: LLM.int8() with SCB matches int8_vectorwise_dequant", "[quant][bnb]") {
  const StFile in = open_fixture("quantized/bnb/int8.safetensors");
  const StFile ex = open_fixture("quantized/bnb/int8.expected.safetensors");
  for (const std::string base : {"model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj"}) {
    const auto& wt = in.tensor(base + ".weight");
    REQUIRE(wt.dtype == DType::I8);
    const uint64_t rows = wt.shape[0], cols = wt.shape[1];
    const auto w = in.data(base + ".weight"), scb = in.data(base + ".SCB");
    REQUIRE(validate_bnb_int8(rows, cols, w.size(), scb.size()));
    for_each_impl_and_target([&](DType to) {
      INFO(base << " -> " << dtype_name(to));
      std::vector<uint8_t> got(rows * cols * esize(to));
      for (uint64_t r = 0; r < rows; r += 50) {
        const uint64_t e = std::min(rows, r + 50);
        dequantize_bnb_int8_rows(cols, w.data() + r * cols, scb.data(), r, e, to, got.data() + r * cols * esize(to));
      }
      CHECK(differing(got, expected_as(ex.data(base + ".weight"), DType::F32, to)) == 0);
    });
  }
}

TEST_CASE("bitsandbytes: inconsistent companions are errors", "[quant][bnb]") {
  auto code = [](const Status& s) { return s ? ErrorCode::internal : s.error().code; };
  Bnb4Params p;
  p.elements = 3663, p.blocksize = 64;
  CHECK(validate_bnb4(p, 1832, 58));
  CHECK(code(validate_bnb4(p, 1831, 58)) == ErrorCode::invalid_argument);  // packed too short
  CHECK(code(validate_bnb4(p, 1832, 57)) == ErrorCode::invalid_argument);  // wrong absmax length
  p.blocksize = 48;  // not a power of two
  CHECK(code(validate_bnb4(p, 1832, 77)) == ErrorCode::invalid_argument);
  CHECK(code(validate_bnb_nested(58, 256, 2, 256)) == ErrorCode::invalid_argument);
  CHECK(code(validate_bnb_nested(58, 256, 1, 255)) == ErrorCode::invalid_argument);
  CHECK(validate_bnb_nested(58, 256, 1, 256));
  CHECK(code(validate_bnb_int8(37, 99, 37 * 99, 36 * 4)) == ErrorCode::invalid_argument);
}
