// Driving an amn::Session sans-IO in tests, as the npm package does: each step that asks
// for bytes gets exactly those ranges from the file in memory.
#pragma once
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "formats/gguf/describe.h"
#include "session/open.h"
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

struct StoredTensor {
  std::string type;  // "Q4_K", "F32"
  std::vector<uint8_t> bytes;
};

// The tensors of a GGUF (by name, whatever their order) and its general.file_type.
inline std::map<std::string, StoredTensor> tensors_of(const std::vector<uint8_t>& file, uint64_t* file_type = nullptr) {
  FileSet set;
  set.add("x.gguf", std::make_unique<MemorySource>(std::span<const uint8_t>(file)));
  auto m = open_model(set, {});
  REQUIRE(m);
  std::map<std::string, StoredTensor> out;
  for (const auto& t : m->tensors) {
    out[t.name] = {std::string(stored_type_name(t)), std::vector<uint8_t>(file.begin() + t.offset, file.begin() + t.offset + t.nbytes)};
  }
  if (file_type) {
    const GgufValue* v = static_cast<const GgufState&>(*m->format_state).header.find("general.file_type");
    REQUIRE(v);
    *file_type = v->as_uint().value_or(0);
  }
  return out;
}

}  // namespace amn::test
