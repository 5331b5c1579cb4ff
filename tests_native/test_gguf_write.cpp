// GGUF writer: headers read back by our parser with every KV type, nested arrays and
// large string arrays; byte-identical headers for gguf-py's fixtures; alignment; every
// rejected input with its own message; the --gguf-kv / --gguf-metadata parsers.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include <catch2/catch.hpp>

#include "core/ggml_type.h"
#include "formats/gguf/describe.h"
#include "formats/gguf/kv_input.h"
#include "formats/gguf/parse.h"
#include "formats/gguf/write.h"
#include "support.h"

using namespace amn;

namespace {

using Kvs = std::vector<std::pair<std::string, GgufValue>>;

Result<GgufFile> parse_memory(const std::vector<uint8_t>& bytes) {
  FileSet set;
  set.add("model.gguf", std::make_unique<MemorySource>(bytes));
  return parse_gguf(set, 0, {});
}

// The file a caller would write: the header, then zero tensor data.
std::vector<uint8_t> file_of(const GgufLayout& layout) {
  std::vector<uint8_t> out = layout.header;
  out.resize(out.size() + layout.data_bytes, 0);
  return out;
}

uint64_t bits_of(GgufType t, double f) {
  if (t == GgufType::FLOAT32) {
    const float x = static_cast<float>(f);
    uint32_t b;
    std::memcpy(&b, &x, 4);
    return b;
  }
  uint64_t b;
  std::memcpy(&b, &f, 8);
  return b;
}

// Equality as written: the fields the type uses, bools normalised, floats by bits.
bool same(const GgufValue& a, const GgufValue& b) {
  if (a.type != b.type) return false;
  switch (a.type) {
    case GgufType::UINT8: case GgufType::UINT16: case GgufType::UINT32: case GgufType::UINT64: return a.u == b.u;
    case GgufType::INT8: case GgufType::INT16: case GgufType::INT32: case GgufType::INT64: return a.i == b.i;
    case GgufType::FLOAT32: case GgufType::FLOAT64: return bits_of(a.type, a.f) == bits_of(b.type, b.f);
    case GgufType::BOOL: return a.b == b.b;
    case GgufType::STRING: return a.str == b.str;
    case GgufType::ARRAY: break;
  }
  if (a.elem_type != b.elem_type || a.count != b.count) return false;
  if (a.elem_type == GgufType::STRING) {
    for (uint64_t k = 0; k < a.count; ++k) {
      if (a.string_at(k) != b.string_at(k)) return false;
    }
    return true;
  }
  if (a.elem_type == GgufType::ARRAY) {
    for (uint64_t k = 0; k < a.count; ++k) {
      if (!same(a.items[k], b.items[k])) return false;
    }
    return true;
  }
  if (a.elem_type == GgufType::BOOL) {
    for (uint64_t k = 0; k < a.count; ++k) {
      if (a.bool_at(k) != b.bool_at(k)) return false;
    }
    return true;
  }
  return a.raw == b.raw;
}

void check_same_kvs(const Kvs& got, const Kvs& want) {
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    INFO("KV " << k << " " << want[k].first);
    CHECK(got[k].first == want[k].first);
    CHECK(same(got[k].second, want[k].second));
  }
}

GgufValue array_of(GgufType elem, std::initializer_list<GgufValue> items) {
  GgufValue a = gguf_value_array(elem);
  for (const auto& e : items) REQUIRE(gguf_array_append(a, e));
  return a;
}

GgufValue u(GgufType t, uint64_t v) { return gguf_value_uint(t, v); }
GgufValue i(GgufType t, int64_t v) { return gguf_value_int(t, v); }

