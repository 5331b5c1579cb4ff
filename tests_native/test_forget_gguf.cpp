// forget --to gguf through the session, sans-IO: a safetensors input becomes a GGUF whose
// quantized tensor holds exactly ggml_quantize_chunk's bytes (fixtures/ggml_quant), with
// llama-quantize --pure's choice of tensors and its fallback for rows the type's blocks
// do not divide.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>

#include "session/open.h"
#include "session/session.h"
#include "session_support.h"
#include "support.h"

using namespace amn;
using amn::test::fixture_path;
using amn::test::feed;
using amn::test::read_file;

namespace {

// A safetensors file: the 16x256 fixture input as a layer weight, a norm, a weight whose
// rows of 48 no K-quant (nor its fallback) divides, and a row of 64 (Q4_K falls back to Q5_0).
std::vector<uint8_t> input_file() {
  const auto x = read_file(fixture_path("ggml_quant/input.f32"));
  std::vector<uint8_t> data = x;  // blk.0.attn_q.weight [16, 256]
  const size_t norm_at = data.size();
  data.resize(data.size() + 256 * 4 + 2 * 48 * 4 + 2 * 64 * 4);
  std::memcpy(data.data() + norm_at, x.data(), 256 * 4);                        // norm [256]
  std::memcpy(data.data() + norm_at + 256 * 4, x.data() + 1024, 2 * 48 * 4);    // odd [2, 48]
  std::memcpy(data.data() + norm_at + 256 * 4 + 2 * 48 * 4, x.data() + 4096, 2 * 64 * 4);  // narrow [2, 64]
  const size_t a = norm_at, b = a + 1024, c = b + 384, d = c + 512;
  const std::string header = "{\"blk.0.attn_q.weight\":{\"dtype\":\"F32\",\"shape\":[16,256],\"data_offsets\":[0," +
                             std::to_string(a) + "]},\"blk.0.attn_norm.weight\":{\"dtype\":\"F32\",\"shape\":[256],"
                             "\"data_offsets\":[" + std::to_string(a) + "," + std::to_string(b) + "]},"
                             "\"blk.0.odd.weight\":{\"dtype\":\"F32\",\"shape\":[2,48],\"data_offsets\":[" +
                             std::to_string(b) + "," + std::to_string(c) + "]},"
                             "\"blk.0.narrow.weight\":{\"dtype\":\"F32\",\"shape\":[2,64],\"data_offsets\":[" +
                             std::to_string(c) + "," + std::to_string(d) + "]}}";
  return amn::test::make_safetensors(header, data);
}

std::vector<uint8_t> forget_bytes(const std::vector<uint8_t>& file, const std::string& request, Session& s,
                                  const std::string& name = "model.safetensors") {
  s.add_file(name, file.size());
  REQUIRE(feed(s, file, [&] { return s.parse(); }));
  REQUIRE(s.plan_forget(request));
  REQUIRE(s.prepare_count() == 0);
  return amn::test::planned_output(s, file);
}

struct Stored {
  GgmlType type;
  DType dtype;
  std::vector<uint8_t> bytes;
};

std::map<std::string, Stored> gguf_tensors(const std::vector<uint8_t>& file) {
  FileSet set;
  set.add("x.gguf", std::make_unique<MemorySource>(std::span<const uint8_t>(file)));
  auto m = open_model(set, {});
  REQUIRE(m);
  std::map<std::string, Stored> out;
  for (const auto& t : m->tensors) {
    out[t.name] = {t.ggml_type, t.dtype, std::vector<uint8_t>(file.begin() + t.offset, file.begin() + t.offset + t.nbytes)};
  }
  return out;
}

}  // namespace

TEST_CASE("forget --to gguf writes ggml's blocks with llama-quantize --pure's choices", "[forget][gguf]") {
  for (const char* type : {"Q4_K", "q8_0", "Q6_K"}) {
    INFO(type);
    Session s("");
    const auto out =
        forget_bytes(input_file(), std::string("{\"to\":\"gguf\",\"pure\":true,\"scheme\":\"") + type + "\"}", s);
    const auto got = gguf_tensors(out);
    REQUIRE(got.size() == 4);
    const auto want_type = *ggml_type_from_name(type);
    CHECK(got.at("blk.0.attn_q.weight").type == want_type);
    std::string upper(type);
    for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    CHECK(got.at("blk.0.attn_q.weight").bytes == read_file(fixture_path("ggml_quant/" + upper + ".q")));
    // 1-D: kept as stored (F32), as llama-quantize does.
    CHECK(got.at("blk.0.attn_norm.weight").dtype == DType::F32);
    // Rows of 48: no 32- or 256-element block divides them; llama-quantize falls back to
    // F16 from the K-quants and has no fallback for Q8_0 (it fails; we keep the tensor).
    if (upper == "Q8_0") {
      CHECK(got.at("blk.0.odd.weight").dtype == DType::F32);
    } else {
      CHECK(got.at("blk.0.odd.weight").dtype == DType::F16);
    }
    // Rows of 64: Q4_K -> Q5_0, Q6_K -> Q8_0 (tensor_type_fallback); Q8_0 fits.
    const GgmlType narrow = upper == "Q4_K" ? GgmlType::Q5_0 : GgmlType::Q8_0;
    CHECK(got.at("blk.0.narrow.weight").type == narrow);
    const std::string report = s.forget_report_json();
    CHECK(report.find(upper == "Q8_0" ? "\"quantized\":2" : "\"quantized\":3") != std::string::npos);
  }
}

TEST_CASE("forget --to gguf refuses what it cannot write, naming it", "[forget][gguf]") {
  Session s("");
  const auto file = input_file();
  s.add_file("model.safetensors", file.size());
  REQUIRE(feed(s, file, [&] { return s.parse(); }));
  auto e = s.plan_forget(R"({"to":"gguf","scheme":"q4_k_m"})");  // a file type reads the GGUF's architecture
  REQUIRE(!e);
  CHECK(e.error().code == ErrorCode::unsupported);
  CHECK(e.error().message.find("GGUF input") != std::string::npos);
  e = s.plan_forget(R"({"to":"gguf","scheme":"q4_k_x"})");
  REQUIRE(!e);
  CHECK(e.error().code == ErrorCode::invalid_argument);
  e = s.plan_forget(R"({"to":"gguf","scheme":"IQ2_XXS"})");
  REQUIRE(!e);
  CHECK(e.error().code == ErrorCode::invalid_argument);  // needs imatrix
  CHECK(e.error().message.find("importance matrix") != std::string::npos);
  e = s.plan_forget(R"({"scheme":"Q4_0"})");  // a ggml type without GGUF output
  REQUIRE(!e);
  CHECK(e.error().message.find("to gguf") != std::string::npos);
  e = s.plan_forget(R"({"scheme":"nf4","pure":true})");
  REQUIRE(!e);
  CHECK(e.error().code == ErrorCode::invalid_argument);
}
