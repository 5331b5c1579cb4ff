// ZIP reader: the good fixtures (Python's zipfile, numpy, torch) against what zipfile read
// from them, the hostile fixtures (one defect each, each with its own message), the
// sans-IO rounds, and the limits.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

#include <catch2/catch.hpp>
#include <simdjson.h>

#include "formats/zip/zip.h"
#include "support.h"

using namespace amn;

namespace {

std::vector<uint8_t> fixture(const std::string& rel) {
  auto bytes = test::read_file(test::fixture_path("zip/" + rel));
  return bytes;
}

Result<zip::Archive> read_memory(const std::vector<uint8_t>& bytes, const ParseLimits& limits = {},
                                 uint64_t prefix = 0) {
  FileSet set;
  set.add("a.zip", std::make_unique<MemorySource>(bytes));
  return zip::read_archive(set, 0, limits, prefix);
}

// The remote path: a SparseSource fed exactly the ranges asked for, round after round.
struct Remote {
  FileSet set;
  SparseSource* sparse = nullptr;
  const std::vector<uint8_t>& bytes;
  int rounds = 0;
  uint64_t bytes_fed = 0;
  std::vector<size_t> ranges_per_round;

  explicit Remote(const std::vector<uint8_t>& b) : bytes(b) {
    auto owned = std::make_unique<SparseSource>(b.size());
    sparse = owned.get();
    set.add("a.zip", std::move(owned));
  }

  // Calls f(set) until it stops answering need_bytes.
  template <class F>
  auto drive(F f) {
    for (;;) {
      ++rounds;
      auto r = f(set);
      if (r || r.error().code != ErrorCode::need_bytes || rounds > 40) return r;
      ranges_per_round.push_back(r.error().need_bytes.size());
      for (const auto& range : r.error().need_bytes) {
        REQUIRE(range.file == 0);
        REQUIRE(range.offset + range.length <= bytes.size());
        REQUIRE(range.length > 0);
        REQUIRE(sparse->add_copy(range.offset, {bytes.data() + range.offset, static_cast<size_t>(range.length)}));
        bytes_fed += range.length;
      }
    }
  }
};

Result<zip::Archive> read_remote(const std::vector<uint8_t>& bytes, const ParseLimits& limits = {}) {
  Remote remote(bytes);
  return remote.drive([&](FileSet& set) { return zip::read_archive(set, 0, limits); });
}

std::string fnv1a64(std::span<const uint8_t> bytes) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (uint8_t b : bytes) h = (h ^ b) * 0x100000001B3ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string hex(std::span<const uint8_t> bytes) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s += d[b >> 4];
    s += d[b & 15];
  }
  return s;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

template <class T>
T jv(simdjson::simdjson_result<T> r) {
  T v{};
  REQUIRE(!std::move(r).get(v));
  return v;
}

// Reads a whole entry both ways (read_prefix, and inflate_all on the raw bytes for DEFLATE
// entries); they must agree on the verdict and the bytes.
Result<std::vector<uint8_t>> read_whole(FileSet& set, const zip::Entry& e, const ParseLimits& limits = {}) {
  auto via_prefix = zip::read_prefix(set, 0, e, e.uncompressed_size, limits);
  if (e.method == zip::Method::deflate) {
    auto raw = set.read(0, e.data_offset, e.compressed_size);
    REQUIRE(raw);
    std::vector<uint8_t> out(e.uncompressed_size);
    auto s = zip::inflate_all(*raw, out, e.crc32, limits);
    REQUIRE(s.ok() == via_prefix.ok());
    if (!s) {
      CHECK(s.error().code == via_prefix.error().code);
      return std::move(s).error();
    }
    CHECK(out == *via_prefix);
  }
  return via_prefix;
}

}  // namespace

