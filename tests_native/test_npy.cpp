// NumPy .npy / .npz: every valid fixture against numpy.load's reading of it (names, dtypes,
// shapes, byte order, Fortran strides, the exact bytes at each record's range), every
// hostile file's code and message, the Python-literal header parser, truncation at every
// byte, and the sans-IO rounds of a remote read.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>

#include <catch2/catch.hpp>
#include <simdjson.h>

#include "formats/npy/header.h"
#include "formats/npy/literal.h"
#include "formats/npy/npy.h"
#include "formats/zip/zip.h"
#include "support.h"

using namespace amn;
using amn::test::jv;
using amn::test::lower;
using amn::test::sha256_hex;

namespace {

bool is_npz(const std::string& name) { return name.size() > 4 && name.compare(name.size() - 4, 4, ".npz") == 0; }

Result<Model> parse_any(FileSet& set, const ParseLimits& limits = {}) {
  return is_npz(set.name(0)) ? parse_npz(set, 0, limits) : parse_npy(set, 0, limits);
}

// The remote path: a SparseSource fed exactly the ranges the parser asks for.
auto parse_sparse(const std::vector<uint8_t>& bytes, const std::string& name) {
  return test::feed_sparse(bytes, name, [](FileSet& set) { return parse_any(set); });
}

Result<Model> parse_memory(const std::vector<uint8_t>& bytes, const std::string& name,
                           const ParseLimits& limits = {}) {
  FileSet set;
  set.add(name, std::make_unique<MemorySource>(bytes));
  return parse_any(set, limits);
}


std::vector<uint8_t> fixture(const std::string& rel) {
  auto bytes = test::read_file(test::fixture_path("numpy/" + rel));
  REQUIRE(!bytes.empty());
  return bytes;
}

Result<npy::PyValue> literal(std::string_view text, bool long_suffix = false) {
  npy::LiteralOptions o;
  o.allow_long_suffix = long_suffix;
  return npy::parse_python_literal(text, 0, o);
}

}  // namespace