// Every value type, extremes, unicode, empty and nested arrays, 1000 strings.
Kvs every_kind_of_kv() {
  using T = GgufType;
  Kvs kv;
  kv.emplace_back("general.architecture", gguf_value_string("llama"));
  kv.emplace_back("t.u8", u(T::UINT8, 255));
  kv.emplace_back("t.i8", i(T::INT8, -128));
  kv.emplace_back("t.u16", u(T::UINT16, 65535));
  kv.emplace_back("t.i16", i(T::INT16, -32768));
  kv.emplace_back("t.u32", u(T::UINT32, 4294967295u));
  kv.emplace_back("t.i32", i(T::INT32, INT32_MIN));
  kv.emplace_back("t.u64", u(T::UINT64, UINT64_MAX));
  kv.emplace_back("t.i64", i(T::INT64, INT64_MIN));
  kv.emplace_back("t.f32", gguf_value_float(T::FLOAT32, 3.14159265));
  kv.emplace_back("t.f64", gguf_value_float(T::FLOAT64, -2.5e-300));
  kv.emplace_back("t.f32.nan", gguf_value_float(T::FLOAT32, NAN));
  kv.emplace_back("t.f64.inf", gguf_value_float(T::FLOAT64, -INFINITY));
  kv.emplace_back("t.true", gguf_value_bool(true));
  kv.emplace_back("t.false", gguf_value_bool(false));
  kv.emplace_back("t.unicode", gguf_value_string("h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9D\x84\x9E \xE6\x97\xA5\xE6\x9C\xAC"));
  kv.emplace_back("t.empty", gguf_value_string(""));
  kv.emplace_back("t.\xE9\x8D\xB5", gguf_value_string("a unicode key"));
  kv.emplace_back("a.u8", array_of(T::UINT8, {u(T::UINT8, 0), u(T::UINT8, 1), u(T::UINT8, 255)}));
  kv.emplace_back("a.i8", array_of(T::INT8, {i(T::INT8, -128), i(T::INT8, 127)}));
  kv.emplace_back("a.u16", array_of(T::UINT16, {u(T::UINT16, 65535)}));
  kv.emplace_back("a.i16", array_of(T::INT16, {i(T::INT16, -32768), i(T::INT16, 1)}));
  kv.emplace_back("a.u32", array_of(T::UINT32, {u(T::UINT32, 1), u(T::UINT32, 4294967295u)}));
  kv.emplace_back("a.i32", array_of(T::INT32, {i(T::INT32, -1), i(T::INT32, INT32_MAX)}));
  kv.emplace_back("a.u64", array_of(T::UINT64, {u(T::UINT64, UINT64_MAX), u(T::UINT64, 0)}));
  kv.emplace_back("a.i64", array_of(T::INT64, {i(T::INT64, INT64_MIN), i(T::INT64, INT64_MAX)}));
  kv.emplace_back("a.f32", array_of(T::FLOAT32, {gguf_value_float(T::FLOAT32, 0.1), gguf_value_float(T::FLOAT32, -INFINITY),
                                                 gguf_value_float(T::FLOAT32, 3e38)}));
  kv.emplace_back("a.f64", array_of(T::FLOAT64, {gguf_value_float(T::FLOAT64, 1e-310), gguf_value_float(T::FLOAT64, -0.0)}));
  kv.emplace_back("a.bool", array_of(T::BOOL, {gguf_value_bool(true), gguf_value_bool(false), gguf_value_bool(true)}));
  kv.emplace_back("a.empty", gguf_value_array(T::INT32));
  std::vector<std::string> tokens;
  for (int k = 0; k < 1000; ++k) {
    tokens.push_back(k % 7 == 0 ? "" : "\xE2\x96\x81tok_" + std::to_string(k * 7919 % 10007) + (k % 3 ? "\xF0\x9F\x98\x80" : ""));
  }
  kv.emplace_back("tokenizer.ggml.tokens", gguf_value_string_array(tokens));
  kv.emplace_back("n.ints", array_of(T::ARRAY, {array_of(T::INT32, {i(T::INT32, 1), i(T::INT32, 2)}),
                                                array_of(T::INT32, {i(T::INT32, 3)}), gguf_value_array(T::INT32)}));
  kv.emplace_back("n.mixed", array_of(T::ARRAY, {array_of(T::STRING, {gguf_value_string("x"), gguf_value_string("yz")}),
                                                 array_of(T::FLOAT64, {gguf_value_float(T::FLOAT64, 0.25)})}));
  kv.emplace_back("n.deep4", array_of(T::ARRAY, {array_of(T::ARRAY, {array_of(T::ARRAY, {array_of(T::UINT8, {u(T::UINT8, 7)})})})}));
  kv.emplace_back("n.empty", gguf_value_array(T::ARRAY));
  return kv;
}

std::vector<GgufWriteTensor> some_tensors() {
  return {
      {"f32.odd", GgmlType::F32, {7}, 28},                 // 28 bytes: the next tensor is padded
      {"f16", GgmlType::F16, {3, 5}, 30},
      {"q4_k", GgmlType::Q4_K, {256, 2}, 288},
      {"q8_0", GgmlType::Q8_0, {64, 3}, 204},
      {"bf16.4d", GgmlType::BF16, {2, 2, 2, 2}, 32},
      {"scalar", GgmlType::F32, {}, 4},                    // n_dims 0: one element
      {"blk.0.\xE2\x9C\x93", GgmlType::I8, {33}, 33},    // I8, a unicode name
  };
}

void check_tensors(const GgufFile& g, std::span<const GgufWriteTensor> want, const GgufLayout& layout) {
  REQUIRE(g.tensors.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    const auto& t = g.tensors[k];
    INFO("tensor " << want[k].name);
    CHECK(t.name == want[k].name);
    CHECK(t.type == want[k].ggml_type);
    CHECK(t.ne == want[k].ne);
    CHECK(t.offset == layout.offsets[k]);
    CHECK(t.offset % g.alignment == 0);
    CHECK(t.nbytes == want[k].nbytes);
    CHECK_FALSE(t.size_from_offsets);
  }
}

}  // namespace

