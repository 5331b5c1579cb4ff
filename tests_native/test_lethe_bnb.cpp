// bitsandbytes encoders (kernels/lethe/bnb_encode.h) against bitsandbytes' own quantizers:
// fixtures/lethe/bnb (quantize_4bit's default torch backend, quantize_blockwise's C++ CPU
// kernel for double quantization, int8_vectorwise_quant after Int8Params' float16 cast), and
// the round-trip facts on fixtures/quantized/bnb (README.md there and in fixtures/lethe/bnb).
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <simdjson.h>

#include "core/bytes.h"
#include "kernels/cast.h"
#include "kernels/lethe/bnb_encode.h"
#include "kernels/quant/bnb.h"
#include "quant_support.h"
#include "support.h"

using namespace amn;
using namespace amn::lethe;
using namespace amn::test::quant_fixtures;

namespace {

template <class T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<uint8_t> bytes_of(std::span<const uint8_t> s) { return {s.begin(), s.end()}; }

std::vector<uint8_t> bytes_of(const float* p, size_t n) {
  std::vector<uint8_t> b(n * 4);
  std::memcpy(b.data(), p, b.size());
  return b;
}

struct State4 {
  std::string type;
  uint64_t blocksize = 0;
  bool nested = false;
  double offset = 0;
};

State4 state_of(const StFile& f, const std::string& w, const std::string& type) {
  const auto b = f.data(w + ".quant_state.bitsandbytes__" + type);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  REQUIRE(!parser.parse(reinterpret_cast<const char*>(b.data()), b.size()).get(doc));
  State4 s;
  std::string_view sv;
  REQUIRE(!doc["quant_type"].get(sv));
  s.type = sv;
  REQUIRE(!doc["blocksize"].get(s.blocksize));
  s.nested = f.model.find(w + ".nested_absmax") != nullptr;
  if (s.nested) REQUIRE(!doc["nested_offset"].get(s.offset));
  return s;
}

// Every Linear4bit weight of an expected file: (name of the weight, quant type).
std::vector<std::pair<std::string, std::string>> weights4(const StFile& f) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string key = ".quant_state.bitsandbytes__";
  for (const auto& t : f.model.tensors) {
    const auto at = t.name.find(key);
    if (at != std::string::npos) out.emplace_back(t.name.substr(0, at), t.name.substr(at + key.size()));
  }
  REQUIRE(!out.empty());
  return out;
}

void check_4bit_file(const std::string& variant) {
  const StFile in = open_fixture("lethe/bnb/" + variant + ".input.safetensors");
  const StFile ex = open_fixture("lethe/bnb/" + variant + ".safetensors");
  for (const auto& [w, type] : weights4(ex)) {
    INFO(variant << " " << w);
    const State4 s = state_of(ex, w, type);
    const Bnb4Type t = type == "fp4" ? Bnb4Type::fp4 : Bnb4Type::nf4;
    const auto x = as_f32(in, w);
    const uint64_t n = x.size(), blocks = (n + s.blocksize - 1) / s.blocksize;
    std::vector<uint8_t> packed((n + 1) / 2);
    std::vector<float> absmax(blocks);
    bnb4_quantize(t, x.data(), n, s.blocksize, packed.data(), absmax.data());
    CHECK(differing(packed, bytes_of(ex.data(w))) == 0);
    CHECK(differing(bytes_of(bnb4_quant_map(t), 16), bytes_of(ex.data(w + ".quant_map"))) ==
          0);

    // Runs that start on block boundaries (how the pipeline streams rows) give the same bytes.
    std::vector<uint8_t> packed2(packed.size());
    std::vector<float> absmax2(blocks);
    const uint64_t cut = blocks / 2 * s.blocksize;
    bnb4_quantize(t, x.data(), cut, s.blocksize, packed2.data(), absmax2.data());
    bnb4_quantize(t, x.data() + cut, n - cut, s.blocksize, packed2.data() + cut / 2, absmax2.data() + cut / s.blocksize);
    CHECK(packed2 == packed);
    CHECK(bytes_of(absmax2) == bytes_of(absmax));

    // --reuse-scales with the producer's own absmax.
    std::vector<uint8_t> again(packed.size());
    bnb4_quantize_with_absmax(t, x.data(), n, s.blocksize, absmax.data(), again.data());
    CHECK(again == packed);

    if (!s.nested) {
      CHECK(differing(bytes_of(absmax), bytes_of(ex.data(w + ".absmax"))) == 0);
      continue;
    }
    std::vector<uint8_t> codes(blocks);
    std::vector<float> nested((blocks + 255) / 256);
    const float offset = bnb4_double_quant(absmax.data(), blocks, codes.data(), nested.data());
    CHECK(amn::bit_cast<uint32_t>(offset) == amn::bit_cast<uint32_t>(static_cast<float>(s.offset)));
    CHECK(static_cast<double>(offset) == s.offset);  // the JSON holds the F32 value exactly
    CHECK(differing(codes, bytes_of(ex.data(w + ".absmax"))) == 0);
    CHECK(differing(bytes_of(nested), bytes_of(ex.data(w + ".nested_absmax"))) == 0);
    CHECK(differing(bytes_of(bnb_dynamic_map(), 256),
                    bytes_of(ex.data(w + ".nested_quant_map"))) == 0);
    // The nested codes again from the given nested absmax.
    std::vector<float> centred(blocks);
    for (uint64_t i = 0; i < blocks; ++i) centred[i] = absmax[i] - offset;
    std::vector<uint8_t> codes2(blocks);
    bnb_quantize_blockwise_with_absmax(centred.data(), blocks, 256, bnb_dynamic_map(), nested.data(), codes2.data());
    CHECK(codes2 == codes);
  }
}

}  // namespace