TEST_CASE("the tests' sha256 matches the FIPS 180-4 examples", "[support]") {
  CHECK(sha256_hex({}) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const std::string abc = "abc";
  CHECK(sha256_hex({reinterpret_cast<const uint8_t*>(abc.data()), abc.size()}) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("every valid NumPy fixture parses to what numpy.load read", "[npy][fixtures]") {
  const auto text = fixture("expected.json");
  simdjson::dom::parser parser;
  simdjson::dom::array files;
  REQUIRE(!parser.parse(reinterpret_cast<const char*>(text.data()), text.size()).get_array().get(files));
  size_t n_files = 0, n_arrays = 0, n_deflated = 0, n_fortran = 0, n_big = 0;
  for (auto f : files) {
    const std::string file(jv(f["file"].get_string()));
    const std::string format(jv(f["format"].get_string()));
    INFO(file);
    const auto bytes = fixture(file);
    const std::string name = file.substr(file.find('/') + 1);
    auto m = parse_memory(bytes, name);
    REQUIRE(m);
    CHECK(amn::model_format_name(m->format) == format);
    CHECK(!m->details_json.empty());
    simdjson::dom::parser details;
    CHECK(!details.parse(m->details_json).error());  // details_json is a JSON object
    CHECK(!m->details_text.empty());
    auto arrays = jv(f["arrays"].get_array());
    REQUIRE(m->tensors.size() == arrays.size());
    for (auto a : arrays) {
      const std::string tname(jv(a["name"].get_string()));
      INFO(tname);
      const TensorRecord* t = m->find(tname);
      REQUIRE(t);
      CHECK(dtype_name(t->dtype) == jv(a["dtype"].get_string()));
      std::vector<uint64_t> shape;
      for (auto d : jv(a["shape"].get_array())) shape.push_back(jv(d.get_uint64()));
      CHECK(t->shape == shape);
      uint64_t elements = 1;
      for (uint64_t d : shape) elements *= d;
      CHECK(t->elements == elements);
      CHECK(t->big_endian == jv(a["big_endian"].get_bool()));
      CHECK(t->file == 0);
      n_big += t->big_endian;
      // Fortran order: column-major element strides over the NumPy dims (a complex pair
      // stays innermost); C order and 1-d arrays need none.
      const bool fortran = jv(a["fortran_order"].get_bool());
      const bool complex_pair = std::string_view(jv(a["descr"].get_string())).find("c16") != std::string_view::npos;
      const size_t ndim = shape.size() - (complex_pair ? 1 : 0);
      std::vector<uint64_t> strides;
      if (fortran && ndim >= 2) {
        uint64_t s = complex_pair ? 2 : 1;
        for (size_t i = 0; i < ndim; ++i) strides.push_back(s), s *= shape[i];
        if (complex_pair) strides.push_back(1);
        ++n_fortran;
      }
      CHECK(t->strides == strides);

      const bool deflated = format == "npz" && jv(a["deflated"].get_bool());
      CHECK(t->deflated == deflated);
      CHECK(t->offset == jv(a["data_offset"].get_uint64()));
      CHECK(t->nbytes == jv(a["nbytes"].get_uint64()));
      const std::string stored_sha(jv(a["stored_sha256"].get_string()));
      const std::string sha(jv(a["sha256"].get_string()));
      REQUIRE(t->offset + t->nbytes <= bytes.size());
      std::span<const uint8_t> range(bytes.data() + t->offset, static_cast<size_t>(t->nbytes));
      if (!deflated) {
        CHECK(sha256_hex(range) == stored_sha);
        // Contiguous little-endian arrays are already the bytes a lossless conversion writes.
        if (!t->big_endian && t->strides.empty()) CHECK(sha256_hex(range) == sha);
      } else {
        ++n_deflated;
        CHECK(t->inflated_size == jv(a["inflated_size"].get_uint64()));
        CHECK(t->inflated_skip == jv(a["inflated_skip"].get_uint64()));
        CHECK(t->crc32 == jv(a["crc32"].get_uint64()));
        std::vector<uint8_t> inflated(static_cast<size_t>(t->inflated_size));
        REQUIRE(zip::inflate_all(range, inflated, t->crc32, {}));
        const uint64_t item = dtype_info(t->dtype).block_bytes;
        std::span<const uint8_t> payload(inflated.data() + t->inflated_skip, static_cast<size_t>(elements * item));
        CHECK(sha256_hex(payload) == stored_sha);
      }
      ++n_arrays;
    }
    for (auto s : jv(f["skipped"].get_array())) {
      const std::string skipped(jv(s.get_string()));
      CHECK(std::any_of(m->warnings.begin(), m->warnings.end(),
                        [&](const std::string& w) { return w.find("'" + skipped + "'") != std::string::npos; }));
    }
    ++n_files;
  }
  CHECK(n_files >= 40);
  CHECK(n_arrays >= 60);  // every dtype and byte order, and the npz entries
  CHECK(n_deflated >= 9);
  CHECK(n_fortran >= 4);
  CHECK(n_big >= 10);
}

TEST_CASE("Fortran-order arrays get column-major strides", "[npy]") {
  auto f4 = parse_memory(fixture("valid/fortran_f4.npy"), "fortran_f4.npy");
  REQUIRE(f4);
  const auto& t = f4->tensors.at(0);
  CHECK(t.name == "fortran_f4");
  CHECK(t.shape == std::vector<uint64_t>{3, 4});
  CHECK(t.strides == std::vector<uint64_t>{1, 3});
  CHECK(t.nbytes == 48);

  auto be3 = parse_memory(fixture("valid/fortran_i2_be_3d.npy"), "fortran_i2_be_3d.npy");
  REQUIRE(be3);
  CHECK(be3->tensors[0].strides == std::vector<uint64_t>{1, 2, 6});
  CHECK(be3->tensors[0].big_endian);
  CHECK(be3->tensors[0].dtype == DType::I16);

  auto c16 = parse_memory(fixture("valid/fortran_c16.npy"), "fortran_c16.npy");
  REQUIRE(c16);
  CHECK(c16->tensors[0].dtype == DType::F64);
  CHECK(c16->tensors[0].shape == std::vector<uint64_t>{2, 3, 2});
  CHECK(c16->tensors[0].strides == std::vector<uint64_t>{2, 4, 1});
  CHECK(std::any_of(c16->warnings.begin(), c16->warnings.end(),
                    [](const std::string& w) { return w.find("complex128") != std::string::npos; }));

  // NumPy writes a 1-d asfortranarray in C order; the flag stays False.
  auto one = parse_memory(fixture("valid/fortran_1d.npy"), "fortran_1d.npy");
  REQUIRE(one);
  CHECK(one->tensors[0].strides.empty());
}

TEST_CASE("NPY dtypes, byte orders, 0-d and empty arrays", "[npy]") {
  struct Case {
    const char* file;
    DType dtype;
    bool big;
    std::vector<uint64_t> shape;
  };
  const std::vector<Case> cases = {
      {"b1.npy", DType::BOOL, false, {2, 3}},     {"i1.npy", DType::I8, false, {2, 3}},
      {"u8_be.npy", DType::U64, true, {2, 3}},    {"f2_be.npy", DType::F16, true, {2, 3}},
      {"c8_le.npy", DType::C64, false, {2, 3}},   {"c16_be.npy", DType::F64, true, {2, 3, 2}},
      {"scalar_f8.npy", DType::F64, false, {}},   {"scalar_c8_be.npy", DType::C64, true, {}},
      {"empty_f4.npy", DType::F32, false, {0, 3}}, {"empty_1d_i8.npy", DType::I64, true, {0}},
      {"bf16_void.npy", DType::BF16, false, {2, 3}}, {"bf16_jax.npy", DType::BF16, false, {2, 3}},
  };
  for (const auto& c : cases) {
    INFO(c.file);
    auto m = parse_memory(fixture(std::string("valid/") + c.file), c.file);
    REQUIRE(m);
    const auto& t = m->tensors.at(0);
    CHECK(t.dtype == c.dtype);
    CHECK(t.big_endian == c.big);
    CHECK(t.shape == c.shape);
  }
  auto scalar = parse_memory(fixture("valid/scalar_f8.npy"), "scalar_f8.npy");
  REQUIRE(scalar);
  CHECK(scalar->tensors[0].elements == 1);
  CHECK(scalar->tensors[0].nbytes == 8);
  auto empty = parse_memory(fixture("valid/empty_f4.npy"), "empty_f4.npy");
  REQUIRE(empty);
  CHECK(empty->tensors[0].elements == 0);
  CHECK(empty->tensors[0].nbytes == 0);
  auto v3 = parse_memory(fixture("valid/v3_f8_be.npy"), "v3_f8_be.npy");
  REQUIRE(v3);
  CHECK_THAT(v3->details_json, Catch::Contains("\"npy_version\": \"3.0\""));
  CHECK(v3->tensors[0].offset % 64 == 0);
}

TEST_CASE("every hostile NumPy fixture is rejected with its specific error", "[npy][fixtures]") {
  const auto manifest = fixture("broken/manifest.json");
  simdjson::dom::parser parser;
  simdjson::dom::array entries;
  REQUIRE(!parser.parse(reinterpret_cast<const char*>(manifest.data()), manifest.size()).get_array().get(entries));
  size_t count = 0;
  std::vector<std::string> messages;
  for (auto e : entries) {
    const std::string file(jv(e["file"].get_string()));
    const std::string code(jv(e["code"].get_string()));
    const std::string contains(jv(e["contains"].get_string()));
    INFO(file);
    const auto bytes = test::read_file(test::fixture_path("numpy/broken/" + file));
    auto m = parse_memory(bytes, file);
    REQUIRE_FALSE(m);
    INFO(m.error().message);
    CHECK(error_code_name(m.error().code) == code);
    CHECK_THAT(lower(m.error().message), Catch::Contains(lower(contains)));
    // The remote path reaches the same verdict.
    auto s = parse_sparse(bytes, file);
    REQUIRE_FALSE(s.result);
    CHECK(s.result.error().message == m.error().message);
    messages.push_back(m.error().message);
    ++count;
  }
  CHECK(count >= 45);
  std::sort(messages.begin(), messages.end());
  CHECK(std::adjacent_find(messages.begin(), messages.end()) == messages.end());  // each its own message
}

TEST_CASE("the header is parsed as a Python literal", "[npy]") {
  auto v = literal("{'a': (1, 0x1F, 0o17, 0b101, 1_000, -3, +4), \"b\": [True, False, None], 'c': 'x' \"y\",}");
  REQUIRE(v);
  REQUIRE(v->kind == npy::PyKind::dict);
  REQUIRE(v->keys.size() == 3);
  const auto& t = v->items[0];
  REQUIRE(t.kind == npy::PyKind::tuple);
  REQUIRE(t.items.size() == 7);
  CHECK(t.items[1].magnitude == 31);
  CHECK(t.items[2].magnitude == 15);
  CHECK(t.items[3].magnitude == 5);
  CHECK(t.items[4].magnitude == 1000);
  CHECK(t.items[5].negative);
  CHECK(t.items[5].magnitude == 3);
  CHECK_FALSE(t.items[6].negative);
  CHECK(v->items[1].kind == npy::PyKind::list);
  CHECK(v->items[1].items[2].kind == npy::PyKind::none);
  CHECK(v->items[2].text == "xy");  // adjacent strings concatenate

  // Grouping parentheses are not tuples; a trailing comma makes one.
  CHECK(literal("(5)")->kind == npy::PyKind::integer);
  CHECK(literal("(5,)")->kind == npy::PyKind::tuple);
  CHECK(literal("()")->items.empty());
  CHECK(literal("1, 2")->kind == npy::PyKind::tuple);  // a bare tuple at the top level
  CHECK(literal("  {} # comment\n\n")->kind == npy::PyKind::dict);
  CHECK(literal("{'a':\\\n 1}"));  // a line continuation

  // Escapes are decoded; a key hidden inside a string stays a string.
  CHECK(literal(R"('\x41\u00e9\101\n\'')")->text == "A\xC3\xA9" "A\n'");
  CHECK(literal(R"(r'\x41')")->text == "\\x41");
  CHECK(literal(R"(b'\x41')")->kind == npy::PyKind::bytes);
  auto hidden = literal("{'descr': \"'shape': (9,)\"}");
  REQUIRE(hidden);
  CHECK(hidden->keys.size() == 1);

  // Integers beyond 64 bits are literals too, flagged.
  auto big = literal("123456789012345678901234567890");
  REQUIRE(big);
  CHECK(big->too_big);
  CHECK(literal("18446744073709551615")->magnitude == UINT64_MAX);
  CHECK(literal("1.5e3")->kind == npy::PyKind::floating);
  CHECK(literal("2j")->kind == npy::PyKind::floating);

  // Python 2 long suffixes: only where NumPy filters them (NPY 1.0 / 2.0).
  CHECK_FALSE(literal("(3L,)"));
  CHECK(literal("(3L, 4l)", true)->items[1].magnitude == 4);

  for (const char* bad : {"{", "{'a' 1}", "{'a': 1", "(1, 2", "[1 2]", "'abc", "'a\nb'", "1 2", "01", "1__0",
                          "0x", "1a", "abc", "- 'x'", "--1", "{**a}", "'''x'''", "f'x'", "'a' b'b'", "{1, 2}",
                          "'\\N{DASH}'", "'\\x4'", "", "   ", "\0"}) {
    INFO(bad);
    auto r = literal(std::string_view(bad, std::strlen(bad) + (bad[0] == 0 ? 1 : 0)));
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::parse);
    CHECK_THAT(r.error().message, Catch::StartsWith("malformed header literal"));
  }
  // Offsets point into the file: base + position.
  auto at = npy::parse_python_literal("{'a': ?}", 100, {});
  REQUIRE_FALSE(at);
  CHECK(at.error().offset == 106);

  // Nesting is bounded before it can exhaust a (WASM) stack.
  std::string deep(npy::kMaxLiteralDepth, '['), deep_close(npy::kMaxLiteralDepth, ']');
  CHECK(literal(deep + deep_close));
  auto bomb = literal("[" + deep + deep_close + "]");
  REQUIRE_FALSE(bomb);
  CHECK(bomb.error().code == ErrorCode::limit);
}

TEST_CASE("a truncated .npy is an error at every length", "[npy]") {
  const auto bytes = fixture("valid/f4_le.npy");
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    auto m = parse_memory(cut, "f4_le.npy");
    INFO(n);
    REQUIRE_FALSE(m);
    CHECK(m.error().code == ErrorCode::parse);
  }
  // Trailing bytes are ignored, as NumPy does, with a warning.
  auto longer = bytes;
  longer.push_back(0);
  auto m = parse_memory(longer, "f4_le.npy");
  REQUIRE(m);
  CHECK(m->warnings.size() == 1);
}

TEST_CASE("NPY limits hold before anything is allocated", "[npy]") {
  ParseLimits tight;
  tight.max_single_alloc = 64;
  auto m = parse_memory(fixture("valid/f4_le.npy"), "f4_le.npy", tight);
  REQUIRE_FALSE(m);
  CHECK(m.error().code == ErrorCode::limit);
  // A header of exactly the hard maximum is read; one byte more is refused.
  auto header = [](uint64_t text_bytes) {
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }";
    dict.resize(static_cast<size_t>(text_bytes) - 1, ' ');
    dict += '\n';
    std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0};
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(text_bytes >> (8 * i)));
    out.insert(out.end(), dict.begin(), dict.end());
    return out;
  };
  CHECK(parse_memory(header(npy::kHardMaxHeaderText), "x.npy"));
  auto over = parse_memory(header(npy::kHardMaxHeaderText + 1), "x.npy");
  REQUIRE_FALSE(over);
  CHECK(over.error().code == ErrorCode::limit);
}