TEST_CASE("a written header reads back with every KV type, nested arrays and 1000 strings", "[gguf-write]") {
  const Kvs kv = every_kind_of_kv();
  const auto tensors = some_tensors();
  auto layout = gguf_layout(kv, tensors);
  REQUIRE(layout);
  CHECK(layout->header.size() % 32 == 0);
  CHECK(std::equal(layout->header.begin(), layout->header.begin() + 8,
                   std::vector<uint8_t>{'G', 'G', 'U', 'F', 3, 0, 0, 0}.begin()));
  REQUIRE(layout->offsets.size() == tensors.size());
  CHECK(layout->offsets[0] == 0);
  CHECK(layout->offsets[1] == 32);  // 28 bytes, padded to 32
  CHECK(layout->data_bytes == layout->offsets.back() + tensors.back().nbytes);  // no padding after the last
  for (size_t k = 1; k < tensors.size(); ++k) {
    CHECK(layout->offsets[k] == (layout->offsets[k - 1] + tensors[k - 1].nbytes + 31) / 32 * 32);
  }
  auto g = parse_memory(file_of(*layout));
  REQUIRE(g);
  CHECK(g->version == 3);
  CHECK_FALSE(g->big_endian);
  CHECK(g->alignment == 32);
  CHECK(g->data_offset == layout->header.size());
  CHECK(g->warnings.empty());
  CHECK_FALSE(g->find("general.alignment"));  // the default is not written
  check_same_kvs(g->kv, kv);
  check_tensors(*g, tensors, *layout);
  CHECK(g->find("tokenizer.ggml.tokens")->string_at(1) == "\xE2\x96\x81tok_7919\xF0\x9F\x98\x80");
  // The remote path reads the same file.
  auto s = test::open_memory(file_of(*layout), "model.gguf");
  REQUIRE(s);
  CHECK(s->tensors.size() == tensors.size());

  // What was read back writes the same bytes.
  std::vector<GgufWriteTensor> again;
  for (const auto& t : g->tensors) again.push_back({t.name, t.type, t.ne, t.nbytes});
  auto twice = gguf_layout(g->kv, again);
  REQUIRE(twice);
  CHECK(twice->header == layout->header);

  // No tensors, no KVs: the 24-byte header padded to 32.
  auto empty = gguf_layout({}, {});
  REQUIRE(empty);
  CHECK(empty->header.size() == 32);
  CHECK(empty->data_bytes == 0);
  auto ge = parse_memory(file_of(*empty));
  REQUIRE(ge);
  CHECK(ge->kv.empty());
  CHECK(ge->tensors.empty());
}

TEST_CASE("headers are byte-identical to gguf-py's for its fixtures", "[gguf-write][fixtures]") {
  for (const char* name : {"all_kv_types", "custom_alignment", "ggml_blocks", "kv_only", "tensor_types",
                           "tiny-00001-of-00003", "tiny-00002-of-00003", "tiny-00003-of-00003"}) {
    INFO(name);
    const auto bytes = test::read_file(test::fixture_path(std::string("gguf/valid/") + name + ".gguf"));
    auto g = parse_memory(bytes);
    REQUIRE(g);
    std::vector<GgufWriteTensor> tensors;
    for (const auto& t : g->tensors) tensors.push_back({t.name, t.type, t.ne, t.nbytes});
    auto layout = gguf_layout(g->kv, tensors, g->alignment);
    REQUIRE(layout);
    REQUIRE(layout->header.size() == g->data_offset);
    CHECK(std::equal(layout->header.begin(), layout->header.end(), bytes.begin()));
    for (size_t k = 0; k < tensors.size(); ++k) CHECK(layout->offsets[k] == g->tensors[k].offset);
  }
}

TEST_CASE("a custom alignment is written as general.alignment and respected", "[gguf-write]") {
  const auto tensors = some_tensors();
  Kvs kv = {{"general.architecture", gguf_value_string("llama")}};
  auto layout = gguf_layout(kv, tensors, 64);
  REQUIRE(layout);
  CHECK(layout->header.size() % 64 == 0);
  for (uint64_t off : layout->offsets) CHECK(off % 64 == 0);
  CHECK(layout->offsets[1] == 64);
  auto g = parse_memory(file_of(*layout));
  REQUIRE(g);
  CHECK(g->alignment == 64);
  CHECK(g->data_offset == layout->header.size());
  REQUIRE(g->kv.size() == 2);
  CHECK(g->kv[1].first == "general.alignment");  // appended after the caller's KVs
  CHECK(g->kv[1].second.type == GgufType::UINT32);
  CHECK(g->kv[1].second.u == 64);
  check_tensors(*g, tensors, *layout);

  // Given by the caller: kept where it stands, not added twice.
  Kvs with = {{"general.alignment", gguf_value_uint(GgufType::UINT32, 64)}, kv[0]};
  auto layout2 = gguf_layout(with, tensors, 64);
  REQUIRE(layout2);
  auto g2 = parse_memory(file_of(*layout2));
  REQUIRE(g2);
  REQUIRE(g2->kv.size() == 2);
  CHECK(g2->kv[0].first == "general.alignment");
  CHECK(layout2->offsets == layout->offsets);
  // general.alignment = 32 given explicitly is kept too.
  Kvs with32 = {{"general.alignment", gguf_value_uint(GgufType::UINT32, 32)}};
  auto layout3 = gguf_layout(with32, tensors);
  REQUIRE(layout3);
  CHECK(parse_memory(file_of(*layout3))->kv.size() == 1);
  // Alignment 1 packs tensors back to back.
  auto packed = gguf_layout({}, tensors, 1);
  REQUIRE(packed);
  CHECK(packed->offsets[1] == 28);
  CHECK(parse_memory(file_of(*packed)));
}

