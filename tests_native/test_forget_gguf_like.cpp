// forget --to gguf --like G.gguf [--reuse-scales] through the session, sans-IO:
// remember(G) to F32, forgotten like G with its scales, is G again, tensor for tensor and
// byte for byte. G is (a) a GGUF holding every fixtures/ggml_quant block file (ggml's
// ggml_quantize_chunk output for every type, with and without an importance matrix), and
// (b) llama-quantize's own files in fixtures/gguf_ftype (their README), whose types mix.
// This binary also runs under qemu-aarch64 and in WASM (make test): the same bytes there.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include "formats/gguf/write.h"
#include "session/open.h"
#include "session/session.h"
#include "session_support.h"
#include "support.h"

using namespace amn;
using amn::test::feed;
using amn::test::fixture_path;
using amn::test::read_file;

namespace {

// Every fixtures/ggml_quant/<TYPE>[.imatrix].q as a [16, 256] weight, then a [256] F32 norm.
std::vector<uint8_t> every_type_gguf() {
  std::vector<GgufWriteTensor> tensors;
  std::vector<std::vector<uint8_t>> data;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(fixture_path("ggml_quant"))) {
    if (entry.path().extension() == ".q") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  for (const std::string& file : files) {
    const auto type = ggml_type_from_name(file.substr(0, file.find('.')));
    REQUIRE(type);
    data.push_back(read_file(fixture_path("ggml_quant/" + file)));
    tensors.push_back({"blk.0." + file.substr(0, file.size() - 2) + ".weight", *type, {256, 16}, data.back().size()});
  }
  REQUIRE(tensors.size() == 42);
  const auto input = read_file(fixture_path("ggml_quant/input.f32"));
  data.emplace_back(input.begin(), input.begin() + 1024);
  tensors.push_back({"blk.0.attn_norm.weight", GgmlType::F32, {256}, 1024});
  auto layout = gguf_layout({{"general.architecture", gguf_value_string("llama")}}, tensors);
  REQUIRE(layout);
  std::vector<uint8_t> out = layout->header;
  out.resize(out.size() + layout->data_bytes, 0);
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::memcpy(out.data() + layout->header.size() + layout->offsets[i], data[i].data(), data[i].size());
  }
  return out;
}

using amn::test::tensors_of;

void open_session(Session& s, const std::vector<uint8_t>& file, const std::string& name) {
  s.add_file(name, file.size());
  REQUIRE(feed(s, file, [&] { return s.parse(); }));
}

// remember(G) to F32, as `amn remember G --to gguf --dtype f32` writes it.
std::vector<uint8_t> remember_f32(const std::vector<uint8_t>& g) {
  Session r("");
  open_session(r, g, "g.gguf");
  REQUIRE(r.plan_convert(R"({"to":"gguf","dtype":"f32"})"));
  std::vector<uint8_t> out = r.output_header();
  for (size_t i = 0; i < r.piece_count(); ++i) {
    REQUIRE(feed(r, g, [&] { return r.run_piece(i); }));
    out.insert(out.end(), r.piece_output().begin(), r.piece_output().end());
    r.release_data();
  }
  return out;
}

// forget INPUT --to gguf --like G (the request's other options in `extra`).
Result<std::vector<uint8_t>> forget_like(const std::vector<uint8_t>& input, const std::vector<uint8_t>& g, const std::string& extra) {
  Session ref("");
  open_session(ref, g, "g.gguf");
  Session s("");
  open_session(s, input, "input.gguf");
  // The reference's blocks are read through its session (need_bytes names its file).
  Status planned = feed(ref, g, [&] { return s.plan_forget(R"({"to":"gguf","like":"g.gguf")" + extra + "}", &ref); });
  if (!planned) return planned.error();
  return amn::test::planned_output(s, input);
}

void check_same_tensors(const std::vector<uint8_t>& got_file, const std::vector<uint8_t>& want_file) {
  const auto got = tensors_of(got_file), want = tensors_of(want_file);
  REQUIRE(got.size() == want.size());
  for (const auto& [name, w] : want) {
    INFO(name << " (" << w.type << ")");
    REQUIRE(got.count(name));
    CHECK(got.at(name).type == w.type);
    CHECK(got.at(name).bytes == w.bytes);
  }
}

}  // namespace

