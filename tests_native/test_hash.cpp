// amn hash (report/model_hash.h, core/digest.h): the FIPS 180-4 examples, and llama.cpp
// gguf-hash's own output on GGUF fixtures (fixtures/gguf/gguf_hash/README.md).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <map>

#include "core/digest.h"
#include "report/model_hash.h"
#include "report/value_stats.h"
#include "session/open.h"
#include "support.h"

using namespace amn;
using namespace amn::test;

namespace {

std::span<const uint8_t> text(const char* s) { return {reinterpret_cast<const uint8_t*>(s), std::strlen(s)}; }

Result<ModelHash> hash_file(const std::string& rel, const std::string& name) {
  const auto bytes = read_file(fixture_path(rel));
  FileSet files;
  files.add(name, std::make_unique<MemorySource>(bytes));
  AMN_ASSIGN(auto model, open_model(files, ParseLimits{}));
  return model_hash(model, files);
}

std::string read_text(const std::string& rel) {
  const auto b = read_file(fixture_path(rel));
  return std::string(b.begin(), b.end());
}

}  // namespace

TEST_CASE("digests: the FIPS 180-4 examples, across chunk boundaries") {
  const char* abc = "abc";
  const char* two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  Sha256 a;
  a.update(text(abc));
  CHECK(hex(a.finish()) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha1 b;
  b.update(text(abc));
  CHECK(hex(b.finish()) == "a9993e364706816aba3e25717850c26c9cd0d89d");
  // The two-block message fed one byte at a time: the buffer's carry-over.
  Sha256 c;
  Sha1 d;
  for (const char* p = two; *p; ++p) {
    c.update(text(std::string(1, *p).c_str()));
    d.update(text(std::string(1, *p).c_str()));
  }
  CHECK(hex(c.finish()) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(hex(d.finish()) == "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  Xxh64 e;  // xxhsum -H64 of an empty input
  CHECK(hex64(e.finish()) == "ef46db3751d8e999");
}

TEST_CASE("hash: llama.cpp gguf-hash --all --uuid's very lines on its GGUF fixtures") {
  for (const char* stem : {"ggml_blocks", "tensor_types"}) {
    const std::string name = std::string(stem) + ".gguf";
    auto h = hash_file("gguf/valid/" + name, name);
    REQUIRE(h);
    CHECK(render_gguf_hash(*h, name) == read_text("gguf/gguf_hash/" + std::string(stem) + ".all_uuid.txt"));
  }
  // Its default (xxh64 only) lines are the same digests.
  auto h = hash_file("gguf/valid/ggml_blocks.gguf", "ggml_blocks.gguf");
  REQUIRE(h);
  const std::string expected = read_text("gguf/gguf_hash/ggml_blocks.default.txt");
  for (const auto& t : h->tensors) CHECK(expected.find(t.xxh64 + "  ggml_blocks.gguf:" + t.name + "\n") != std::string::npos);
}

TEST_CASE("hash: per tensor over the stored bytes; the model over all of them in order") {
  std::vector<uint8_t> data(24);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  const auto file = make_safetensors(
      R"({"a":{"dtype":"U8","shape":[16],"data_offsets":[0,16]},"b":{"dtype":"U8","shape":[8],"data_offsets":[16,24]},)"
      R"("e":{"dtype":"U8","shape":[0],"data_offsets":[24,24]}})",
      data);
  FileSet files;
  files.add("m.safetensors", std::make_unique<MemorySource>(file));
  auto model = open_model(files, ParseLimits{});
  REQUIRE(model);
  auto h = model_hash(*model, files);
  REQUIRE(h);
  REQUIRE(h->tensors.size() == 3);
  CHECK(h->tensors[0].sha256 == sha256_hex(std::span(data).first(16)));
  CHECK(h->tensors[1].sha256 == sha256_hex(std::span(data).subspan(16)));
  CHECK(h->tensors[2].sha256 == sha256_hex({}));
  CHECK(h->model.sha256 == sha256_hex(data));
  CHECK(h->model.bytes == 24);
  CHECK(hash_json(*h).find(R"("model":{"tensors":3,"bytes":24,)") != std::string::npos);
}

namespace {

Result<ModelHash> hash_values(const std::string& rel, const std::string& name) {
  const auto bytes = read_file(fixture_path(rel));
  FileSet files;
  files.add(name, std::make_unique<MemorySource>(bytes));
  AMN_ASSIGN(auto model, open_model(files, ParseLimits{}));
  return model_hash(model, files, HashOf::values);
}

}  // namespace

TEST_CASE("hash --dequantized: ggml's own to_float output of every block type (fixtures/ggml)") {
  // ggml_blocks.gguf holds ggml's quantized fixtures/ggml/<TYPE>.q as blk.<type>; their
  // values are ggml's <TYPE>.f32, whose SHA-256 the manifest records.
  simdjson::dom::parser parser;
  const auto manifest = parser.load(fixture_path("ggml/manifest.json"));
  std::map<std::string, std::string> f32_sha256, f32_file;
  for (auto t : jv(manifest["types"].get_array())) {
    if (jv(t["random"].get_bool())) continue;
    const std::string name = "blk." + lower(std::string(jv(t["name"].get_string())));
    f32_sha256[name] = std::string(jv(t["f32_sha256"].get_string()));
    f32_file[name] = std::string(jv(t["f32"].get_string()));
  }
  auto h = hash_values("gguf/valid/ggml_blocks.gguf", "ggml_blocks.gguf");
  REQUIRE(h);
  CHECK(h->of == HashOf::values);
  REQUIRE(!h->tensors.empty());
  std::vector<uint8_t> all;  // the model's bytes: every tensor's F32 values in file order
  for (const auto& t : h->tensors) {
    INFO(t.name);
    REQUIRE(f32_sha256.count(t.name));
    CHECK(t.sha256 == f32_sha256[t.name]);
    const auto f32 = read_file(fixture_path("ggml/" + f32_file[t.name]));
    CHECK(t.bytes == f32.size());
    all.insert(all.end(), f32.begin(), f32.end());
  }
  CHECK(h->model.sha256 == sha256_hex(all));
  CHECK(h->model.bytes == all.size());
  CHECK(hash_json(*h).rfind(R"({"dequantized":true,)", 0) == 0);
}

TEST_CASE("hash --dequantized: Q8_0, Q4_0 and F32 storage of the same values hash the same") {
  simdjson::dom::parser parser;
  const auto expected = parser.load(fixture_path("gguf/same_values/expected.json"));
  std::vector<std::string> stored;
  for (const char* name : {"q8_0.gguf", "q4_0.gguf", "f32.gguf"}) {
    INFO(name);
    auto h = hash_values("gguf/same_values/" + std::string(name), name);
    REQUIRE(h);
    size_t i = 0;
    for (auto t : jv(expected["tensors"].get_array())) {
      REQUIRE(i < h->tensors.size());
      CHECK(h->tensors[i].name == std::string(jv(t["name"].get_string())));
      CHECK(h->tensors[i].sha256 == std::string(jv(t["sha256"].get_string())));
      CHECK(h->tensors[i].bytes == jv(t["bytes"].get_uint64()));
      ++i;
    }
    CHECK(i == h->tensors.size());
    CHECK(h->model.sha256 == std::string(jv(expected["model"]["sha256"].get_string())));
    CHECK(h->model.bytes == jv(expected["model"]["bytes"].get_uint64()));
    auto raw = hash_file("gguf/same_values/" + std::string(name), name);
    REQUIRE(raw);
    stored.push_back(raw->tensors.at(0).sha256);
  }
  // The stored bytes of w differ in each file: the plain hash tells them apart.
  CHECK(stored[0] != stored[1]);
  CHECK(stored[1] != stored[2]);
  CHECK(stored[0] != stored[2]);
}

TEST_CASE("hash --dequantized: a quantized safetensors weight is one tensor, its parts consumed") {
  // GPTQ (fixtures/quantized/gptq/w4_g128_sym_v1): qweight, qzeros, scales and g_idx hash as
  // the one logical weight, over the F32 bytes tensor(name, {to: 'f32'}) gives.
  const std::string dir = fixture_path("quantized/gptq/w4_g128_sym_v1/");
  const auto model_bytes = read_file(dir + "model.safetensors");
  const auto config_bytes = read_file(dir + "config.json");
  FileSet files;
  files.add("model.safetensors", std::make_unique<MemorySource>(model_bytes));
  files.add("config.json", std::make_unique<MemorySource>(config_bytes));
  auto model = open_model(files, {});
  REQUIRE(model);
  REQUIRE(model->logical.size() == 1);
  const std::string weight = model->logical[0].name;
  auto h = model_hash(*model, files, HashOf::values);
  REQUIRE(h);
  std::vector<std::string> names;
  for (const auto& t : h->tensors) names.push_back(t.name);
  CHECK(names == stats_tensor_names(*model));
  CHECK(std::count(names.begin(), names.end(), weight) == 1);
  for (const auto& t : model->logical[0].parts) {
    CHECK(std::count(names.begin(), names.end(), model->tensors[t.second].name) == 0);
  }
  auto plan = plan_tensor(*model, weight, DType::F32);
  REQUIRE(plan);
  VecSink sink;
  REQUIRE(execute_plan(*plan, files, sink));
  const auto& w = h->tensors[static_cast<size_t>(std::find(names.begin(), names.end(), weight) - names.begin())];
  CHECK(w.bytes == sink.bytes.size());
  CHECK(w.sha256 == sha256_hex(sink.bytes));
}