TEST_CASE("lethe bnb: NF4 with double quantization is bitsandbytes' bytes", "[lethe][bnb]") {
  check_4bit_file("nf4_dq");
}

TEST_CASE("lethe bnb: NF4/FP4 ties, zeros, subnormals, +-Inf, NaN as bitsandbytes writes them", "[lethe][bnb]") {
  check_4bit_file("plain4");
}

TEST_CASE("lethe bnb: block sizes 32, 128, 4096 (nested and not)", "[lethe][bnb]") { check_4bit_file("blocksizes"); }

TEST_CASE("lethe bnb: LLM.int8() rows, SCB and weight_format", "[lethe][bnb]") {
  const StFile in = open_fixture("lethe/bnb/int8.input.safetensors");
  const StFile ex = open_fixture("lethe/bnb/int8.safetensors");
  for (const std::string base :
       {"model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj", "model.layers.0.mlp.down_proj"}) {
    INFO(base);
    const auto& t = ex.tensor(base + ".weight");
    REQUIRE(t.dtype == DType::I8);
    const uint64_t rows = t.shape[0], cols = t.shape[1];
    const auto x = as_f32(in, base + ".weight");
    std::vector<int8_t> q(rows * cols), q2(rows * cols);
    std::vector<float> scb(rows);
    for (uint64_t r = 0; r < rows; ++r) bnb_int8_quantize_row(x.data() + r * cols, cols, q.data() + r * cols, &scb[r]);
    CHECK(differing(bytes_of(q), bytes_of(ex.data(base + ".weight"))) == 0);
    CHECK(differing(bytes_of(scb), bytes_of(ex.data(base + ".SCB"))) == 0);
    for (uint64_t r = 0; r < rows; ++r) bnb_int8_quantize_row_with_scb(x.data() + r * cols, cols, scb[r], q2.data() + r * cols);
    CHECK(q2 == q);
    const auto& wf = ex.tensor(base + ".weight_format");
    CHECK(wf.dtype == DType::U8);
    CHECK(wf.shape.empty());
    CHECK(ex.data(base + ".weight_format")[0] == 0);
  }
}

TEST_CASE("lethe bnb: torch 1.13's float32 mean on many lengths and thread counts", "[lethe][bnb]") {
  const StFile f = open_fixture("lethe/bnb/torch_mean.safetensors");
  const auto values = as_f32(f, "values");
  const auto lb = f.data("lengths");
  std::vector<int64_t> lengths(lb.size() / 8);
  std::memcpy(lengths.data(), lb.data(), lb.size());
  for (unsigned threads = 1; threads <= 4; ++threads) {
    const auto means = as_f32(f, "mean_threads" + std::to_string(threads));
    size_t bad = 0;
    for (size_t i = 0; i < lengths.size(); ++i) {
      const float m = torch_mean_f32(values.data(), static_cast<uint64_t>(lengths[i]), threads);
      if (amn::bit_cast<uint32_t>(m) != amn::bit_cast<uint32_t>(means[i])) {
        ++bad;
        UNSCOPED_INFO("threads " << threads << " length " << lengths[i] << ": " << m << " vs torch " << means[i]);
      }
    }
    CHECK(bad == 0);
  }
}

namespace {

// Round trip on the dequantizer fixtures: bitsandbytes' dequantized output (the expected file's
// dtype), quantized again with the fixture's own absmax (resolved when nested), against the
// fixture's packed bytes. Returns the number of differing packed bytes.
size_t roundtrip_4bit(const std::string& variant, const std::string& w, const std::string& type, bool signed_zero) {
  const StFile in = open_fixture("quantized/bnb/" + variant + ".safetensors");
  const StFile ex = open_fixture("quantized/bnb/" + variant + ".expected.safetensors");
  const State4 s = state_of(in, w, type);
  const Bnb4Type t = type == "fp4" ? Bnb4Type::fp4 : Bnb4Type::nf4;
  const auto x = as_f32(ex, w);
  const uint64_t n = x.size(), blocks = (n + s.blocksize - 1) / s.blocksize;
  std::vector<float> absmax(blocks);
  if (s.nested) {
    quant::resolve_bnb_nested_absmax(in.data(w + ".absmax").data(), blocks, in.data(w + ".nested_quant_map").data(),
                                     in.data(w + ".nested_absmax").data(), 256, static_cast<float>(s.offset),
                                     absmax.data());
  } else {
    std::memcpy(absmax.data(), in.data(w + ".absmax").data(), blocks * 4);
  }
  std::vector<uint8_t> packed((n + 1) / 2);
  bnb4_quantize_with_absmax(t, x.data(), n, s.blocksize, absmax.data(), packed.data(), signed_zero);
  return differing(packed, bytes_of(in.data(w)));
}

}  // namespace