TEST_CASE("zip: CRC-32 is zlib's", "[zip]") {
  const std::string s = "123456789";
  CHECK(zip::crc32_of({reinterpret_cast<const uint8_t*>(s.data()), s.size()}) == 0xCBF43926u);
  CHECK(zip::crc32_of({}) == 0u);
}

TEST_CASE("zip: every good fixture reads as Python's zipfile read it", "[zip][fixtures]") {
  const auto text = fixture("expected.json");
  REQUIRE(!text.empty());
  simdjson::dom::parser parser;
  simdjson::dom::object files;
  REQUIRE(!parser.parse(reinterpret_cast<const char*>(text.data()), text.size()).get_object().get(files));
  size_t archives = 0, entries_checked = 0, deflated = 0, descriptors = 0;
  for (auto [file, expected] : files) {
    INFO(file);
    const auto bytes = fixture("good/" + std::string(file));
    REQUIRE(!bytes.empty());
    auto a = read_memory(bytes);
    REQUIRE(a);
    auto list = jv(expected.get_array());
    REQUIRE(a->entries.size() == list.size());
    FileSet set;
    set.add("a.zip", std::make_unique<MemorySource>(bytes));
    size_t i = 0;
    for (auto x : list) {
      const zip::Entry& e = a->entries[i++];
      INFO(e.name);
      CHECK(e.name == std::string(jv(x["name"].get_string())));
      CHECK(static_cast<uint64_t>(e.method) == jv(x["method"].get_uint64()));
      CHECK(e.compressed_size == jv(x["compressed_size"].get_uint64()));
      CHECK(e.uncompressed_size == jv(x["uncompressed_size"].get_uint64()));
      CHECK(e.crc32 == jv(x["crc32"].get_uint64()));
      CHECK(e.local_header_offset == jv(x["local_header_offset"].get_uint64()));
      CHECK(e.data_offset == jv(x["data_offset"].get_uint64()));
      CHECK(a->find(e.name) == &e);
      auto whole = read_whole(set, e);
      REQUIRE(whole);
      CHECK(fnv1a64(*whole) == std::string(jv(x["fnv1a64"].get_string())));
      auto head = zip::read_prefix(set, 0, e, 16, {});
      REQUIRE(head);
      CHECK(hex(*head) == std::string(jv(x["head_hex"].get_string())));
      if (e.method == zip::Method::deflate) ++deflated;
      if (jv(x["flags"].get_uint64()) & 8) ++descriptors;
      ++entries_checked;
    }
    CHECK(a->find("no such entry") == nullptr);
    // The remote path reads the same archive.
    auto r = read_remote(bytes);
    REQUIRE(r);
    REQUIRE(r->entries.size() == a->entries.size());
    for (size_t k = 0; k < a->entries.size(); ++k) {
      CHECK(r->entries[k].name == a->entries[k].name);
      CHECK(r->entries[k].data_offset == a->entries[k].data_offset);
    }
#ifndef __EMSCRIPTEN__
    // So does a local file, whose local headers and prefixes are copied out with pread
    // (MmapSource::read_into) instead of through the mapping.
    FileSet local;
    auto mapped = MmapSource::open(test::fixture_path("zip/good/" + std::string(file)));
    REQUIRE(mapped);
    CHECK((*mapped)->native_fd() >= 0);
    local.add("a.zip", std::move(*mapped));
    auto l = zip::read_archive(local, 0, {}, 128);
    REQUIRE(l);
    REQUIRE(l->entries.size() == a->entries.size());
    for (size_t k = 0; k < a->entries.size(); ++k) {
      CHECK(l->entries[k].name == a->entries[k].name);
      CHECK(l->entries[k].data_offset == a->entries[k].data_offset);
      auto x = zip::read_prefix(local, 0, l->entries[k], 64, {});
      auto y = zip::read_prefix(set, 0, a->entries[k], 64, {});
      REQUIRE(x);
      REQUIRE(y);
      CHECK(*x == *y);
    }
    std::vector<uint8_t> past(4);  // a copy past the end is an io error, as a read is
    auto st = local.read_into(0, local.size(0) - 2, past);
    REQUIRE(!st);
    CHECK(st.error().code == ErrorCode::io);
#endif
    ++archives;
  }
  CHECK(archives == 10);
  CHECK(entries_checked >= 30);
  CHECK(deflated >= 8);
  CHECK(descriptors >= 7);  // descriptor.zip and torch_save.pth
}

