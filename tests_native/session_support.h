// Driving an amn::Session sans-IO in tests, as the npm package does: each step that asks
// for bytes gets exactly those ranges from the file in memory.
#pragma once
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include <catch2/catch.hpp>

#include "session/session.h"

namespace amn::test {

// Runs `step` until it stops asking for bytes, feeding each range from `file`.
inline Status feed(Session& s, const std::vector<uint8_t>& file, const std::function<Status()>& step) {
  for (int round = 0; round < 8; ++round) {
    Status st = step();
    if (st || st.error().code != ErrorCode::need_bytes) return st;
    for (const auto& r : st.error().need_bytes) {
      SparseSource::Buffer b(static_cast<uint8_t*>(std::malloc(r.length)), [](uint8_t* p) { std::free(p); });
      std::memcpy(b.get(), file.data() + r.offset, r.length);
      REQUIRE(s.add_bytes(r.file, r.offset, std::move(b), r.length));
    }
  }
  return make_error(ErrorCode::internal, "too many rounds");
}

// The whole output of a planned forget or convert, as the JS side writes it: every
// prepare, then the header and each piece, fed from `file`.
inline std::vector<uint8_t> planned_output(Session& s, const std::vector<uint8_t>& file) {
  for (size_t i = 0; i < s.prepare_count(); ++i) REQUIRE(feed(s, file, [&] { return s.run_prepare(i); }));
  REQUIRE(s.finish_prepared());
  std::vector<uint8_t> out = s.output_header();
  for (size_t i = 0; i < s.piece_count(); ++i) {
    REQUIRE(feed(s, file, [&] { return s.run_piece(i); }));
    out.insert(out.end(), s.piece_output().begin(), s.piece_output().end());
    s.release_data();
  }
  return out;
}

}  // namespace amn::test
