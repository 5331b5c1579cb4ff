// forget --to gguf with llama-quantize's file types (Q4_K_M, Q3_K_L, ...): every tensor's
// type, and its bytes, equal llama-quantize's output for the same F16 GGUF
// (fixtures/gguf_ftype, made by llama-quantize outside the repository: README.md there).
#include <catch2/catch.hpp>

#include <map>
#include <simdjson.h>

#include "formats/gguf/describe.h"
#include "session/open.h"
#include "session/session.h"
#include "session_support.h"
#include "support.h"

using namespace amn;
using amn::test::feed;
using amn::test::fixture_path;
using amn::test::read_file;

namespace {

const std::string kInput = "gguf_ftype/tiny_llama_f16.gguf";

struct Stored {
  std::string type;  // "Q4_K", "F32"
  std::vector<uint8_t> bytes;
};

// The tensors of a GGUF (by name: llama-quantize writes them in its loader's order, by
// layer then name; amn keeps the input's order) and its general.file_type.
std::map<std::string, Stored> tensors_of(const std::vector<uint8_t>& file, uint64_t* file_type = nullptr) {
  FileSet set;
  set.add("x.gguf", std::make_unique<MemorySource>(std::span<const uint8_t>(file)));
  auto m = open_model(set, {});
  REQUIRE(m);
  std::map<std::string, Stored> out;
  for (const auto& t : m->tensors) {
    out[t.name] = {std::string(stored_type_name(t)), std::vector<uint8_t>(file.begin() + t.offset, file.begin() + t.offset + t.nbytes)};
  }
  if (file_type) {
    const GgufValue* v = static_cast<const GgufState&>(*m->format_state).header.find("general.file_type");
    REQUIRE(v);
    *file_type = v->as_uint().value_or(0);
  }
  return out;
}

std::vector<uint8_t> forget(const std::string& request, const std::string& input = kInput) {
  Session s("");
  const auto file = read_file(fixture_path(input));
  s.add_file("tiny.gguf", file.size());
  REQUIRE(feed(s, file, [&] { return s.parse(); }));
  auto planned = s.plan_forget(request);
  INFO(request << ": " << (planned ? std::string() : planned.error().message));
  REQUIRE(planned);
  REQUIRE(s.prepare_count() == 0);
  return amn::test::planned_output(s, file);
}

}  // namespace

TEST_CASE("forget --to gguf with a file type writes llama-quantize's tensors", "[forget][gguf][ftype]") {
  struct Case {
    const char* fixture;
    const char* request;
    uint64_t file_type;
    std::string input = kInput;
  };
  const std::string tied = "gguf_ftype/tiny_llama_tied_f16.gguf";  // no output.weight: token_embd takes its rule
  const Case cases[] = {
      {"tiny-Q4_K_M.gguf", R"({"to":"gguf","scheme":"Q4_K_M"})", 15},
      {"tiny-Q5_K_M.gguf", R"({"to":"gguf","scheme":"q5_k_m"})", 17},
      {"tiny-Q3_K_M.gguf", R"({"to":"gguf","scheme":"Q3_K_M"})", 12},
      {"tiny-Q6_K.gguf", R"({"to":"gguf","scheme":"Q6_K"})", 18},
      {"tiny-Q8_0.gguf", R"({"to":"gguf","scheme":"Q8_0"})", 7},
      {"tiny-IQ4_XS.gguf", R"({"to":"gguf","scheme":"IQ4_XS"})", 30},
      {"tiny-Q4_K_M-embd_q8_0-out_q5_k.gguf",
       R"({"to":"gguf","scheme":"Q4_K_M","tokenEmbeddingType":"q8_0","outputTensorType":"q5_k"})", 15},
      {"tiny-Q3_K_L-leave_output.gguf", R"({"to":"gguf","scheme":"Q3_K_L","leaveOutputTensor":true})", 13},
      {"tiny-tied-Q4_K_M.gguf", R"({"to":"gguf","scheme":"Q4_K_M"})", 15, tied},
      {"tiny-tied-Q3_K_M.gguf", R"({"to":"gguf","scheme":"Q3_K_M"})", 12, tied},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.fixture) {
      uint64_t want_ft = 0, got_ft = 0;
      const auto want = tensors_of(read_file(fixture_path(std::string("gguf_ftype/") + c.fixture)), &want_ft);
      const auto got = tensors_of(forget(c.request, c.input), &got_ft);
      CHECK(want_ft == c.file_type);
      CHECK(got_ft == want_ft);
      REQUIRE(got.size() == want.size());
      for (const auto& [name, w] : want) {
        INFO(name);
        REQUIRE(got.count(name) == 1);
        CHECK(got.at(name).type == w.type);
        CHECK(got.at(name).bytes == w.bytes);
      }
    }
  }
}

TEST_CASE("forget --to gguf with a file type picks llama-quantize's type per tensor", "[forget][gguf][ftype]") {
  // types.json: each tensor's type in llama-quantize's output for more file types.
  simdjson::dom::parser parser;
  const auto text = read_file(fixture_path("gguf_ftype/types.json"));
  simdjson::dom::object table;
  REQUIRE(!parser.parse(text.data(), text.size()).get_object().get(table));
  size_t checked = 0;
  for (auto [ftype, entry] : table) {
    INFO(ftype);
    const auto got = tensors_of(forget(R"({"to":"gguf","scheme":")" + std::string(ftype) + "\"}"));
    simdjson::dom::object types;
    REQUIRE(!entry["tensors"].get_object().get(types));
    for (auto [name, type] : types) {
      INFO(name);
      std::string_view want;
      REQUIRE(!type.get_string().get(want));
      REQUIRE(got.count(std::string(name)) == 1);
      CHECK(got.at(std::string(name)).type == want);
      ++checked;
    }
  }
  CHECK(checked >= 9 * 30);
}

TEST_CASE("forget --to gguf refuses the file types llama-quantize refuses without an importance matrix",
          "[forget][gguf][ftype]") {
  const auto file = read_file(fixture_path(kInput));
  // llama-quantize at the pinned commit, on this model: "this quantization requires an
  // importance matrix!" for each of these (Q2_K_S: its Q2_K tensors; IQ3_XS: attn_k's IQ3_XXS).
  for (const char* scheme : {"Q2_K_S", "IQ3_XS", "IQ3_XXS", "IQ2_M", "IQ2_S", "IQ1_M"}) {
    Session s("");
    s.add_file("tiny.gguf", file.size());
    REQUIRE(feed(s, file, [&] { return s.parse(); }));
    auto e = s.plan_forget(R"({"to":"gguf","scheme":")" + std::string(scheme) + "\"}");
    INFO(scheme);
    REQUIRE(!e);
    CHECK(e.error().code == ErrorCode::unsupported);
    CHECK(e.error().message.find("importance matrix") != std::string::npos);
  }
  Session s("");
  s.add_file("tiny.gguf", file.size());
  REQUIRE(feed(s, file, [&] { return s.parse(); }));
  auto e = s.plan_forget(R"({"to":"gguf","scheme":"Q4_K_M","outputTensorType":"q9_k"})");
  REQUIRE(!e);
  CHECK(e.error().message.find("outputTensorType") != std::string::npos);
  e = s.plan_forget(R"({"to":"gguf","scheme":"Q4_K_M","outputTensorType":"q8_0","leaveOutputTensor":true})");
  REQUIRE(!e);
  CHECK(e.error().code == ErrorCode::invalid_argument);
  e = s.plan_forget(R"({"scheme":"nf4","leaveOutputTensor":true})");
  REQUIRE(!e);
  CHECK(e.error().message.find("GGUF output") != std::string::npos);
}