TEST_CASE("zip: every hostile fixture is refused with its own error", "[zip][fixtures]") {
  const auto manifest = fixture("bad/manifest.json");
  REQUIRE(!manifest.empty());
  simdjson::dom::parser parser;
  simdjson::dom::array items;
  REQUIRE(!parser.parse(reinterpret_cast<const char*>(manifest.data()), manifest.size()).get_array().get(items));
  std::vector<std::string> messages;
  size_t archive_stage = 0, read_stage = 0;
  for (auto item : items) {
    const std::string file(jv(item["file"].get_string()));
    const std::string code(jv(item["code"].get_string()));
    const std::string contains(jv(item["contains"].get_string()));
    const std::string stage(jv(item["stage"].get_string()));
    INFO(file);
    const auto bytes = fixture("bad/" + file);
    auto a = read_memory(bytes);
    Error err;
    if (stage == "archive") {
      REQUIRE_FALSE(a);
      err = a.error();
      // The remote path reaches the same verdict.
      auto r = read_remote(bytes);
      REQUIRE_FALSE(r);
      CHECK(r.error().message == err.message);
      ++archive_stage;
    } else {
      REQUIRE(a);  // the defect shows only when the entry is read
      FileSet set;
      set.add("a.zip", std::make_unique<MemorySource>(bytes));
      bool failed = false;
      for (const auto& e : a->entries) {
        auto w = read_whole(set, e);
        if (!w) {
          err = w.error();
          // read_prefix names the entry; inflate_all only knows bytes: both carry the defect.
          auto p = zip::read_prefix(set, 0, e, e.uncompressed_size, {});
          REQUIRE_FALSE(p);
          err = p.error();
          failed = true;
          break;
        }
      }
      REQUIRE(failed);
      ++read_stage;
    }
    CHECK(error_code_name(err.code) == code);
    CHECK_THAT(lower(err.message), Catch::Contains(lower(contains)));
    CHECK(err.message.rfind("zip: ", 0) == 0);
    messages.push_back(err.message);
  }
  CHECK(archive_stage >= 40);
  CHECK(read_stage >= 6);
  std::sort(messages.begin(), messages.end());
  CHECK(std::adjacent_find(messages.begin(), messages.end()) == messages.end());
}

TEST_CASE("zip: remote reads take three rounds: end records, central directory, local headers", "[zip]") {
  const auto bytes = fixture("good/rounds.zip");
  REQUIRE(bytes.size() > 70000);  // its 64 KiB comment pushes the central directory out of the tail window
  Remote remote(bytes);
  auto a = remote.drive([&](FileSet& set) { return zip::read_archive(set, 0, {}, 128); });
  REQUIRE(a);
  CHECK(remote.rounds == 4);  // three need_bytes rounds, then the answer
  REQUIRE(remote.ranges_per_round.size() == 3);
  CHECK(remote.ranges_per_round[0] == 1);  // the tail window
  CHECK(remote.ranges_per_round[1] == 1);  // the central directory
  // Every local header in one round, and in one range: the three members lie within
  // kCoalesceGap of each other, so the bytes between them come along.
  CHECK(remote.ranges_per_round[2] == 1);
  CHECK(remote.bytes_fed < bytes.size());  // the comment's bytes are read once (in the tail)
  // The NPY headers were prefetched with the local headers: reading them asks for nothing.
  for (const auto& e : a->entries) {
    auto head = zip::read_prefix(remote.set, 0, e, 128, {});
    REQUIRE(head);
    CHECK(head->size() == 128);
    CHECK(std::memcmp(head->data(), "\x93NUMPY", 6) == 0);
  }
  // local_header_ranges names the same ranges the archive read fetched.
  const auto ranges = zip::local_header_ranges(*a, 0, 128);
  REQUIRE(ranges.size() == a->entries.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    CHECK(ranges[i].offset == a->entries[i].local_header_offset);
    const auto& e = a->entries[i];
    // A DEFLATE entry's 128 bytes may need up to 128 + 2 + 1024 compressed bytes.
    const uint64_t data = std::min<uint64_t>(e.compressed_size, e.method == zip::Method::stored ? 128 : 1154);
    CHECK(ranges[i].length == e.data_offset - e.local_header_offset + data);
  }
}

