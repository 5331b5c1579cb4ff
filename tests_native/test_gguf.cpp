// GGUF container: the broken fixtures (one defect each), the valid fixtures against
// gguf-py's reading of them, the type table, truncation at every byte, the sans-IO
// read-ahead on a large tokenizer header, and the limits.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>

#include <catch2/catch.hpp>
#include <simdjson.h>

#include "core/ggml_type.h"
#include "formats/gguf/parse.h"
#include "support.h"

using namespace amn;
using amn::test::jv;
using amn::test::lower;

namespace {

// The remote path: a SparseSource fed exactly the ranges parse_gguf asks for.
auto parse_sparse(const std::vector<uint8_t>& bytes, const ParseLimits& limits = {}) {
  return test::feed_sparse(bytes, "model.gguf", [&](FileSet& set) { return parse_gguf(set, 0, limits); });
}

Result<GgufFile> parse_memory(const std::vector<uint8_t>& bytes, const ParseLimits& limits = {}) {
  FileSet set;
  set.add("model.gguf", std::make_unique<MemorySource>(bytes));
  return parse_gguf(set, 0, limits);
}


// A little-endian GGUF writer for tests (the fixtures come from gguf-py).
struct Builder {
  std::vector<uint8_t> kv, ti, data;
  uint64_t n_kv = 0, n_tensors = 0;
  static void put(std::vector<uint8_t>& out, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  static void put_str(std::vector<uint8_t>& out, std::string_view s) {
    put(out, s.size(), 8);
    out.insert(out.end(), s.begin(), s.end());
  }
  void key(std::string_view k, GgufType t) {
    put_str(kv, k);
    put(kv, static_cast<uint32_t>(t), 4);
    ++n_kv;
  }
  void u32(std::string_view k, uint32_t v) { key(k, GgufType::UINT32); put(kv, v, 4); }
  void strings(std::string_view k, const std::vector<std::string>& v) {
    key(k, GgufType::ARRAY);
    put(kv, static_cast<uint32_t>(GgufType::STRING), 4);
    put(kv, v.size(), 8);
    for (const auto& s : v) put_str(kv, s);
  }
  void floats(std::string_view k, uint64_t n) {
    key(k, GgufType::ARRAY);
    put(kv, static_cast<uint32_t>(GgufType::FLOAT32), 4);
    put(kv, n, 8);
    for (uint64_t i = 0; i < n; ++i) put(kv, 0x3f800000u, 4);
  }
  void tensor(std::string_view name, std::vector<uint64_t> ne, uint32_t type, uint64_t nbytes) {
    put_str(ti, name);
    put(ti, ne.size(), 4);
    for (auto d : ne) put(ti, d, 8);
    put(ti, type, 4);
    put(ti, data.size(), 8);
    data.resize(data.size() + nbytes, 0x11);
    data.resize((data.size() + 31) / 32 * 32, 0);
    ++n_tensors;
  }
  std::vector<uint8_t> build(uint64_t* header = nullptr) const {
    std::vector<uint8_t> out = {'G', 'G', 'U', 'F'};
    put(out, 3, 4);
    put(out, n_tensors, 8);
    put(out, n_kv, 8);
    out.insert(out.end(), kv.begin(), kv.end());
    out.insert(out.end(), ti.begin(), ti.end());
    out.resize((out.size() + 31) / 32 * 32, 0);
    if (header) *header = out.size();
    out.insert(out.end(), data.begin(), data.end());
    return out;
  }
};

GgufType type_from_name(std::string_view name) {
  for (uint32_t t = 0; t < kGgufTypeCount; ++t) {
    if (gguf_type_name(static_cast<GgufType>(t)) == name) return static_cast<GgufType>(t);
  }
  FAIL("unknown type name " << name);
  return GgufType::UINT8;
}

bool is_unsigned(GgufType t) {
  return t == GgufType::UINT8 || t == GgufType::UINT16 || t == GgufType::UINT32 || t == GgufType::UINT64;
}
bool is_signed(GgufType t) {
  return t == GgufType::INT8 || t == GgufType::INT16 || t == GgufType::INT32 || t == GgufType::INT64;
}
bool is_float(GgufType t) { return t == GgufType::FLOAT32 || t == GgufType::FLOAT64; }

void check_scalar(GgufType t, const GgufValue& v, simdjson::dom::element e) {
  CHECK(v.type == t);
  if (is_unsigned(t)) CHECK(v.u == jv(e.get_uint64()));
  else if (is_signed(t)) CHECK(v.i == jv(e.get_int64()));
  else if (is_float(t)) CHECK(v.f == jv(e.get_double()));
  else if (t == GgufType::BOOL) CHECK(v.b == jv(e.get_bool()));
  else if (t == GgufType::STRING) CHECK(v.str == jv(e.get_string()));
}

void check_array(const GgufValue& v, simdjson::dom::array expected, GgufType leaf) {
  REQUIRE(v.count == expected.size());
  uint64_t i = 0;
  for (auto e : expected) {
    INFO("element " << i);
    switch (v.elem_type) {
      case GgufType::ARRAY: check_array(v.items[i], jv(e.get_array()), leaf); break;
      case GgufType::STRING: CHECK(v.string_at(i) == jv(e.get_string())); break;
      case GgufType::BOOL: CHECK(v.bool_at(i) == jv(e.get_bool())); break;
      default:
        if (is_unsigned(v.elem_type)) CHECK(v.uint_at(i) == jv(e.get_uint64()));
        else if (is_signed(v.elem_type)) CHECK(v.int_at(i) == jv(e.get_int64()));
        else CHECK(v.float_at(i) == jv(e.get_double()));
    }
    ++i;
  }
  if (v.elem_type != GgufType::ARRAY) CHECK(v.elem_type == leaf);
}

}  // namespace

TEST_CASE("the ggml type table matches ggml's type_traits", "[gguf]") {
  const auto info = [](uint32_t id) { return ggml_traits(static_cast<GgmlType>(id)); };
  for (uint32_t id = 0; id < kGgmlTypeCount; ++id) {
    const auto* t = info(id);
    REQUIRE(t);
    CHECK(ggml_id(t->type) == id);
  }
  CHECK(info(kGgmlTypeCount) == nullptr);
  CHECK(info(0xFFFFFFFF) == nullptr);
  CHECK(ggml_traits(kNoGgmlType) == nullptr);
  for (uint32_t removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u}) CHECK_FALSE(ggml_type_sized(info(removed)));
  const auto* q4k = info(12);
  CHECK(q4k->name == "Q4_K");
  CHECK(q4k->block_elements == 256);
  CHECK(q4k->block_bytes == 144);
  CHECK(info(8)->block_bytes == 34);       // Q8_0
  CHECK(info(30)->name == "BF16");
  CHECK(info(39)->block_bytes == 17);      // MXFP4
  CHECK(ggml_nbytes(*info(2), 64) == std::optional<uint64_t>(36));
  CHECK_FALSE(ggml_nbytes(*info(2), 33));
  // The plain types are their DTypes, both ways.
  CHECK(info(30)->dtype == DType::BF16);
  CHECK(ggml_type_of(DType::BF16) == GgmlType::BF16);
  CHECK(ggml_type_of(DType::I64) == GgmlType::I64);
  CHECK_FALSE(ggml_type_of(DType::U8));
  CHECK_FALSE(info(12)->dtype);
  // Big-endian layouts: the types gguf-py's converter swaps, and which F16 fields.
  CHECK(ggml_big_endian_f16_fields(GgmlType::Q4_K)->size() == 2);
  CHECK((*ggml_big_endian_f16_fields(GgmlType::Q6_K))[0] == 208);
  CHECK(ggml_big_endian_f16_fields(GgmlType::MXFP4)->empty());
  CHECK_FALSE(ggml_big_endian_f16_fields(GgmlType::Q4_1));
  CHECK_FALSE(ggml_big_endian_f16_fields(static_cast<GgmlType>(57)));
}

