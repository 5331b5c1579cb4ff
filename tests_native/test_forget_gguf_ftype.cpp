// forget --to gguf with llama-quantize's file types (Q4_K_M, Q3_K_L, ...): every tensor's
// type, and its bytes, equal llama-quantize's output for the same F16 GGUF
// (fixtures/gguf_ftype, made by llama-quantize outside the repository: README.md there).
#include <catch2/catch.hpp>

#include <map>
#include <simdjson.h>

#include "formats/gguf/describe.h"
#include "formats/gguf/parse.h"
#include "session/open.h"
#include "session/request.h"
#include "session/session.h"
#include "session_support.h"
#include "support.h"

using namespace amn;
using amn::test::feed;
using amn::test::fixture_path;
using amn::test::read_file;

namespace {

const std::string kInput = "gguf_ftype/tiny_llama_f16.gguf";

using amn::test::tensors_of;

// `imatrix`: a fixture whose bytes the session reads as the request's importance matrix.
std::vector<uint8_t> forget(const std::string& request, const std::string& input = kInput, const std::string& imatrix = "") {
  Session s("");
  const auto file = read_file(fixture_path(input));
  s.add_file("tiny.gguf", file.size());
  REQUIRE(feed(s, file, [&] { return s.parse(); }));
  if (!imatrix.empty()) REQUIRE(s.set_imatrix(read_file(fixture_path(imatrix))));
  auto planned = s.plan_forget(request);
  INFO(request << ": " << (planned ? std::string() : planned.error().message));
  REQUIRE(planned);
  REQUIRE(s.prepare_count() == 0);
  return amn::test::planned_output(s, file);
}

// Checks that got_file holds want_file's tensors (types and bytes) and general.file_type;
// returns want_file's file type.
uint64_t check_same_tensors(const std::vector<uint8_t>& want_file, const std::vector<uint8_t>& got_file) {
  uint64_t want_ft = 0, got_ft = 0;
  const auto want = tensors_of(want_file, &want_ft);
  const auto got = tensors_of(got_file, &got_ft);
  CHECK(got_ft == want_ft);
  REQUIRE(got.size() == want.size());
  for (const auto& [name, w] : want) {
    INFO(name);
    REQUIRE(got.count(name) == 1);
    CHECK(got.at(name).type == w.type);
    CHECK(got.at(name).bytes == w.bytes);
  }
  return want_ft;
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
      // JSON escapes: the expressions are blk\.0\.attn_v, ... (README.md).
      {"tiny-Q4_K_M-tensor_type.gguf", R"({"to":"gguf","scheme":"Q4_K_M","tensorType":["blk\\.0\\.attn_v=q8_0","ffn_(up|gate)=q5_0","blk\\.1\\.ffn_up=q8_0","BLK\\.2\\.ATTN_Q=iq4_nl","attn_output=q4_k"]})", 15},
      {"tiny-tied-Q4_K_M.gguf", R"({"to":"gguf","scheme":"Q4_K_M"})", 15, tied},
      {"tiny-tied-Q3_K_M.gguf", R"({"to":"gguf","scheme":"Q3_K_M"})", 12, tied},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.fixture) {
      const auto want = read_file(fixture_path(std::string("gguf_ftype/") + c.fixture));
      const auto got = forget(c.request, c.input);
      CHECK(check_same_tensors(want, got) == c.file_type);
      // The whole file too: llama-quantize's KV order and its loader's tensor order.
      CHECK(got == want);
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
    CHECK(e.error().code == ErrorCode::invalid_argument);
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

namespace {

// The quantize.imatrix.* KVs of a GGUF, as "key=value" lines in file order.
std::string imatrix_kvs(const std::vector<uint8_t>& file) {
  FileSet set;
  set.add("x.gguf", std::make_unique<MemorySource>(std::span<const uint8_t>(file)));
  auto m = open_model(set, {});
  REQUIRE(m);
  std::string out;
  for (const auto& [key, v] : static_cast<const GgufState&>(*m->format_state).header.kv) {
    if (key.rfind("quantize.imatrix.", 0) != 0) continue;
    out += key + "=" + (v.type == GgufType::STRING ? v.str : std::string(gguf_type_name(v.type)) + ":" + std::to_string(v.u)) + "\n";
  }
  return out;
}


}  // namespace

TEST_CASE("forget --to gguf --imatrix writes llama-quantize's tensors and KVs", "[forget][gguf][ftype][imatrix]") {
  // llama-quantize --imatrix tiny.imatrix.gguf (README.md): the file name as given, the
  // matrix's first dataset, its 22 entries and 4 chunks.
  const std::string kvs = "quantize.imatrix.file=tiny.imatrix.gguf\nquantize.imatrix.dataset=tiny-calibration.txt\n"
                          "quantize.imatrix.entries_count=UINT32:22\nquantize.imatrix.chunks_count=UINT32:4\n";
  for (const char* scheme : {"IQ4_XS", "Q4_K_M", "IQ2_XS"}) {
    DYNAMIC_SECTION(scheme) {
      const auto want = read_file(fixture_path(std::string("gguf_ftype/tiny-imatrix-") + scheme + ".gguf"));
      const auto got = forget(R"({"to":"gguf","scheme":")" + std::string(scheme) + R"(","imatrix":"tiny.imatrix.gguf"})", kInput,
                              "gguf_ftype/tiny.imatrix.gguf");
      check_same_tensors(want, got);
      CHECK(got == want);
      CHECK(imatrix_kvs(want) == kvs);
      CHECK(imatrix_kvs(got) == kvs);
    }
  }
  SECTION("the legacy .dat form gives the same tensors") {
    const auto want = read_file(fixture_path("gguf_ftype/tiny-imatrix-IQ4_XS.gguf"));
    const auto got = forget(R"({"to":"gguf","scheme":"IQ4_XS","imatrix":"tiny.imatrix.dat"})", kInput, "gguf_ftype/tiny.imatrix.dat");
    check_same_tensors(want, got);
    // llama-quantize on the .dat wrote these KVs (README.md): only the file name differs.
    std::string dat_kvs = kvs;
    dat_kvs.replace(dat_kvs.find("tiny.imatrix.gguf"), 17, "tiny.imatrix.dat");
    CHECK(imatrix_kvs(got) == dat_kvs);
  }
  SECTION("an importance matrix changes the bytes") {  // else the cases above could pass without it
    const auto plain = tensors_of(read_file(fixture_path("gguf_ftype/tiny-IQ4_XS.gguf")));
    const auto with = tensors_of(read_file(fixture_path("gguf_ftype/tiny-imatrix-IQ4_XS.gguf")));
    CHECK(plain.at("blk.0.ffn_up.weight").bytes != with.at("blk.0.ffn_up.weight").bytes);
  }
}

TEST_CASE("forget --to gguf --include-weights / --exclude-weights select the matrix's entries as llama-quantize",
          "[forget][gguf][ftype][imatrix]") {
  // llama-quantize --imatrix tiny.imatrix.gguf with the options below (README.md): the
  // entries left are the only ones used, and entries_count counts them.
  struct Case {
    const char *fixture, *request, *entries;
  } cases[] = {
      {"tiny-imatrix-include-IQ4_XS.gguf", R"("scheme":"IQ4_XS","includeWeights":["attn_v","ffn_down"])", "6"},
      {"tiny-imatrix-exclude-Q4_K_M.gguf", R"("scheme":"Q4_K_M","excludeWeights":["attn_v","blk.1."])", "13"},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.fixture) {
      const auto want = read_file(fixture_path(std::string("gguf_ftype/") + c.fixture));
      const auto got = forget(std::string(R"({"to":"gguf","imatrix":"tiny.imatrix.gguf",)") + c.request + "}", kInput,
                              "gguf_ftype/tiny.imatrix.gguf");
      check_same_tensors(want, got);
      const std::string count = std::string("quantize.imatrix.entries_count=UINT32:") + c.entries + "\n";
      CHECK(imatrix_kvs(want).find(count) != std::string::npos);
      CHECK(imatrix_kvs(got) == imatrix_kvs(want));
    }
  }
  SECTION("the selection changes the bytes") {  // else the cases above could pass with every entry
    const auto all = tensors_of(read_file(fixture_path("gguf_ftype/tiny-imatrix-IQ4_XS.gguf")));
    const auto some = tensors_of(read_file(fixture_path("gguf_ftype/tiny-imatrix-include-IQ4_XS.gguf")));
    CHECK(all.at("blk.0.ffn_up.weight").bytes != some.at("blk.0.ffn_up.weight").bytes);
    CHECK(all.at("blk.0.attn_v.weight").bytes == some.at("blk.0.attn_v.weight").bytes);
  }
  SECTION("not both, and not without a matrix") {
    auto r = convert_request_from_json(R"({"to":"gguf","scheme":"Q4_K_M","imatrix":"m","includeWeights":["a"],"excludeWeights":["b"]})",
                                       Verb::forget, Surface::cli);
    REQUIRE(r);
    auto s = forget_settings(*r, Surface::cli);
    REQUIRE(!s);
    CHECK(s.error().message == "--include-weights and --exclude-weights cannot be used together (as in llama-quantize)");
    r = convert_request_from_json(R"({"to":"gguf","scheme":"Q4_K_M","excludeWeights":["b"]})", Verb::forget, Surface::api);
    REQUIRE(r);
    s = forget_settings(*r, Surface::api);
    REQUIRE(!s);
    CHECK(s.error().message == "excludeWeights needs imatrix");
  }
}

TEST_CASE("forget --to gguf --imatrix refuses what llama-quantize refuses", "[forget][gguf][ftype][imatrix]") {
  const auto file = read_file(fixture_path(kInput));
  auto planned = [&](const std::string& request, const std::vector<uint8_t>* imatrix) {
    Session s("");
    s.add_file("tiny.gguf", file.size());
    REQUIRE(feed(s, file, [&] { return s.parse(); }));
    if (imatrix) REQUIRE(s.set_imatrix(*imatrix));
    return s.plan_forget(request);
  };
  // IQ2_XS without a matrix: llama-quantize's "this quantization requires an importance matrix!"
  auto e = planned(R"({"to":"gguf","scheme":"IQ2_XS"})", nullptr);
  REQUIRE(!e);
  CHECK(e.error().code == ErrorCode::invalid_argument);
  CHECK(e.error().message.find("imatrix") != std::string::npos);
  // The name without the bytes.
  e = planned(R"({"to":"gguf","scheme":"IQ2_XS","imatrix":"x.dat"})", nullptr);
  REQUIRE(!e);
  // A matrix without entries for the layer weights: IQ2_XS bails out on the first one.
  std::vector<uint8_t> other = {1, 0, 0, 0, 3, 0, 0, 0, 'a', '.', 'b', 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0x80, 0x3f};
  e = planned(R"({"to":"gguf","scheme":"IQ2_XS","imatrix":"x.dat"})", &other);
  REQUIRE(!e);
  CHECK(e.error().message.find("missing importance matrix for tensor") != std::string::npos);
  // An entry of the wrong size.
  std::vector<uint8_t> wrong = {1, 0, 0, 0, 19, 0, 0, 0};
  for (char c : std::string("blk.0.ffn_up.weight")) wrong.push_back(static_cast<uint8_t>(c));
  for (uint8_t b : {1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0x80, 0x3f}) wrong.push_back(b);
  e = planned(R"({"to":"gguf","scheme":"Q4_K_M","imatrix":"x.dat"})", &wrong);
  REQUIRE(!e);
  CHECK(e.error().message == "imatrix size 1 is different from tensor size 256 for blk.0.ffn_up.weight");
  // A non-finite value (the same entry, its value NaN).
  std::vector<uint8_t> nan = wrong;
  nan[nan.size() - 2] = 0xc0;
  nan[nan.size() - 1] = 0x7f;
  e = planned(R"({"to":"gguf","scheme":"Q4_K_M","imatrix":"x.dat"})", &nan);
  REQUIRE(!e);
  CHECK(e.error().message.find("non-finite") != std::string::npos);
  // Not for safetensors output.
  e = planned(R"({"scheme":"nf4","imatrix":"x.dat"})", &other);
  REQUIRE(!e);
  CHECK(e.error().code == ErrorCode::invalid_argument);
}

TEST_CASE("forget --to gguf --allow-requantize goes through F32 as llama-quantize", "[forget][gguf][ftype][requantize]") {
  const std::string q4 = "gguf_ftype/tiny-Q4_K_M.gguf";
  const auto file = read_file(fixture_path(q4));
  Session s("");
  s.add_file("tiny.gguf", file.size());
  REQUIRE(feed(s, file, [&] { return s.parse(); }));
  // llama-quantize: "requantizing from type q4_K is disabled" (at token_embd.weight).
  auto e = s.plan_forget(R"({"to":"gguf","scheme":"Q3_K_M"})");
  REQUIRE(!e);
  CHECK(e.error().code == ErrorCode::invalid_argument);
  CHECK(e.error().message.find("requantizing from type") != std::string::npos);
  CHECK(e.error().message.find("--allow-requantize (npm: allowRequantize)") != std::string::npos);
  // With it: llama-quantize --allow-requantize's output, Q5_0 and Q6_K tensors it kept as they were included.
  check_same_tensors(read_file(fixture_path("gguf_ftype/tiny-Q4_K_M-requant-Q3_K_M.gguf")),
                     forget(R"({"to":"gguf","scheme":"Q3_K_M","allowRequantize":true})", q4));
}

namespace {

GgufFile header_of(const std::vector<uint8_t>& file);

// llama-quantize --prune-layers 1 against amn's: the same tensors, each of the same type,
// llama.block_count 2 in both, and the bytes of every tensor that keeps its name. The
// renumbered layer (old 2, now 1) is checked against `unpruned` (llama-quantize without
// the option): llama-quantize at the pinned commit loads a renumbered tensor's data by its
// new name (llama_model_loader::load_data_for), so its blk.1 holds the pruned layer 1's
// data (README.md); amn's holds layer 2's, which the unpruned file quantized alike.
void check_pruned(const std::vector<uint8_t>& want_file, const std::vector<uint8_t>& got_file, const std::vector<uint8_t>& unpruned_file) {
  const auto want = tensors_of(want_file), got = tensors_of(got_file), unpruned = tensors_of(unpruned_file);
  REQUIRE(got.size() == want.size());
  size_t renumbered = 0;
  for (const auto& [name, w] : want) {
    INFO(name);
    REQUIRE(got.count(name) == 1);
    CHECK(got.at(name).type == w.type);
    if (name.rfind("blk.1.", 0) != 0) {
      CHECK(got.at(name).bytes == w.bytes);
      continue;
    }
    const auto& old = unpruned.at("blk.2." + name.substr(6));
    if (old.type != w.type) continue;  // the type depends on the layer (use_more_bits)
    CHECK(got.at(name).bytes == old.bytes);
    ++renumbered;
  }
  CHECK(renumbered >= 6);
  for (const auto* file : {&want_file, &got_file}) {
    FileSet set;
    set.add("x.gguf", std::make_unique<MemorySource>(std::span<const uint8_t>(*file)));
    auto m = open_model(set, {});
    REQUIRE(m);
    const GgufValue* v = static_cast<const GgufState&>(*m->format_state).header.find("llama.block_count");
    REQUIRE(v);
    CHECK(v->as_uint().value_or(0) == 2);
  }
}

}  // namespace

TEST_CASE("forget --to gguf --prune-layers prunes and renumbers as llama-quantize", "[forget][gguf][ftype][prune]") {
  // llama-quantize --prune-layers 1 (README.md): layer 1 of 3 left out, layer 2 becomes 1.
  SECTION("Q4_K_M") {
    const auto want = read_file(fixture_path("gguf_ftype/tiny-Q4_K_M-prune-1.gguf"));
    const auto unpruned = read_file(fixture_path("gguf_ftype/tiny-Q4_K_M.gguf"));
    check_pruned(want, forget(R"({"to":"gguf","scheme":"Q4_K_M","pruneLayers":[1]})"), unpruned);
    // Why blk.1's bytes are not compared with llama-quantize's: they are the pruned layer's.
    CHECK(tensors_of(want).at("blk.1.ffn_up.weight").bytes == tensors_of(unpruned).at("blk.1.ffn_up.weight").bytes);
  }
  SECTION("IQ4_XS with an importance matrix: the renumbered layer takes its old layer's entries") {
    const auto want = read_file(fixture_path("gguf_ftype/tiny-imatrix-IQ4_XS-prune-1.gguf"));
    const auto got = forget(R"({"to":"gguf","scheme":"IQ4_XS","imatrix":"tiny.imatrix.gguf","pruneLayers":"1"})", kInput,
                            "gguf_ftype/tiny.imatrix.gguf");
    check_pruned(want, got, read_file(fixture_path("gguf_ftype/tiny-imatrix-IQ4_XS.gguf")));
    // The matrix's KVs count its entries before the pruning, as llama-quantize's do.
    CHECK(imatrix_kvs(got) == imatrix_kvs(want));
  }
  SECTION("per-layer arrays lose the pruned layers' elements (llama-quantize keeps them whole)") {
    // The input with a per-layer head_count_kv, written by amn convert.
    const auto f16 = read_file(fixture_path(kInput));
    Session c("");
    c.add_file("tiny.gguf", f16.size());
    REQUIRE(feed(c, f16, [&] { return c.parse(); }));
    REQUIRE(c.plan_convert(R"({"to":"gguf","ggufKv":["llama.attention.head_count_kv:ARRAY[UINT32]=[1,2,3]","llama.context_length=7"]})"));
    std::vector<uint8_t> input = c.output_header();
    for (size_t i = 0; i < c.piece_count(); ++i) {
      REQUIRE(feed(c, f16, [&] { return c.run_piece(i); }));
      input.insert(input.end(), c.piece_output().begin(), c.piece_output().end());
      c.release_data();
    }
    Session s("");
    s.add_file("layers.gguf", input.size());
    REQUIRE(feed(s, input, [&] { return s.parse(); }));
    REQUIRE(s.plan_forget(R"({"to":"gguf","scheme":"Q8_0","pruneLayers":[1]})"));
    const GgufFile out = header_of(amn::test::planned_output(s, input));
    const GgufValue* heads = out.find("llama.attention.head_count_kv");
    REQUIRE(heads);
    REQUIRE(heads->count == 2);
    CHECK(heads->uint_at(0) == 1);
    CHECK(heads->uint_at(1) == 3);
    CHECK(out.find("llama.block_count")->as_uint() == 2u);
    CHECK(out.find("llama.context_length")->as_uint() == 7u);  // not an array: as it was
  }
  SECTION("bad lists are refused") {
    const auto file = read_file(fixture_path(kInput));
    Session s("");
    s.add_file("tiny.gguf", file.size());
    REQUIRE(feed(s, file, [&] { return s.parse(); }));
    for (const char* bad : {R"("1,x")", R"("1,,2")", R"([-1])", R"([1.5])", R"("")", R"(true)"}) {
      INFO(bad);
      auto e = s.plan_forget(std::string(R"({"to":"gguf","scheme":"Q4_K_M","pruneLayers":)") + bad + "}");
      REQUIRE(!e);
      CHECK(e.error().code == ErrorCode::invalid_argument);
      CHECK(e.error().message.find("pruneLayers") != std::string::npos);
    }
    auto e = s.plan_forget(R"({"scheme":"nf4","pruneLayers":[1]})");
    REQUIRE(!e);
    CHECK(e.error().message.find("GGUF output") != std::string::npos);
  }
}

namespace {

// Runs `step` until it stops asking for bytes, feeding each range from files[r.file].
Status feed_files(Session& s, const std::vector<std::vector<uint8_t>>& files, const std::function<Status()>& step) {
  for (int round = 0; round < 8; ++round) {
    Status st = step();
    if (st || st.error().code != ErrorCode::need_bytes) return st;
    for (const auto& r : st.error().need_bytes) {
      SparseSource::Buffer b(static_cast<uint8_t*>(std::malloc(r.length)), [](uint8_t* p) { std::free(p); });
      std::memcpy(b.get(), files.at(r.file).data() + r.offset, r.length);
      REQUIRE(s.add_bytes(r.file, r.offset, std::move(b), r.length));
    }
  }
  return make_error(ErrorCode::internal, "too many rounds");
}

// One GGUF file's header alone (a split file opens as a model only with its set).
GgufFile header_of(const std::vector<uint8_t>& file) {
  FileSet set;
  set.add("x.gguf", std::make_unique<MemorySource>(std::span<const uint8_t>(file)));
  auto g = parse_gguf(set, 0, {});
  REQUIRE(g);
  return std::move(g).value();
}

// The split KVs of a GGUF, "key=TYPE:value" in file order.
std::string split_kvs(const GgufFile& g) {
  std::string out;
  for (const auto& [key, v] : g.kv) {
    if (key.rfind("split.", 0) != 0) continue;
    const int64_t n = v.type == GgufType::INT32 ? v.as_int().value_or(-1) : static_cast<int64_t>(v.as_uint().value_or(0));
    out += key + "=" + std::string(gguf_type_name(v.type)) + ":" + std::to_string(n) + "\n";
  }
  return out;
}

// Name -> (type, bytes) of one GGUF file's tensors, in file order.
std::vector<std::pair<std::string, std::pair<GgmlType, std::vector<uint8_t>>>> file_tensors(const std::vector<uint8_t>& file) {
  const GgufFile g = header_of(file);
  std::vector<std::pair<std::string, std::pair<GgmlType, std::vector<uint8_t>>>> out;
  for (const auto& t : g.tensors) {
    const auto begin = file.begin() + static_cast<std::ptrdiff_t>(g.data_offset + t.offset);
    out.push_back({t.name, {t.type, std::vector<uint8_t>(begin, begin + static_cast<std::ptrdiff_t>(t.nbytes))}});
  }
  return out;
}

}  // namespace

TEST_CASE("forget --to gguf --keep-split writes llama-quantize's split files", "[forget][gguf][ftype][split]") {
  // gguf-split cut the tied model into three files; llama-quantize --keep-split quantized
  // them into three (README.md): the same tensors in each, split.* in llama-quantize's order.
  std::vector<std::vector<uint8_t>> inputs;
  Session s("");
  for (int k = 1; k <= 3; ++k) {
    inputs.push_back(read_file(fixture_path("gguf_ftype/tiny-tied-split-0000" + std::to_string(k) + "-of-00003.gguf")));
    s.add_file("tiny-tied-split-0000" + std::to_string(k) + "-of-00003.gguf", inputs.back().size());
  }
  REQUIRE(feed_files(s, inputs, [&] { return s.parse(); }));
  REQUIRE(s.plan_forget(R"({"to":"gguf","scheme":"Q4_K_M","keepSplit":true,"output":"out"})", nullptr, "per_file"));
  for (size_t i = 0; i < s.prepare_count(); ++i) REQUIRE(feed_files(s, inputs, [&] { return s.run_prepare(i); }));
  REQUIRE(s.finish_prepared());
  simdjson::dom::parser parser;
  const std::string info = s.shards_info_json();
  simdjson::dom::array files;
  REQUIRE(!parser.parse(info).get_object()["files"].get_array().get(files));
  REQUIRE(files.size() == 3);
  for (size_t k = 0; k < 3; ++k) {
    std::string_view name;
    REQUIRE(!files.at(k)["name"].get_string().get(name));
    CHECK(name == "out-0000" + std::to_string(k + 1) + "-of-00003.gguf");
    REQUIRE(s.select_shard(k));
    std::vector<uint8_t> got = s.output_header();
    for (size_t i = 0; i < s.piece_count(); ++i) {
      REQUIRE(feed_files(s, inputs, [&] { return s.run_piece(i); }));
      got.insert(got.end(), s.piece_output().begin(), s.piece_output().end());
      s.release_data();
    }
    const auto want = read_file(fixture_path("gguf_ftype/tiny-tied-Q4_K_M-keep-split-0000" + std::to_string(k + 1) + "-of-00003.gguf"));
    INFO("file " << k + 1);
    // The same tensors in the same order (the input file's), of the same types and bytes.
    const auto w = file_tensors(want), g = file_tensors(got);
    REQUIRE(g.size() == w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      INFO(w[i].first);
      CHECK(g[i].first == w[i].first);
      CHECK(g[i].second.first == w[i].second.first);
      CHECK(g[i].second.second == w[i].second.second);
    }
    CHECK(split_kvs(header_of(got)) == split_kvs(header_of(want)));
    CHECK(got == want);  // the whole file, KVs and padding included
    CHECK(!split_kvs(header_of(got)).empty());
  }
}

TEST_CASE("forget --to gguf --imatrix weighs each expert of a 3-D weight with its own entry", "[forget][gguf][ftype][imatrix]") {
  // llama-quantize --imatrix tiny-moe.imatrix.gguf on a mixture of experts (README.md):
  // ffn_*_exps hold two experts, the matrix one row of weights per expert.
  const std::string input = "gguf_ftype/tiny_moe_f16.gguf";
  const auto want = read_file(fixture_path("gguf_ftype/tiny-moe-imatrix-Q4_K_M.gguf"));
  const auto got = forget(R"({"to":"gguf","scheme":"Q4_K_M","imatrix":"tiny-moe.imatrix.gguf"})", input,
                          "gguf_ftype/tiny-moe.imatrix.gguf");
  check_same_tensors(want, got);
  CHECK(got == want);
  // Else the case could pass without the experts' entries: without the matrix they differ.
  const auto plain = tensors_of(forget(R"({"to":"gguf","scheme":"Q4_K_M"})", input));
  CHECK(plain.at("blk.0.ffn_up_exps.weight").bytes != tensors_of(want).at("blk.0.ffn_up_exps.weight").bytes);
}
