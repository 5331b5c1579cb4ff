// llama.cpp importance matrices (formats/gguf/imatrix.h): the values llama-quantize's
// load_imatrix makes of each form, and one handcrafted broken file per refusal
// (fixtures/fuzz/imatrix, written by fixtures/gguf_ftype/make_imatrix.py).
#include <catch2/catch.hpp>

#include <filesystem>

#include "formats/gguf/imatrix.h"
#include "support.h"

using namespace amn;
using amn::test::fixture_path;
using amn::test::read_file;

namespace {

Result<ImportanceMatrix> parse_fixture(const std::string& name) {
  return parse_imatrix(read_file(fixture_path("fuzz/imatrix/" + name)), {});
}

}  // namespace

TEST_CASE("imatrix: the GGUF form divides each expert's sums by its count", "[imatrix]") {
  auto m = parse_fixture("experts_counts.gguf");
  REQUIRE(m);
  CHECK(!m->legacy);
  CHECK(m->chunk_count == 4);
  CHECK(m->datasets == std::vector<std::string>{"tiny-calibration.txt"});
  REQUIRE(m->entries.size() == 1);
  // Expert 0 counted 2: sums / 2; expert 1 counted 0: ones (load_imatrix).
  CHECK(m->entries.at("blk.0.ffn_up_exps.weight") == std::vector<float>{1, 2, 3, 4, 1, 1, 1, 1});
}

TEST_CASE("imatrix: a GGUF without sums and counts has no entries", "[imatrix]") {
  auto m = parse_fixture("no_pairs.gguf");
  REQUIRE(m);
  CHECK(m->entries.empty());  // llama-quantize then passes no matrix on
}

TEST_CASE("imatrix: the legacy form divides by ncall and reads the trailer", "[imatrix]") {
  auto m = parse_fixture("legacy_trailer.dat");
  REQUIRE(m);
  CHECK(m->legacy);
  CHECK(m->entries.at("a.weight") == std::vector<float>{1, 2});  // ncall 2
  CHECK(m->entries.at("b.weight") == std::vector<float>{3});     // ncall 0: as stored
  CHECK(m->chunk_count == 7);
  CHECK(m->datasets == std::vector<std::string>{"data"});
  m = parse_fixture("legacy_no_trailer.dat");
  REQUIRE(m);
  CHECK(m->chunk_count == 0);
  CHECK(m->datasets.empty());
}

TEST_CASE("imatrix: the fixtures' two forms give the same matrix", "[imatrix]") {
  auto g = parse_imatrix(read_file(fixture_path("gguf_ftype/tiny.imatrix.gguf")), {});
  auto d = parse_imatrix(read_file(fixture_path("gguf_ftype/tiny.imatrix.dat")), {});
  REQUIRE(g);
  REQUIRE(d);
  CHECK(g->entries.size() == 22);
  CHECK(g->entries == d->entries);
  CHECK(g->chunk_count == d->chunk_count);
  CHECK(g->datasets == d->datasets);
}

TEST_CASE("imatrix: every broken file is refused with its code", "[imatrix]") {
  size_t seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(fixture_path("fuzz/imatrix"))) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("broken_", 0) != 0) continue;
    INFO(name);
    auto m = parse_fixture(name);
    REQUIRE(!m);
    CHECK(m.error().code == ErrorCode::parse);
    CHECK(m.error().message.rfind("imatrix: ", 0) == 0);
    ++seen;
  }
  CHECK(seen == 12);
}

TEST_CASE("imatrix: the limits hold", "[imatrix]") {
  ParseLimits tight;
  tight.max_single_alloc = 8;  // a.weight's 3 values are 12 bytes
  auto m = parse_imatrix(read_file(fixture_path("fuzz/imatrix/legacy_no_trailer.dat")), tight);
  REQUIRE(!m);
  CHECK(m.error().code == ErrorCode::limit);
}