TEST_CASE("invalid layouts are refused, each with its own message", "[gguf-write]") {
  using T = GgufType;
  const Kvs ok_kv = {{"general.architecture", gguf_value_string("llama")}};
  const std::vector<GgufWriteTensor> ok_t = {{"w", GgmlType::F32, {4}, 16}};
  auto with_tensor = [&](GgufWriteTensor t) { return std::vector<GgufWriteTensor>{ok_t[0], std::move(t)}; };
  auto with_kv = [&](std::string key, GgufValue v) {
    Kvs kv = ok_kv;
    kv.emplace_back(std::move(key), std::move(v));
    return kv;
  };
  GgufValue short_raw = gguf_value_array(T::UINT32);
  short_raw.count = 2;
  short_raw.raw = {1, 0, 0, 0};
  GgufValue bad_ends = gguf_value_string_array(std::vector<std::string>{"a", "b"});
  bad_ends.ends.pop_back();
  GgufValue deep = array_of(T::UINT8, {u(T::UINT8, 1)});
  for (int k = 0; k < 4; ++k) deep = array_of(T::ARRAY, {deep});
  GgufValue not_array_item = gguf_value_array(T::ARRAY);
  not_array_item.count = 1;
  not_array_item.items.push_back(u(T::UINT8, 1));

  struct Case {
    const char* what;
    Result<GgufLayout> result;
    ErrorCode code;
    const char* contains;
  };
  const std::vector<Case> cases = {
      {"duplicate key", gguf_layout(with_kv("general.architecture", gguf_value_string("x")), ok_t),
       ErrorCode::invalid_argument, "duplicate key 'general.architecture' (KVs 0 and 1)"},
      {"duplicate tensor", gguf_layout(ok_kv, with_tensor({"w", GgmlType::F32, {4}, 16})), ErrorCode::invalid_argument,
       "duplicate tensor name 'w' (tensors 0 and 1)"},
      {"unknown type", gguf_layout(ok_kv, with_tensor({"x", static_cast<GgmlType>(99), {4}, 16})), ErrorCode::invalid_argument,
       "unknown ggml type id 99"},
      {"removed type", gguf_layout(ok_kv, with_tensor({"x", GgmlType::Q4_2, {32}, 20})), ErrorCode::invalid_argument,
       "which ggml removed"},
      {"wrong nbytes", gguf_layout(ok_kv, with_tensor({"x", GgmlType::Q4_K, {256, 2}, 289})), ErrorCode::invalid_argument,
       "tensor 'x' of type Q4_K with 512 elements takes 288 bytes, but nbytes is 289"},
      {"not whole blocks", gguf_layout(ok_kv, with_tensor({"x", GgmlType::Q4_K, {100}, 144})), ErrorCode::invalid_argument,
       "ne[0] = 100, not a multiple of the block size 256"},
      {"alignment 3", gguf_layout(ok_kv, ok_t, 3), ErrorCode::invalid_argument, "alignment 3 is not a non-zero power of two"},
      {"alignment 0", gguf_layout(ok_kv, ok_t, 0), ErrorCode::invalid_argument, "alignment 0 is not"},
      {"alignment 2^32", gguf_layout(ok_kv, ok_t, uint64_t{1} << 32), ErrorCode::invalid_argument, "does not fit"},
      {"alignment KV mismatch", gguf_layout(with_kv("general.alignment", u(T::UINT32, 64)), ok_t, 32),
       ErrorCode::invalid_argument, "general.alignment is 64 but the layout's alignment is 32"},
      {"alignment KV type", gguf_layout(with_kv("general.alignment", u(T::UINT64, 32)), ok_t),
       ErrorCode::invalid_argument, "general.alignment has type UINT64, it must be UINT32"},
      {"n_dims 5", gguf_layout(ok_kv, with_tensor({"x", GgmlType::F32, {1, 1, 1, 1, 4}, 16})), ErrorCode::invalid_argument,
       "has 5 dimensions, more than GGML_MAX_DIMS (4)"},
      {"zero dimension", gguf_layout(ok_kv, with_tensor({"x", GgmlType::F32, {4, 0}, 0})), ErrorCode::invalid_argument,
       "ne[1] = 0, outside 1 .. 2^63-1"},
      {"element overflow", gguf_layout(ok_kv, with_tensor({"x", GgmlType::F32, {uint64_t{1} << 32, uint64_t{1} << 32}, 0})),
       ErrorCode::invalid_argument, "element count of tensor 'x' overflows int64"},
      {"empty key", gguf_layout(with_kv("", u(T::UINT8, 1)), ok_t), ErrorCode::invalid_argument, "key 1 is empty"},
      {"key not UTF-8", gguf_layout(with_kv("bad\xFF", u(T::UINT8, 1)), ok_t), ErrorCode::invalid_argument,
       "is not valid UTF-8"},
      {"name not UTF-8", gguf_layout(ok_kv, with_tensor({"\xC3", GgmlType::F32, {4}, 16})), ErrorCode::invalid_argument,
       "the name of tensor"},
      {"UINT8 300", gguf_layout(with_kv("k", u(T::UINT8, 300)), ok_t), ErrorCode::invalid_argument,
       "the value of key 'k' is 300, out of range for UINT8"},
      {"INT16 -40000", gguf_layout(with_kv("k", i(T::INT16, -40000)), ok_t), ErrorCode::invalid_argument,
       "is -40000, out of range for INT16"},
      {"unknown value type", gguf_layout(with_kv("k", u(static_cast<T>(13), 1)), ok_t), ErrorCode::invalid_argument,
       "has unknown type 13"},
      {"raw size", gguf_layout(with_kv("k", short_raw), ok_t), ErrorCode::invalid_argument,
       "array 'k' of 2 UINT32 elements holds 4 bytes, not 8"},
      {"string ends", gguf_layout(with_kv("k", bad_ends), ok_t), ErrorCode::invalid_argument,
       "array 'k' of 2 strings has 1 end offsets"},
      {"item not array", gguf_layout(with_kv("k", not_array_item), ok_t), ErrorCode::invalid_argument,
       "element 0 of array 'k' is a UINT8, not an ARRAY"},
      {"nesting 5", gguf_layout(with_kv("k", deep), ok_t), ErrorCode::limit, "arrays nest deeper than 4 levels in key 'k'"},
  };
  std::vector<std::string> messages;
  for (const auto& c : cases) {
    INFO(c.what);
    REQUIRE_FALSE(c.result);
    CHECK(c.result.error().code == c.code);
    CHECK_THAT(c.result.error().message, Catch::Contains(c.contains));
    CHECK_THAT(c.result.error().message, Catch::StartsWith("gguf write: "));
    messages.push_back(c.result.error().message);
  }
  std::sort(messages.begin(), messages.end());
  CHECK(std::adjacent_find(messages.begin(), messages.end()) == messages.end());
}