TEST_CASE("npz entries become tensors by name; other entries are listed", "[npy]") {
  auto m = parse_memory(fixture("valid/savez.npz"), "savez.npz");
  REQUIRE(m);
  CHECK(m->format == amn::ModelFormat::npz);
  CHECK(m->find("deep/layer.0/w"));
  CHECK(m->find("weight"));
  CHECK_FALSE(m->find("weight.npy"));
  for (size_t i = 1; i < m->tensors.size(); ++i) CHECK(m->tensors[i - 1].offset < m->tensors[i].offset);
  auto p = parse_memory(fixture("valid/positional.npz"), "positional.npz");
  REQUIRE(p);
  CHECK(p->find("arr_0"));
  CHECK(p->find("arr_1"));
  auto o = parse_memory(fixture("valid/with_other_entries.npz"), "with_other_entries.npz");
  REQUIRE(o);
  CHECK(o->tensors.size() == 1);
  CHECK(o->warnings.size() == 2);
  CHECK_THAT(o->details_json, Catch::Contains("\"skipped_entries\": [\"README.txt\", \"notes/\"]"));
  auto c = parse_memory(fixture("valid/savez_compressed.npz"), "savez_compressed.npz");
  REQUIRE(c);
  CHECK_THAT(c->details_json, Catch::Contains("\"compressed_entries\": 9"));
}

