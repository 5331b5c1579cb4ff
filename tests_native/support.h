// Helpers shared by the unit tests.
#pragma once
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <simdjson.h>

#include "core/error.h"
#include "core/model.h"
#include "core/source.h"
#include "convert/execute.h"
#include "session/open.h"

namespace amn::test {

inline std::string fixture_path(const std::string& rel) { return std::string(AMN_FIXTURES_DIR) + "/" + rel; }

inline std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A safetensors file from a header text (padded like the reference writer) and data.
inline std::vector<uint8_t> make_safetensors(std::string header, const std::vector<uint8_t>& data,
                                             bool pad = true) {
  if (pad) header.append((8 - header.size() % 8) % 8, ' ');
  // One allocation, copies into place (GCC 12 warned, -Wstringop-overread, a false
  // positive, on inserting the header after an 8-byte vector).
  const uint64_t n = header.size();
  std::vector<uint8_t> out(8 + header.size() + data.size());
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  std::copy(header.begin(), header.end(), out.begin() + 8);
  std::copy(data.begin(), data.end(), out.begin() + 8 + static_cast<std::ptrdiff_t>(header.size()));
  return out;
}

// Opens in-memory files (name, bytes) through the sans-IO path with a SparseSource,
// feeding exactly the ranges the parser asks for. Counts the rounds it took.
struct SparseOpen {
  Result<Model> model = make_error(ErrorCode::internal, "not run");
  int rounds = 0;
  uint64_t bytes_fed = 0;
};

inline SparseOpen open_sparse(const std::vector<std::pair<std::string, std::vector<uint8_t>>>& files) {
  FileSet set;
  std::vector<SparseSource*> sources;
  for (const auto& [name, bytes] : files) {
    auto s = std::make_unique<SparseSource>(bytes.size());
    sources.push_back(s.get());
    set.add(name, std::move(s));
  }
  SparseOpen out;
  for (out.rounds = 1; out.rounds < 10; ++out.rounds) {
    out.model = open_model(set, {});
    if (out.model || out.model.error().code != ErrorCode::need_bytes) return out;
    for (const auto& r : out.model.error().need_bytes) {
      const auto& bytes = files[r.file].second;
      (void)sources[r.file]->add_copy(r.offset, {bytes.data() + r.offset, static_cast<size_t>(r.length)});
      out.bytes_fed += r.length;
    }
  }
  return out;
}

// One file fed to `parse` (FileSet& -> Result<T>) through a SparseSource, exactly the
// ranges it asks for, round after round, as the JS side does: the remote path.
template <class T>
struct Fed {
  Result<T> result = make_error(ErrorCode::internal, "not run");
  int rounds = 0;
  uint64_t bytes_fed = 0;
  std::vector<std::vector<ByteRange>> asks;  // each round's need_bytes
};

template <class Parse>
auto feed_sparse(const std::vector<uint8_t>& bytes, const std::string& name, Parse parse) {
  using T = std::decay_t<decltype(parse(std::declval<FileSet&>()).value())>;
  FileSet set;
  auto owned = std::make_unique<SparseSource>(bytes.size());
  SparseSource* sparse = owned.get();
  set.add(name, std::move(owned));
  Fed<T> out;
  for (out.rounds = 1; out.rounds < 20; ++out.rounds) {
    out.result = parse(set);
    if (out.result || out.result.error().code != ErrorCode::need_bytes) return out;
    out.asks.push_back(out.result.error().need_bytes);
    for (const auto& r : out.result.error().need_bytes) {
      REQUIRE(r.offset + r.length <= bytes.size());
      REQUIRE(sparse->add_copy(r.offset, {bytes.data() + r.offset, static_cast<size_t>(r.length)}));
      out.bytes_fed += r.length;
    }
  }
  return out;
}

// A simdjson value, failing the test when it is absent or of another type.
template <class T>
T jv(simdjson::simdjson_result<T> r) {
  T v{};
  const auto err = std::move(r).get(v);
  REQUIRE(!err);
  return v;
}

inline std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// SHA-256 as hex (core/digest.h): the fixtures' generators record hashes of what the
// producers load (numpy.load, torch.load).
std::string sha256_hex(std::span<const uint8_t> data);

// Collects a plan's output (header and pieces) in memory.
struct VecSink : Sink {
  std::vector<uint8_t> bytes;
  Status write(std::span<const uint8_t> b) override {
    bytes.insert(bytes.end(), b.begin(), b.end());
    return {};
  }
};

inline Result<Model> open_memory(const std::vector<uint8_t>& bytes, const std::string& name = "model.safetensors") {
  return open_sparse({{name, bytes}}).model;
}

}  // namespace amn::test