TEST_CASE("split file names are recognised", "[gguf]") {
  auto s = gguf_split_name("Llama-3-8B-Q4_K_M-00002-of-00005.gguf");
  REQUIRE(s);
  CHECK(s->prefix == "Llama-3-8B-Q4_K_M");
  CHECK(s->no == 2);
  CHECK(s->count == 5);
  CHECK_FALSE(gguf_split_name("model.gguf"));
  CHECK_FALSE(gguf_split_name("x-00000-of-00003.gguf"));
  CHECK_FALSE(gguf_split_name("x-00004-of-00003.gguf"));
  CHECK_FALSE(gguf_split_name("x-0001a-of-00003.gguf"));
  CHECK(looks_like_gguf(std::vector<uint8_t>{'G', 'G', 'U', 'F', 3}));
  CHECK_FALSE(looks_like_gguf(std::vector<uint8_t>{'G', 'G', 'U'}));
}

TEST_CASE("every broken GGUF fixture is rejected with its specific error", "[gguf][fixtures]") {
  const auto manifest = test::read_file(test::fixture_path("gguf/broken/manifest.json"));
  REQUIRE(!manifest.empty());
  simdjson::dom::parser parser;
  simdjson::dom::array entries;
  REQUIRE(!parser.parse(reinterpret_cast<const char*>(manifest.data()), manifest.size()).get_array().get(entries));
  size_t count = 0;
  std::vector<std::string> messages;
  for (auto e : entries) {
    std::string_view file, code, contains;
    REQUIRE(!e["file"].get_string().get(file));
    REQUIRE(!e["code"].get_string().get(code));
    REQUIRE(!e["contains"].get_string().get(contains));
    INFO(file);
    const auto bytes = test::read_file(test::fixture_path("gguf/broken/" + std::string(file)));
    auto m = parse_memory(bytes);
    REQUIRE_FALSE(m);
    CHECK(error_code_name(m.error().code) == code);
    CHECK_THAT(lower(m.error().message), Catch::Contains(lower(std::string(contains))));
    // The remote path reaches the same verdict.
    auto s = parse_sparse(bytes);
    REQUIRE_FALSE(s.result);
    CHECK(s.result.error().message == m.error().message);
    messages.push_back(m.error().message);
    ++count;
  }
  CHECK(count >= 40);
  std::sort(messages.begin(), messages.end());
  CHECK(std::adjacent_find(messages.begin(), messages.end()) == messages.end());  // each its own message
}