TEST_CASE("--gguf-kv arguments are typed by suffix or by inference", "[gguf-write][kv-input]") {
  using T = GgufType;
  auto kv = [](std::string_view arg) {
    auto r = parse_gguf_kv_arg(arg);
    INFO(arg << ": " << (r ? "" : r.error().message));
    REQUIRE(r);
    return std::move(r).value();
  };
  CHECK(same(kv("general.name=hello world").second, gguf_value_string("hello world")));
  CHECK(kv("general.name=hello world").first == "general.name");
  CHECK(same(kv("a=").second, gguf_value_string("")));
  CHECK(same(kv("a=x=y").second, gguf_value_string("x=y")));
  CHECK(same(kv("a=4096").second, u(T::UINT32, 4096)));
  CHECK(same(kv("a=0").second, u(T::UINT32, 0)));
  CHECK(same(kv("a=4294967295").second, u(T::UINT32, 4294967295u)));
  CHECK(same(kv("a=4294967296").second, u(T::UINT64, 4294967296u)));
  CHECK(same(kv("a=-5").second, i(T::INT32, -5)));
  CHECK(same(kv("a=-2147483648").second, i(T::INT32, INT32_MIN)));
  CHECK(same(kv("a=-2147483649").second, i(T::INT64, -2147483649LL)));
  CHECK(same(kv("a=0.1").second, gguf_value_float(T::FLOAT32, 0.1)));
  CHECK(same(kv("a=1e3").second, gguf_value_float(T::FLOAT32, 1000)));
  CHECK(same(kv("a=true").second, gguf_value_bool(true)));
  CHECK(same(kv("a=false").second, gguf_value_bool(false)));
  CHECK(same(kv("a=True").second, gguf_value_string("True")));
  CHECK(same(kv("a=007").second, gguf_value_string("007")));  // not a JSON number
  CHECK(same(kv("a=1.").second, gguf_value_string("1.")));
  CHECK(same(kv("a=nan").second, gguf_value_string("nan")));
  CHECK(same(kv("a=[1,2]").second, gguf_value_string("[1,2]")));  // arrays need :ARRAY
  CHECK(same(kv("a=h\xC3\xA9").second, gguf_value_string("h\xC3\xA9")));

  CHECK(same(kv("llama.context_length:UINT32=4096").second, u(T::UINT32, 4096)));
  CHECK(same(kv("a:uint8=255").second, u(T::UINT8, 255)));
  CHECK(same(kv("a:INT8=-128").second, i(T::INT8, -128)));
  CHECK(same(kv("a:UINT16=65535").second, u(T::UINT16, 65535)));
  CHECK(same(kv("a:INT16=-32768").second, i(T::INT16, -32768)));
  CHECK(same(kv("a:INT32=7").second, i(T::INT32, 7)));
  CHECK(same(kv("a:UINT64=18446744073709551615").second, u(T::UINT64, UINT64_MAX)));
  CHECK(same(kv("a:INT64=-9223372036854775808").second, i(T::INT64, INT64_MIN)));
  CHECK(same(kv("a:FLOAT32=0.1").second, gguf_value_float(T::FLOAT32, 0.1f)));
  CHECK(same(kv("a:FLOAT64=0.1").second, gguf_value_float(T::FLOAT64, 0.1)));
  CHECK(same(kv("a:FLOAT32=10000").second, gguf_value_float(T::FLOAT32, 10000)));
  CHECK(std::isinf(kv("a:FLOAT32=-inf").second.f));
  CHECK(std::isnan(kv("a:FLOAT64=nan").second.f));
  // FLOAT32 is rounded once, from the decimal: via double this lands on the midpoint
  // 1 + 2^-24 and ties to 1.0f.
  CHECK(kv("a:FLOAT32=1.000000059604644775390625000001").second.f == static_cast<double>(std::nextafter(1.0f, 2.0f)));
  CHECK(same(kv("a:BOOL=true").second, gguf_value_bool(true)));
  CHECK(same(kv("a:STRING=123").second, gguf_value_string("123")));
  CHECK(same(kv("a:STRING=").second, gguf_value_string("")));
  CHECK(same(kv("a:STRING= spaced = ").second, gguf_value_string(" spaced = ")));

  CHECK(same(kv("a:ARRAY[STRING]=[\"a\",\"\\u00e9\", \"\"]").second,
             array_of(T::STRING, {gguf_value_string("a"), gguf_value_string("\xC3\xA9"), gguf_value_string("")})));
  CHECK(same(kv("a:ARRAY[INT32]=[1,-2]").second, array_of(T::INT32, {i(T::INT32, 1), i(T::INT32, -2)})));
  CHECK(same(kv("a:ARRAY[UINT8]=[]").second, gguf_value_array(T::UINT8)));
  CHECK(same(kv("a:ARRAY[FLOAT32]=[0.5, 1]").second,
             array_of(T::FLOAT32, {gguf_value_float(T::FLOAT32, 0.5), gguf_value_float(T::FLOAT32, 1)})));
  CHECK(same(kv("a:ARRAY=[1,2,3]").second,
             array_of(T::UINT32, {u(T::UINT32, 1), u(T::UINT32, 2), u(T::UINT32, 3)})));
  CHECK(same(kv("a:ARRAY=[1,-2]").second, array_of(T::INT32, {i(T::INT32, 1), i(T::INT32, -2)})));
  CHECK(same(kv("a:ARRAY=[1,-3000000000]").second, array_of(T::INT64, {i(T::INT64, 1), i(T::INT64, -3000000000LL)})));
  CHECK(same(kv("a:ARRAY=[1,5000000000]").second, array_of(T::UINT64, {u(T::UINT64, 1), u(T::UINT64, 5000000000LL)})));
  CHECK(same(kv("a:ARRAY=[1,-2.5]").second,
             array_of(T::FLOAT32, {gguf_value_float(T::FLOAT32, 1), gguf_value_float(T::FLOAT32, -2.5)})));
  CHECK(same(kv("a:ARRAY=[true,false]").second, array_of(T::BOOL, {gguf_value_bool(true), gguf_value_bool(false)})));
  CHECK(same(kv("a:array[array[int32]]=[[1,2],[3],[]]").second,
             array_of(T::ARRAY, {array_of(T::INT32, {i(T::INT32, 1), i(T::INT32, 2)}), array_of(T::INT32, {i(T::INT32, 3)}),
                                 gguf_value_array(T::INT32)})));
  CHECK(same(kv("a:ARRAY=[[1],[\"x\"]]").second,
             array_of(T::ARRAY, {array_of(T::UINT32, {u(T::UINT32, 1)}), array_of(T::STRING, {gguf_value_string("x")})})));
  CHECK(same(kv("a:ARRAY[ARRAY]=[]").second, gguf_value_array(T::ARRAY)));

  struct Bad {
    const char* arg;
    ErrorCode code;
    const char* contains;
  };
  const Bad bad[] = {
      {"noequals", ErrorCode::invalid_argument, "gguf kv 'noequals': expected key=value or key:TYPE=value"},
      {"=v", ErrorCode::invalid_argument, "the key is empty"},
      {":UINT8=1", ErrorCode::invalid_argument, "the key is empty"},
      {"k\xFF=1", ErrorCode::invalid_argument, "the key is not valid UTF-8"},
      {"k=\xFF", ErrorCode::invalid_argument, "the string is not valid UTF-8"},
      {"k:FOO=1", ErrorCode::invalid_argument, "unknown type 'FOO' (types: UINT8, INT8"},
      {"k:ARRAY[]=[]", ErrorCode::invalid_argument, "unknown type 'ARRAY[]'"},
      {"k:UINT8=256", ErrorCode::invalid_argument, "256 is out of range for UINT8"},
      {"k:INT8=-129", ErrorCode::invalid_argument, "-129 is out of range for INT8"},
      {"k:UINT32=-1", ErrorCode::invalid_argument, "-1 is out of range for UINT32"},
      {"k:INT64=9223372036854775808", ErrorCode::invalid_argument, "9223372036854775808 is out of range for INT64"},
      {"k:UINT32=4k", ErrorCode::invalid_argument, "'4k' is not an integer"},
      {"k:UINT32=", ErrorCode::invalid_argument, "'' is not an integer"},
      {"k=99999999999999999999999", ErrorCode::invalid_argument, "out of range for any integer type"},
      {"k:FLOAT32=1e39", ErrorCode::invalid_argument, "1e39 is out of range for FLOAT32"},
      {"k:FLOAT64=1.5x", ErrorCode::invalid_argument, "'1.5x' is not a number"},
      {"k=1e39", ErrorCode::invalid_argument, "1e39 is out of range for FLOAT32"},
      {"k:BOOL=yes", ErrorCode::invalid_argument, "'yes' is not true or false (type BOOL)"},
      {"k:ARRAY[STRING]=[1]", ErrorCode::invalid_argument, "at [0]: '1' is not a string (type STRING)"},
      {"k:ARRAY[UINT8]=[1,2,300]", ErrorCode::invalid_argument, "at [2]: 300 is out of range for UINT8"},
      {"k:ARRAY[ARRAY[UINT8]]=[[1],[2,-1]]", ErrorCode::invalid_argument, "at [1][1]: -1 is out of range for UINT8"},
      {"k:ARRAY[INT32]=[1.5]", ErrorCode::invalid_argument, "'1.5' is not an integer"},
      {"k:ARRAY[STRING]=[\"a\"", ErrorCode::parse, "malformed JSON"},
      {"k:ARRAY[INT32]=[1] x", ErrorCode::parse, "malformed JSON"},
      {"k:ARRAY[INT32]=5", ErrorCode::invalid_argument, "an ARRAY value must be a JSON array"},
      {"k:ARRAY[INT32]=[[1]]", ErrorCode::invalid_argument, "expected a scalar, found an array"},
      {"k:ARRAY[ARRAY[INT32]]=[1]", ErrorCode::invalid_argument, "at [0]: expected a JSON array"},
      {"k:ARRAY=[]", ErrorCode::invalid_argument, "an empty array needs its element type"},
      {"k:ARRAY=[1,\"a\"]", ErrorCode::invalid_argument, "the elements mix strings, booleans and numbers"},
      {"k:ARRAY=[[1],2]", ErrorCode::invalid_argument, "the elements mix arrays and scalars"},
      {"k:ARRAY=[-1,18446744073709551615]", ErrorCode::invalid_argument, "mix negative integers and integers above"},
      {"k:ARRAY=[null]", ErrorCode::invalid_argument, "null has no GGUF type"},
      {"k:ARRAY=[{\"a\":1}]", ErrorCode::invalid_argument, "expected a scalar"},
      {"k:ARRAY[ARRAY[ARRAY[ARRAY[ARRAY[INT32]]]]]=[]", ErrorCode::limit, "nests arrays deeper than 4 levels"},
      {"k:ARRAY=[[[[[1]]]]]", ErrorCode::limit, "at [0][0][0][0]: arrays nest deeper than 4 levels"},
  };
  for (const auto& b : bad) {
    INFO(b.arg);
    auto r = parse_gguf_kv_arg(b.arg);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == b.code);
    CHECK_THAT(r.error().message, Catch::Contains(b.contains));
    CHECK_THAT(r.error().message, Catch::StartsWith("gguf kv '"));
  }
}