namespace {

// A stored archive of `sizes.size()` members ("m0", "m1", ...) laid out one after another,
// as numpy and torch write them; member data is zeros.
std::vector<uint8_t> stored_archive(const std::vector<uint32_t>& sizes) {
  std::vector<uint8_t> out, cd;
  auto le = [](std::vector<uint8_t>& v, uint64_t x, int n) {
    for (int i = 0; i < n; ++i) v.push_back(static_cast<uint8_t>(x >> (8 * i)));
  };
  std::vector<uint8_t> zeros;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string name = "m" + std::to_string(i);
    zeros.assign(sizes[i], 0);
    const uint32_t crc = zip::crc32_of(zeros);
    const uint64_t at = out.size();
    le(out, 0x04034b50, 4), le(out, 20, 2), le(out, 0, 2), le(out, 0, 2), le(out, 0, 4);
    le(out, crc, 4), le(out, sizes[i], 4), le(out, sizes[i], 4), le(out, name.size(), 2), le(out, 0, 2);
    out.insert(out.end(), name.begin(), name.end());
    out.insert(out.end(), zeros.begin(), zeros.end());
    le(cd, 0x02014b50, 4), le(cd, 20, 2), le(cd, 20, 2), le(cd, 0, 2), le(cd, 0, 2), le(cd, 0, 4);
    le(cd, crc, 4), le(cd, sizes[i], 4), le(cd, sizes[i], 4), le(cd, name.size(), 2), le(cd, 0, 2);
    le(cd, 0, 2), le(cd, 0, 2), le(cd, 0, 2), le(cd, 0, 4), le(cd, at, 4);
    cd.insert(cd.end(), name.begin(), name.end());
  }
  const uint64_t cd_at = out.size();
  out.insert(out.end(), cd.begin(), cd.end());
  le(out, 0x06054b50, 4), le(out, 0, 2), le(out, 0, 2), le(out, sizes.size(), 2), le(out, sizes.size(), 2);
  le(out, cd.size(), 4), le(out, cd_at, 4), le(out, 0, 2);
  return out;
}

}  // namespace

TEST_CASE("zip: local headers less than kCoalesceGap apart come in one range", "[zip]") {
  // 300 members of 2 KiB: 600 KiB before the central directory, far more than the tail
  // window holds, each header 2 KiB from the next: one range for all of them.
  const auto small = stored_archive(std::vector<uint32_t>(300, 2048));
  REQUIRE(small.size() > 300 * 2048);
  Remote near(small);
  auto a = near.drive([&](FileSet& set) { return zip::read_archive(set, 0, {}); });
  REQUIRE(a);
  CHECK(a->entries.size() == 300);
  REQUIRE(near.ranges_per_round.size() == 2);  // the tail, then the local headers
  CHECK(near.ranges_per_round[1] == 1);
  // Members 100 KiB long: each header is more than kCoalesceGap from the next, so each is
  // its own range (the data between is not worth fetching), still in one round.
  const auto big = stored_archive(std::vector<uint32_t>(12, 100 * 1024));
  Remote far(big);
  auto b = far.drive([&](FileSet& set) { return zip::read_archive(set, 0, {}); });
  REQUIRE(b);
  REQUIRE(far.ranges_per_round.size() == 2);
  CHECK(far.ranges_per_round[1] == 12);
  CHECK(far.bytes_fed < 70 * 1024 + 12 * 1024);  // the tail and the headers, no member's data
  // Both read as a local read does.
  for (const auto* bytes : {&small, &big}) {
    const auto local = read_memory(*bytes);
    REQUIRE(local);
    const auto& remote = bytes == &small ? *a : *b;
    for (size_t i = 0; i < remote.entries.size(); ++i) CHECK(remote.entries[i].data_offset == local->entries[i].data_offset);
  }
}

