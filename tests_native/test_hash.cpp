// amn hash (report/model_hash.h, core/digest.h): the FIPS 180-4 examples, and llama.cpp
// gguf-hash's own output on GGUF fixtures (fixtures/gguf/gguf_hash/README.md).
#include <catch2/catch.hpp>

#include <cstring>

#include "core/digest.h"
#include "report/model_hash.h"
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