TEST_CASE("a --gguf-metadata JSON document gives KVs in order", "[gguf-write][kv-input]") {
  using T = GgufType;
  const char* json = R"({
    "general.name": "tiny \u00e9",
    "llama.context_length": 4096,
    "llama.rope.freq_base": 10000.0,
    "x.negative": -7,
    "x.flag": true,
    "tokenizer.ggml.tokens": ["<unk>", "<s>"],
    "x.typed": {"type": "UINT8", "value": 7},
    "x.reversed": {"value": [1, 2], "type": "ARRAY[INT32]"},
    "x.nested": {"type": "ARRAY[ARRAY[INT32]]", "value": [[1], [2, 3]]},
    "x.nan": {"type": "FLOAT32", "value": "nan"},
    "x.big": {"type": "UINT64", "value": 18446744073709551615},
    "x.f64": {"type": "FLOAT64", "value": -2.5e-300},
    "x.empty": {"type": "ARRAY[STRING]", "value": []}
  })";
  auto r = parse_gguf_kv_json(json);
  INFO((r ? "" : r.error().message));
  REQUIRE(r);
  const Kvs want = {
      {"general.name", gguf_value_string("tiny \xC3\xA9")},
      {"llama.context_length", u(T::UINT32, 4096)},
      {"llama.rope.freq_base", gguf_value_float(T::FLOAT32, 10000)},
      {"x.negative", i(T::INT32, -7)},
      {"x.flag", gguf_value_bool(true)},
      {"tokenizer.ggml.tokens", array_of(T::STRING, {gguf_value_string("<unk>"), gguf_value_string("<s>")})},
      {"x.typed", u(T::UINT8, 7)},
      {"x.reversed", array_of(T::INT32, {i(T::INT32, 1), i(T::INT32, 2)})},
      {"x.nested", array_of(T::ARRAY, {array_of(T::INT32, {i(T::INT32, 1)}), array_of(T::INT32, {i(T::INT32, 2), i(T::INT32, 3)})})},
      {"x.nan", gguf_value_float(T::FLOAT32, NAN)},
      {"x.big", u(T::UINT64, UINT64_MAX)},
      {"x.f64", gguf_value_float(T::FLOAT64, -2.5e-300)},
      {"x.empty", gguf_value_array(T::STRING)},
  };
  check_same_kvs(*r, want);
  CHECK(parse_gguf_kv_json("{}")->empty());

  struct Bad {
    const char* json;
    ErrorCode code;
    const char* contains;
  };
  const Bad bad[] = {
      {"[1]", ErrorCode::invalid_argument, "expected a JSON object of KVs"},
      {"{\"a\": 1,}", ErrorCode::parse, "malformed JSON"},
      {"{\"a\": 1} x", ErrorCode::parse, "malformed JSON"},
      {"{\"a\": 1, \"a\": 2}", ErrorCode::invalid_argument, "key 'a': the key appears twice"},
      {"{\"\": 1}", ErrorCode::invalid_argument, "the key is empty"},
      {"{\"a\": null}", ErrorCode::invalid_argument, "key 'a': null has no GGUF type"},
      {"{\"a\": {\"type\": \"FLOAT32\", \"value\": null}}", ErrorCode::invalid_argument, "give \"nan\", \"inf\" or \"-inf\""},
      {"{\"a\": {\"type\": \"UINT32\"}}", ErrorCode::invalid_argument, "an object value must be {\"type\""},
      {"{\"a\": {\"type\": \"UINT32\", \"value\": 1, \"x\": 2}}", ErrorCode::invalid_argument, "and nothing else"},
      {"{\"a\": {\"type\": 4, \"value\": 1}}", ErrorCode::invalid_argument, "an object value must be"},
      {"{\"a\": {\"type\": \"UINT33\", \"value\": 1}}", ErrorCode::invalid_argument, "key 'a': unknown type 'UINT33'"},
      {"{\"a\": {\"type\": \"UINT32\", \"value\": \"1\"}}", ErrorCode::invalid_argument, "the string '1' is not an integer"},
      {"{\"a\": {\"type\": \"STRING\", \"value\": 1}}", ErrorCode::invalid_argument, "'1' is not a string"},
      {"{\"a\": {\"type\": \"UINT32\", \"value\": 1.0}}", ErrorCode::invalid_argument, "'1.0' is not an integer"},
      {"{\"a\": {\"type\": \"FLOAT32\", \"value\": \"x\"}}", ErrorCode::invalid_argument, "the string 'x' is not a number"},
      {"{\"a\": {\"type\": \"BOOL\", \"value\": 1}}", ErrorCode::invalid_argument, "is not true or false"},
      {"{\"a\": {\"type\": \"ARRAY[INT8]\", \"value\": [1, 200]}}", ErrorCode::invalid_argument,
       "key 'a': at [1]: 200 is out of range for INT8"},
      {"{\"a\": [{\"type\": \"UINT8\", \"value\": 1}]}", ErrorCode::invalid_argument, "expected a scalar"},
      {"{\"a\": []}", ErrorCode::invalid_argument, "an empty array needs its element type"},
  };
  for (const auto& b : bad) {
    INFO(b.json);
    auto e = parse_gguf_kv_json(b.json);
    REQUIRE_FALSE(e);
    CHECK(e.error().code == b.code);
    CHECK_THAT(e.error().message, Catch::Contains(b.contains));
    CHECK_THAT(e.error().message, Catch::StartsWith("gguf metadata: "));
  }
}