TEST_CASE("zip: a small archive arrives in the first read", "[zip]") {
  for (const char* name : {"good/stored.zip", "good/torch_save.pth", "good/zip64_full.zip"}) {
    INFO(name);
    const auto bytes = fixture(name);
    Remote remote(bytes);
    auto a = remote.drive([&](FileSet& set) { return zip::read_archive(set, 0, {}); });
    REQUIRE(a);
    CHECK(remote.rounds == 2);
    CHECK(remote.bytes_fed == bytes.size());
  }
}

TEST_CASE("zip: DEFLATE prefixes are read remotely in growing chunks", "[zip]") {
  const auto bytes = fixture("good/deflated.zip");
  Remote remote(bytes);
  auto a = remote.drive([&](FileSet& set) { return zip::read_archive(set, 0, {}); });
  REQUIRE(a);
  const auto local = read_memory(bytes);
  REQUIRE(local);
  FileSet mem;
  mem.add("a.zip", std::make_unique<MemorySource>(bytes));
  for (const auto& e : a->entries) {
    for (uint64_t n : {uint64_t{1}, uint64_t{100}, uint64_t{5000}, e.uncompressed_size}) {
      Remote fresh(bytes);
      auto p = fresh.drive([&](FileSet& set) { return zip::read_prefix(set, 0, e, n, {}); });
      REQUIRE(p);
      auto m = zip::read_prefix(mem, 0, e, n, {});
      REQUIRE(m);
      CHECK(*p == *m);
      CHECK(p->size() == std::min(n, e.uncompressed_size));
      CHECK(fresh.rounds <= 3);
    }
  }
}

TEST_CASE("zip: the decompression ratio limit", "[zip]") {
  const auto bytes = fixture("good/deflated.zip");
  ParseLimits tight;
  tight.max_decompression_ratio = 50;  // text.txt is 14:1, zeros.bin 500:1
  auto a = read_memory(bytes, tight);
  REQUIRE_FALSE(a);
  CHECK(a.error().code == ErrorCode::limit);
  CHECK_THAT(a.error().message, Catch::Contains("'zeros.bin' declares 20000 bytes"));
  // The default reads it; read_prefix and inflate_all apply a tighter limit on their own.
  auto ok = read_memory(bytes);
  REQUIRE(ok);
  const zip::Entry* zeros = ok->find("zeros.bin");
  REQUIRE(zeros);
  FileSet set;
  set.add("a.zip", std::make_unique<MemorySource>(bytes));
  auto p = zip::read_prefix(set, 0, *zeros, 10, tight);
  REQUIRE_FALSE(p);
  CHECK(p.error().code == ErrorCode::limit);
  auto raw = set.read(0, zeros->data_offset, zeros->compressed_size);
  REQUIRE(raw);
  std::vector<uint8_t> out(zeros->uncompressed_size);
  auto s = zip::inflate_all(*raw, out, zeros->crc32, tight);
  REQUIRE_FALSE(s);
  CHECK(s.error().code == ErrorCode::limit);
  CHECK(zip::inflate_all(*raw, out, zeros->crc32, {}));
  CHECK(std::all_of(out.begin(), out.end(), [](uint8_t b) { return b == 0; }));
  // A real bomb (10 MB of zeros, ~1028:1) passes once the caller allows that ratio, and its
  // output is still bounded by the declared size.
  const auto bomb = fixture("bad/ratio_real.zip");
  ParseLimits loose;
  loose.max_decompression_ratio = 2000;
  auto b = read_memory(bomb, loose);
  REQUIRE(b);
  FileSet bset;
  bset.add("a.zip", std::make_unique<MemorySource>(bomb));
  auto whole = zip::read_prefix(bset, 0, b->entries[0], UINT64_MAX, loose);
  REQUIRE(whole);
  CHECK(whole->size() == 10'000'000);
}