TEST_CASE("every valid GGUF fixture parses to what gguf-py read", "[gguf][fixtures]") {
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::fixture_path("gguf/expected"))) {
    const auto text = test::read_file(entry.path().string());
    simdjson::dom::parser parser;
    simdjson::dom::element expected;
    REQUIRE(!parser.parse(reinterpret_cast<const char*>(text.data()), text.size()).get(expected));
    std::string_view file;
    REQUIRE(!expected["file"].get_string().get(file));
    INFO(file);
    const auto bytes = test::read_file(test::fixture_path("gguf/" + std::string(file)));
    auto g = parse_memory(bytes);
    REQUIRE(g);
    CHECK(g->version == jv(expected["version"].get_uint64()));
    CHECK(g->big_endian == jv(expected["big_endian"].get_bool()));
    CHECK(g->alignment == jv(expected["alignment"].get_uint64()));
    CHECK(g->data_offset == jv(expected["data_offset"].get_uint64()));
    simdjson::dom::array kvs = jv(expected["kv"].get_array());
    REQUIRE(g->kv.size() == kvs.size());
    size_t i = 0;
    for (auto kv : kvs) {
      const auto& [key, value] = g->kv[i++];
      INFO(key);
      CHECK(key == jv(kv["key"].get_string()));
      const GgufType type = type_from_name(jv(kv["type"].get_string()));
      if (type == GgufType::ARRAY) {
        CHECK(value.type == GgufType::ARRAY);
        CHECK(value.elem_type == type_from_name(jv(kv["elem_type"].get_string())));
        std::string_view leaf;
        if (kv["nested_elem_type"].get_string().get(leaf)) leaf = jv(kv["elem_type"].get_string());
        check_array(value, jv(kv["value"].get_array()), type_from_name(leaf));
      } else {
        check_scalar(type, value, jv(kv["value"]));
      }
    }
    simdjson::dom::array tensors = jv(expected["tensors"].get_array());
    REQUIRE(g->tensors.size() == tensors.size());
    i = 0;
    for (auto t : tensors) {
      const auto& got = g->tensors[i++];
      INFO(got.name);
      CHECK(got.name == jv(t["name"].get_string()));
      CHECK(ggml_id(got.type) == jv(t["type"].get_uint64()));
      std::vector<uint64_t> ne;
      for (auto d : jv(t["ne"].get_array())) ne.push_back(jv(d.get_uint64()));
      CHECK(got.ne == ne);
      CHECK(got.offset == jv(t["offset"].get_uint64()));
      CHECK(got.size_known);
      CHECK(got.nbytes == jv(t["nbytes"].get_uint64()));
      bool from_offsets = false;
      if (t["size_from_offsets"].get_bool().get(from_offsets)) from_offsets = false;
      CHECK(got.size_from_offsets == from_offsets);
    }
    // The remote path yields the same file.
    auto s = parse_sparse(bytes);
    REQUIRE(s.result);
    CHECK(s.rounds <= 2);
    CHECK(s.result->tensors.size() == g->tensors.size());
    CHECK(s.result->kv.size() == g->kv.size());
    ++files;
  }
  CHECK(files >= 10);
}