TEST_CASE("the info JSON's details.kv reads back as the same KVs", "[gguf-write][kv-input]") {
  for (const char* name : {"all_kv_types", "custom_alignment", "tensor_types"}) {
    INFO(name);
    auto g = parse_memory(test::read_file(test::fixture_path(std::string("gguf/valid/") + name + ".gguf")));
    REQUIRE(g);
    const std::string details = gguf_details_json(*g);
    const std::string marker = "\"kv\": ";
    const size_t at = details.find(marker);
    REQUIRE(at != std::string::npos);
    const std::string kv_text = details.substr(at + marker.size(), details.size() - 1 - at - marker.size());
    auto kv = parse_gguf_kv_json(kv_text);
    INFO((kv ? "" : kv.error().message));
    REQUIRE(kv);
    check_same_kvs(*kv, g->kv);
  }
}

TEST_CASE("overrides replace KVs where they stand and append new ones", "[gguf-write][kv-input]") {
  using T = GgufType;
  Kvs base = {{"a", u(T::UINT32, 1)}, {"b", u(T::UINT32, 2)}};
  merge_gguf_kv(base, {{"b", gguf_value_string("two")}, {"c", u(T::UINT32, 3)}, {"a", u(T::UINT8, 5)},
                       {"c", u(T::UINT32, 6)}});
  const Kvs want = {{"a", u(T::UINT8, 5)}, {"b", gguf_value_string("two")}, {"c", u(T::UINT32, 6)}};
  check_same_kvs(base, want);
  merge_gguf_kv(base, {});
  check_same_kvs(base, want);

  // From the command line to a file: parsed, merged, written, read back.
  auto arg = parse_gguf_kv_arg("llama.context_length:UINT32=8192");
  auto json = parse_gguf_kv_json(R"({"general.name": "x", "llama.context_length": 4096})");
  REQUIRE(arg);
  REQUIRE(json);
  Kvs kv = {{"general.architecture", gguf_value_string("llama")}};
  merge_gguf_kv(kv, *json);
  merge_gguf_kv(kv, {*arg});
  auto layout = gguf_layout(kv, {});
  REQUIRE(layout);
  auto g = parse_memory(file_of(*layout));
  REQUIRE(g);
  REQUIRE(g->kv.size() == 3);
  CHECK(g->kv[2].first == "llama.context_length");
  CHECK(g->kv[2].second.u == 8192);
}