TEST_CASE("zip: item and allocation limits", "[zip]") {
  const auto bytes = fixture("good/stored.zip");
  ParseLimits few;
  few.max_item_count = 2;
  auto a = read_memory(bytes, few);
  REQUIRE_FALSE(a);
  CHECK(a.error().code == ErrorCode::limit);
  CHECK_THAT(a.error().message, Catch::Contains("5 entries exceed the item limit of 2"));
  ParseLimits small;
  small.max_single_alloc = 100;
  auto b = read_memory(bytes, small);
  REQUIRE_FALSE(b);
  CHECK(b.error().code == ErrorCode::limit);
  CHECK_THAT(b.error().message, Catch::Contains("central directory of"));
  auto ok = read_memory(bytes);
  REQUIRE(ok);
  FileSet set;
  set.add("a.zip", std::make_unique<MemorySource>(bytes));
  ParseLimits tiny;
  tiny.max_single_alloc = 10;
  auto p = zip::read_prefix(set, 0, *ok->find("dir/random.bin"), 300, tiny);
  REQUIRE_FALSE(p);
  CHECK(p.error().code == ErrorCode::limit);
  CHECK(zip::read_prefix(set, 0, *ok->find("dir/random.bin"), 10, tiny));
}

TEST_CASE("zip: every truncation of an archive is refused, none crashes", "[zip]") {
  for (const char* name : {"good/deflated.zip", "good/zip64_full.zip", "good/descriptor.zip"}) {
    INFO(name);
    const auto bytes = fixture(name);
    for (size_t n = 0; n < bytes.size(); ++n) {
      std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
      auto a = read_memory(cut);
      INFO(n);
      REQUIRE_FALSE(a);
      CHECK(a.error().code == ErrorCode::parse);
    }
  }
}

TEST_CASE("zip: inflate_all refuses a wrong output size and a wrong CRC", "[zip]") {
  const auto bytes = fixture("good/deflated.zip");
  auto a = read_memory(bytes);
  REQUIRE(a);
  const zip::Entry* text = a->find("text.txt");
  REQUIRE(text);
  FileSet set;
  set.add("a.zip", std::make_unique<MemorySource>(bytes));
  auto raw = set.read(0, text->data_offset, text->compressed_size);
  REQUIRE(raw);
  std::vector<uint8_t> out(text->uncompressed_size);
  CHECK(zip::inflate_all(*raw, out, text->crc32, {}));
  auto bad_crc = zip::inflate_all(*raw, out, text->crc32 ^ 1, {});
  REQUIRE_FALSE(bad_crc);
  CHECK_THAT(bad_crc.error().message, Catch::Contains("CRC-32"));
  std::vector<uint8_t> shorter(text->uncompressed_size - 1);
  auto s = zip::inflate_all(*raw, shorter, text->crc32, {});
  REQUIRE_FALSE(s);
  CHECK_THAT(s.error().message, Catch::Contains("more than the declared"));
  std::vector<uint8_t> longer(text->uncompressed_size + 1);
  auto l = zip::inflate_all(*raw, longer, text->crc32, {});
  REQUIRE_FALSE(l);
  CHECK_THAT(l.error().message, Catch::Contains("ends after"));
}