TEST_CASE("lethe bnb: forget(remember(REF)) with REF's absmax / SCB is REF, byte for byte", "[lethe][bnb]") {
  // BF16 outputs (nf4, fp4), F16 (mixed4 v_proj, FP4 nested, blocksize 128), F32 (mixed4 o_proj).
  for (const bool signed_zero : {true, false}) {
    INFO("fp4_signed_zero " << signed_zero);
    CHECK(roundtrip_4bit("nf4", "model.layers.0.self_attn.q_proj.weight", "nf4", signed_zero) == 0);
    CHECK(roundtrip_4bit("nf4", "model.layers.0.mlp.down_proj.weight", "nf4", signed_zero) == 0);
    CHECK(roundtrip_4bit("mixed4", "model.layers.0.self_attn.o_proj.weight", "nf4", signed_zero) == 0);
  }
  CHECK(roundtrip_4bit("fp4", "model.layers.0.self_attn.q_proj.weight", "fp4", true) == 0);
  CHECK(roundtrip_4bit("fp4", "model.layers.0.mlp.down_proj.weight", "fp4", true) == 0);
  CHECK(roundtrip_4bit("mixed4", "model.layers.0.self_attn.v_proj.weight", "fp4", true) == 0);
  // bitsandbytes' own rule gives -0.0 code 0: every byte holding a code 8 (a -0.0 after
  // dequantization) differs.
  CHECK(roundtrip_4bit("fp4", "model.layers.0.self_attn.q_proj.weight", "fp4", false) == 353);
  CHECK(roundtrip_4bit("fp4", "model.layers.0.mlp.down_proj.weight", "fp4", false) == 11);
  CHECK(roundtrip_4bit("mixed4", "model.layers.0.self_attn.v_proj.weight", "fp4", false) == 32);

  // int8: int8_vectorwise_dequant's F32 output, quantized again with the fixture's SCB.
  const StFile in = open_fixture("quantized/bnb/int8.safetensors");
  const StFile ex = open_fixture("quantized/bnb/int8.expected.safetensors");
  for (const std::string base : {"model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj"}) {
    INFO(base);
    const auto& t = in.tensor(base + ".weight");
    const uint64_t rows = t.shape[0], cols = t.shape[1];
    const auto x = as_f32(ex, base + ".weight");
    const auto scb = as_f32(in, base + ".SCB");
    std::vector<int8_t> q(rows * cols);
    for (uint64_t r = 0; r < rows; ++r) bnb_int8_quantize_row_with_scb(x.data() + r * cols, cols, scb[r], q.data() + r * cols);
    CHECK(differing(bytes_of(q), bytes_of(in.data(base + ".weight"))) == 0);
  }
}

TEST_CASE("lethe bnb: a given negative absmax picks the code its dequantizer multiplies back", "[lethe][bnb]") {
  // A double-quantized reference's absmax can resolve below zero (bitsandbytes stores
  // absmax - mean). A value that no code of the reference gives back (an edited weight) must
  // still land on the nearest code * absmax, not saturate as a clamp to 1e-38 would make it.
  // Full blocks (the SIMD kernel unless forced) and the remainder block (scalar) both.
  for (const auto t : {Bnb4Type::nf4, Bnb4Type::fp4}) {
    const uint64_t blocksize = 64, n = 2 * blocksize + 10;
    const float absmax[] = {-2.0f, -0.75f, -3.0f};
    const float* map = bnb4_quant_map(t);
    std::vector<float> x(n);
    for (uint64_t i = 0; i < n; ++i) x[i] = map[i % 16] * absmax[i / blocksize];
    std::vector<uint8_t> packed((n + 1) / 2);
    bnb4_quantize_with_absmax(t, x.data(), n, blocksize, absmax, packed.data());
    size_t wrong = 0;
    for (uint64_t i = 0; i < n; ++i) {
      const uint8_t code = i % 2 ? packed[i / 2] & 15 : packed[i / 2] >> 4;
      wrong += map[code] * absmax[i / blocksize] != x[i];
    }
    INFO((t == Bnb4Type::nf4 ? "nf4" : "fp4"));
    CHECK(wrong == 0);
  }
}
