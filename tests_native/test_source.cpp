#include <catch2/catch.hpp>

#include <algorithm>

#include "core/source.h"

using namespace amn;

TEST_CASE("SparseSource answers need_bytes with exactly the missing gaps", "[source]") {
  SparseSource s(100);
  auto r = s.read(3, 10, 20);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::need_bytes);
  REQUIRE(r.error().need_bytes.size() == 1);
  CHECK(r.error().need_bytes[0].file == 3);
  CHECK(r.error().need_bytes[0].offset == 10);
  CHECK(r.error().need_bytes[0].length == 20);

  std::vector<uint8_t> bytes(100);
  for (int i = 0; i < 100; ++i) bytes[i] = static_cast<uint8_t>(i);
  REQUIRE(s.add_copy(15, {bytes.data() + 15, 5}));
  r = s.read(0, 10, 20);
  REQUIRE_FALSE(r);
  REQUIRE(r.error().need_bytes.size() == 2);
  CHECK(r.error().need_bytes[0].offset == 10);
  CHECK(r.error().need_bytes[0].length == 5);
  CHECK(r.error().need_bytes[1].offset == 20);
  CHECK(r.error().need_bytes[1].length == 10);
}

TEST_CASE("SparseSource coalesces adjacent chunks into one view", "[source]") {
  std::vector<uint8_t> bytes(64);
  for (int i = 0; i < 64; ++i) bytes[i] = static_cast<uint8_t>(i * 3);
  SparseSource s(64);
  REQUIRE(s.add_copy(0, {bytes.data(), 16}));
  REQUIRE(s.add_copy(16, {bytes.data() + 16, 16}));
  REQUIRE(s.add_copy(28, {bytes.data() + 28, 36}));  // overlaps the previous chunk
  auto r = s.read(0, 4, 56);
  REQUIRE(r);
  CHECK(std::equal(r->begin(), r->end(), bytes.begin() + 4));
  CHECK(s.bytes_held() == 64);
  s.clear();
  CHECK(s.bytes_held() == 0);
  CHECK_FALSE(s.read(0, 0, 1));
}

TEST_CASE("SparseSource::take hands over exactly one supplied chunk, once", "[source]") {
  SparseSource s(64);
  std::vector<uint8_t> bytes(64);
  for (int i = 0; i < 64; ++i) bytes[i] = static_cast<uint8_t>(i);
  REQUIRE(s.add_copy(0, {bytes.data(), 16}));
  REQUIRE(s.add_copy(32, {bytes.data() + 32, 32}));
  CHECK_FALSE(s.take(0, 8));    // part of a chunk: stays
  CHECK_FALSE(s.take(16, 16));  // not supplied
  auto taken = s.take(32, 32);
  REQUIRE(taken);
  CHECK(std::equal(taken->get(), taken->get() + 32, bytes.begin() + 32));
  CHECK(s.bytes_held() == 16);  // the source no longer holds it: reading it asks again
  auto again = s.read(0, 32, 32);
  REQUIRE_FALSE(again);
  CHECK(again.error().code == ErrorCode::need_bytes);
  MemorySource m(bytes);
  CHECK_FALSE(m.take(0, 64));  // bytes the caller keeps are never taken
}

TEST_CASE("Reads past the end are io errors, never need_bytes", "[source]") {
  SparseSource s(10);
  auto r = s.read(0, 5, 6);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::io);
  CHECK_FALSE(s.add_copy(8, std::vector<uint8_t>(3)));
  std::vector<uint8_t> b(4);
  MemorySource m(b);
  CHECK(m.read(0, 4, 0));
  CHECK_FALSE(m.read(0, ~uint64_t{0}, 2));  // offset + length overflows
}

TEST_CASE("coalesce_ranges: sorted per file, merged when at most max_gap apart", "[source]") {
  const std::vector<ByteRange> in = {
      {0, 500, 10},   // 490 bytes after [0,10): merged with a gap of 490 <= 490
      {0, 0, 10},
      {1, 0, 10},     // another file: never merged with file 0
      {0, 1000, 0},   // empty: dropped
      {0, 505, 100},  // overlaps [500,510)
      {0, 1096, 4},   // 491 bytes after [500,605): apart
  };
  const auto out = coalesce_ranges(in, 490);
  REQUIRE(out.size() == 3);
  CHECK((out[0].file == 0 && out[0].offset == 0 && out[0].length == 605));
  CHECK((out[1].file == 0 && out[1].offset == 1096 && out[1].length == 4));
  CHECK((out[2].file == 1 && out[2].offset == 0 && out[2].length == 10));
  // A gap of 0 merges only overlapping or touching ranges.
  const auto touching = coalesce_ranges({{0, 0, 10}, {0, 10, 5}, {0, 16, 1}}, 0);
  REQUIRE(touching.size() == 2);
  CHECK(touching[0].length == 15);
  // The default: kCoalesceGap, 64 KiB.
  CHECK(coalesce_ranges({{0, 0, 1}, {0, 1 + kCoalesceGap, 1}}).size() == 1);
  CHECK(coalesce_ranges({{0, 0, 1}, {0, 2 + kCoalesceGap, 1}}).size() == 2);
}