TEST_CASE("a big-endian GGUF reads the same values as its little-endian twin", "[gguf]") {
  auto be = parse_memory(test::read_file(test::fixture_path("gguf/valid/big_endian.gguf")));
  auto le = parse_memory(test::read_file(test::fixture_path("gguf/valid/all_kv_types.gguf")));
  REQUIRE(be);
  REQUIRE(le);
  CHECK(be->big_endian);
  CHECK_FALSE(le->big_endian);
  REQUIRE(be->kv.size() == le->kv.size());
  for (size_t i = 0; i < be->kv.size(); ++i) {
    const auto& a = be->kv[i].second;
    const auto& b = le->kv[i].second;
    INFO(be->kv[i].first);
    CHECK(a.type == b.type);
    CHECK(a.u == b.u);
    CHECK(a.i == b.i);
    CHECK(a.str == b.str);
    CHECK(a.raw == b.raw);  // arrays are kept little-endian whatever the file's order
    CHECK(a.arena == b.arena);
    CHECK(a.count == b.count);
  }
  const GgufValue* f = le->find("test.float64");
  REQUIRE(f);
  CHECK(f->f == -2.5e-300);
  const GgufValue* n = le->find("test.nested4");
  REQUIRE(n);
  CHECK(n->items[0].items[1].items[0].int_at(0) == 9);
}

TEST_CASE("split shards report split.no, split.count and split.tensors.count", "[gguf]") {
  for (uint32_t k = 1; k <= 3; ++k) {
    const std::string name = "tiny-0000" + std::to_string(k) + "-of-00003.gguf";
    auto g = parse_memory(test::read_file(test::fixture_path("gguf/valid/" + name)));
    REQUIRE(g);
    REQUIRE(g->split);
    CHECK(g->split->no == k - 1);
    CHECK(g->split->count == 3);
    CHECK(g->split->tensors_count == 3);
    CHECK(g->tensors.size() == 1);
    auto n = gguf_split_name(name);
    REQUIRE(n);
    CHECK(n->no == k);
  }
  auto plain = parse_memory(test::read_file(test::fixture_path("gguf/valid/tensor_types.gguf")));
  REQUIRE(plain);
  CHECK_FALSE(plain->split);
}

TEST_CASE("unknown tensor types are listed with sizes from the offsets", "[gguf]") {
  auto g = parse_memory(test::read_file(test::fixture_path("gguf/valid/unknown_type.gguf")));
  REQUIRE(g);
  REQUIRE(g->tensors.size() == 4);
  CHECK(ggml_id(g->tensors[1].type) == 99);
  CHECK(g->tensors[1].size_from_offsets);
  CHECK(g->tensors[1].nbytes == 64);  // 15 floats, padded to 32
  CHECK(g->tensors[2].type == GgmlType::Q4_0_4_4);
  CHECK(g->tensors[2].size_from_offsets);
  CHECK_FALSE(g->tensors[0].size_from_offsets);
  CHECK(g->warnings.size() == 2);
}