TEST_CASE("forget --like G --reuse-scales of remember(G) is G, every ggml type", "[forget][gguf][like]") {
  const auto g = every_type_gguf();
  const auto input = remember_f32(g);
  for (const auto& [name, t] : tensors_of(input)) CHECK(t.type == "F32");
  auto out = forget_like(input, g, R"(,"reuseScales":true)");
  REQUIRE(out);
  check_same_tensors(*out, g);
}

TEST_CASE("forget --like G --reuse-scales of remember(G) is G, llama-quantize's files", "[forget][gguf][like]") {
  for (const char* file : {"tiny-Q4_K_M.gguf", "tiny-Q3_K_M.gguf", "tiny-Q5_K_M.gguf", "tiny-Q6_K.gguf", "tiny-Q8_0.gguf",
                           "tiny-IQ4_XS.gguf", "tiny-imatrix-IQ2_XS.gguf", "tiny-Q4_K_M-embd_q8_0-out_q5_k.gguf"}) {
    INFO(file);
    const auto g = read_file(fixture_path(std::string("gguf_ftype/") + file));
    auto out = forget_like(remember_f32(g), g, R"(,"reuseScales":true)");
    REQUIRE(out);
    check_same_tensors(*out, g);
  }
}

TEST_CASE("forget --like G gives every tensor G's type, quantized afresh", "[forget][gguf][like]") {
  // Without --reuse-scales: G's types, the encoders' own blocks for the values. The input
  // here is what remember made of G, so F32 tensors come back as they were.
  const auto g = read_file(fixture_path("gguf_ftype/tiny-Q4_K_M.gguf"));
  const auto input = remember_f32(g);
  auto out = forget_like(input, g, "");
  REQUIRE(out);
  const auto got = tensors_of(*out), want = tensors_of(g);
  for (const auto& [name, w] : want) {
    INFO(name);
    CHECK(got.at(name).type == w.type);
    if (w.type == "F32") CHECK(got.at(name).bytes == w.bytes);
  }
}

TEST_CASE("forget --like a GGUF refuses what does not fit", "[forget][gguf][like]") {
  const auto g = read_file(fixture_path("gguf_ftype/tiny-Q4_K_M.gguf"));
  const auto input = remember_f32(g);
  // A shape that differs: the every-type G's names are not in the tiny model, and the
  // tiny model's are not in it.
  auto e = forget_like(input, every_type_gguf(), R"(,"reuseScales":true)");
  REQUIRE(!e);
  CHECK(e.error().code == ErrorCode::invalid_argument);
  CHECK(e.error().message.find("which the input lacks") != std::string::npos);
  // G names the types: no --scheme, no llama-quantize choices, GGUF output only.
  e = forget_like(input, g, R"(,"scheme":"Q4_K")");
  REQUIRE(!e);
  CHECK(e.error().message.find("leave out --scheme") != std::string::npos);
  e = forget_like(input, g, R"(,"pure":true)");
  REQUIRE(!e);
  CHECK(e.error().code == ErrorCode::invalid_argument);
  Session ref("");
  open_session(ref, g, "g.gguf");
  Session s("");
  open_session(s, input, "input.gguf");
  Status st = feed(ref, g, [&] { return s.plan_forget(R"({"like":"g.gguf"})", &ref); });
  REQUIRE(!st);
  CHECK(st.error().code == ErrorCode::invalid_argument);
  CHECK(st.error().message.find("writes GGUF") != std::string::npos);
}

TEST_CASE("forget --like a GGUF: a tensor whose shape differs is refused", "[forget][gguf][like]") {
  // G with one tensor [16, 256]; the input has it as [32, 128].
  const auto x = read_file(fixture_path("ggml_quant/Q8_0.q"));
  std::vector<GgufWriteTensor> gt = {{"w.weight", GgmlType::Q8_0, {256, 16}, x.size()}};
  auto gl = gguf_layout({}, gt);
  REQUIRE(gl);
  std::vector<uint8_t> g = gl->header;
  g.insert(g.end(), x.begin(), x.end());
  const auto f = read_file(fixture_path("ggml_quant/input.f32"));
  std::vector<GgufWriteTensor> it = {{"w.weight", GgmlType::F32, {128, 32}, f.size()}};
  auto il = gguf_layout({}, it);
  REQUIRE(il);
  std::vector<uint8_t> input = il->header;
  input.insert(input.end(), f.begin(), f.end());
  auto e = forget_like(input, g, R"(,"reuseScales":true)");
  REQUIRE(!e);
  CHECK(e.error().code == ErrorCode::invalid_argument);
  CHECK(e.error().message == "--like: 'w.weight' is [32, 128] in the input, [16, 256] in the reference");
}