TEST_CASE("a remote .npy header arrives in one request, a long one in two", "[npy]") {
  const auto f4 = fixture("valid/f4_le.npy");
  auto s = parse_sparse(f4, "f4_le.npy");
  REQUIRE(s.result);
  CHECK(s.rounds == 2);  // one need_bytes round, then the parse
  CHECK(s.bytes_fed == 128);  // the header, not the array data
  const auto long_header = fixture("valid/rank20_f4.npy");
  auto l = parse_sparse(long_header, "rank20_f4.npy");
  REQUIRE(l.result);
  CHECK(l.rounds == 3);
  CHECK(l.bytes_fed <= 128 + l.result->tensors[0].offset);
  CHECK(l.result->tensors[0].offset > 128);
}

TEST_CASE("a remote .npz asks for every local and NPY header in one round", "[npy]") {
  // Small archives arrive whole with the ZIP reader's 64 KiB tail window: one round.
  auto small = parse_sparse(fixture("valid/positional.npz"), "positional.npz");
  REQUIRE(small.result);
  CHECK(small.asks.size() == 1);

  // Larger ones: the tail (end record + central directory), then every local header with
  // its NPY header in one round, stored and DEFLATE entries alike; no array data beyond
  // those 128-byte prefixes.
  for (const char* name : {"remote_stored.npz", "remote_compressed.npz"}) {
    INFO(name);
    const auto bytes = fixture(std::string("valid/") + name);
    auto s = parse_sparse(bytes, name);
    REQUIRE(s.result);
    const auto& m = *s.result;
    const bool with_long_header = m.find("long_header") != nullptr;
    // A third round only for an NPY header that the local-header round (the reader's
    // slack for extra fields, then 128 bytes, nearby ranges merged: coalesce_ranges) did
    // not cover.
    FileSet whole;
    whole.add(name, std::make_unique<MemorySource>(bytes));
    auto archive = zip::read_archive(whole, 0, {}, npy::kFirstRead);
    REQUIRE(archive);
    const auto merged = coalesce_ranges(zip::local_header_ranges(*archive, 0, npy::kFirstRead));
    size_t short_requests = 0;
    for (size_t i = 0; i < archive->entries.size(); ++i) {
      const auto& e = archive->entries[i];
      const TensorRecord* t = m.find(e.name.substr(0, e.name.size() - 4));
      REQUIRE(t);
      const uint64_t header_end = e.data_offset + (t->deflated ? 0 : t->offset - e.data_offset);
      const bool covered = std::any_of(merged.begin(), merged.end(), [&](const ByteRange& r) {
        return r.offset <= e.local_header_offset && header_end <= r.offset + r.length;
      });
      if (!t->deflated && !covered) ++short_requests;
    }
    // The long header's entry lies among small ones: its whole NPY header comes with theirs.
    CHECK(short_requests == 0);
    REQUIRE(s.asks.size() == 2);
    // Entries a, b, c (and long_header) lie before the tail window, within 64 KiB of each
    // other: one range, ending near big's header (its 66 KB of data stay unread: at most
    // the reader's guess of 128 bytes of extra fields and a prefix window of 1154 bytes).
    REQUIRE(s.asks[1].size() == 1);
    CHECK(s.asks[1][0].offset == 0);
    CHECK(s.asks[1][0].length < archive->entries.back().data_offset + 128 + 1154);
    CHECK(m.tensors.size() == (with_long_header ? 5u : 4u));
  }
}