TEST_CASE("a file cut at any byte is rejected, never crashes", "[gguf]") {
  for (const char* name : {"valid/tensor_types.gguf", "valid/big_endian.gguf", "valid/all_kv_types.gguf"}) {
    const auto full = test::read_file(test::fixture_path(std::string("gguf/") + name));
    INFO(name);
    auto whole = parse_memory(full);
    REQUIRE(whole);
    uint64_t end = whole->data_offset;  // what follows the last tensor is padding
    for (const auto& t : whole->tensors) end = std::max(end, whole->data_offset + t.offset + t.nbytes);
    for (size_t n = 0; n < end; ++n) {
      std::vector<uint8_t> cut(full.begin(), full.begin() + n);
      auto g = parse_memory(cut);
      INFO("cut at " << n);
      REQUIRE_FALSE(g);
      CHECK(g.error().code == ErrorCode::parse);
    }
  }
}

TEST_CASE("a 150,000-entry tokenizer header is fetched in few rounds", "[gguf][remote]") {
  Builder b;
  b.u32("general.alignment", 32);
  std::vector<std::string> tokens;
  tokens.reserve(150000);
  for (int i = 0; i < 150000; ++i) tokens.push_back("tok_" + std::to_string(i * 7919 % 1000003));
  b.strings("tokenizer.ggml.tokens", tokens);
  b.floats("tokenizer.ggml.scores", 150000);
  for (int i = 0; i < 8; ++i) b.tensor("blk." + std::to_string(i) + ".weight", {256, 1024}, 0, 256 * 1024 * 4);
  uint64_t header = 0;
  const auto bytes = b.build(&header);
  REQUIRE(header > 2'000'000);
  auto s = parse_sparse(bytes);
  REQUIRE(s.result);
  INFO("header " << header << " bytes, fed " << s.bytes_fed << " in " << s.rounds << " rounds");
  CHECK(s.rounds <= 4);
  CHECK(s.bytes_fed <= header + header / 2 + (1u << 20));
  CHECK(s.result->data_offset == header);
  const GgufValue* t = s.result->find("tokenizer.ggml.tokens");
  REQUIRE(t);
  CHECK(t->count == 150000);
  CHECK(t->string_at(149999) == tokens[149999]);
  CHECK(s.result->tensors.size() == 8);

  // The same with only the tokens (the shape in the issue), and a header just past the
  // first window.
  Builder small;
  std::vector<std::string> few(70000, "abcdefgh");
  small.strings("tokenizer.ggml.tokens", few);
  small.tensor("w", {1024, 1024}, 0, 4 << 20);
  const auto bytes2 = small.build(&header);
  auto s2 = parse_sparse(bytes2);
  REQUIRE(s2.result);
  // 64 KiB, then 1 MiB (over HTTP both come from the first request: kGgufFirstRequest),
  // then the projection: two requests.
  INFO("header " << header << " bytes, fed " << s2.bytes_fed << " in " << s2.rounds << " rounds");
  CHECK(s2.rounds <= 4);
  CHECK(s2.bytes_fed <= header + header / 2 + (1u << 20));
}

TEST_CASE("GGUF limits hold before anything is allocated", "[gguf][limits]") {
  Builder b;
  std::vector<std::string> tokens(1000, "0123456789");
  b.strings("tokenizer.ggml.tokens", tokens);
  const auto bytes = b.build();
  ParseLimits tight;
  tight.max_total_bytes = 4000;
  auto g = parse_memory(bytes, tight);
  REQUIRE_FALSE(g);
  CHECK(g.error().code == ErrorCode::limit);
  CHECK_THAT(g.error().message, Catch::Contains("max_total_bytes"));
  ParseLimits few;
  few.max_item_count = 999;
  g = parse_memory(bytes, few);
  REQUIRE_FALSE(g);
  CHECK(g.error().code == ErrorCode::limit);
  CHECK_THAT(g.error().message, Catch::Contains("more than the limit of 999"));
  ParseLimits single;
  single.max_single_alloc = 5000;
  g = parse_memory(bytes, single);
  REQUIRE_FALSE(g);
  CHECK_THAT(g.error().message, Catch::Contains("max_single_alloc"));
  CHECK(parse_memory(bytes));
}
