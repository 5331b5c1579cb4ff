// libFuzzer target: the ZIP reader through both source kinds (memory, and the sparse,
// need_bytes-driven one, which must converge and reach the same verdict), then checks of
// what was read: every entry lies inside the file, before the central directory and apart
// from the others, and reading its contents (a prefix, the whole entry, inflate_all) stays
// within the declared size whatever the bytes. Any crash, leak or sanitizer report is a bug.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "formats/zip/zip.h"
#include "sparse_feed.h"

using namespace amn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ParseLimits limits;
  limits.max_single_alloc = 1 << 20;  // keeps each input fast; the reader's bounds are what is tested
  limits.max_total_bytes = 4 << 20;
  FileSet set;
  set.add("a.zip", std::make_unique<MemorySource>(std::span<const uint8_t>(data, size)));
  auto a = zip::read_archive(set, 0, limits, 64);
  auto s = fuzz::parse_sparse(data, size, "a.zip", [&](FileSet& fs) { return zip::read_archive(fs, 0, limits, 64); });
  if (a.ok() != s.ok()) __builtin_trap();
  if (!a) {
    if (a.error().message != s.error().message) __builtin_trap();
    return 0;
  }
  if (a->entries.size() != s->entries.size()) __builtin_trap();
  std::vector<const zip::Entry*> by_offset;
  for (const auto& e : a->entries) {
    if (e.data_offset < e.local_header_offset + 30 || e.data_offset > size) __builtin_trap();
    if (e.compressed_size > size - e.data_offset) __builtin_trap();
    if (e.method == zip::Method::stored && e.compressed_size != e.uncompressed_size) __builtin_trap();
    if (a->find(e.name) != &e) __builtin_trap();  // names are unique
    by_offset.push_back(&e);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](auto* x, auto* y) { return x->local_header_offset < y->local_header_offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i]->local_header_offset < by_offset[i - 1]->data_offset + by_offset[i - 1]->compressed_size)
      __builtin_trap();
  }
  for (size_t i = 0; i < a->entries.size() && i < 8; ++i) {
    const zip::Entry& e = a->entries[i];
    auto head = zip::read_prefix(set, 0, e, 64, limits);
    if (head && head->size() != std::min<uint64_t>(64, e.uncompressed_size)) __builtin_trap();
    // The remote read of the same prefix converges on the same bytes.
    auto remote = fuzz::parse_sparse(data, size, "a.zip", [&](FileSet& fs) { return zip::read_prefix(fs, 0, e, 64, limits); });
    if (head.ok() != remote.ok() || (head && *head != *remote)) __builtin_trap();
    if (e.uncompressed_size > (1u << 20)) continue;
    auto whole = zip::read_prefix(set, 0, e, e.uncompressed_size, limits);
    if (whole && whole->size() != e.uncompressed_size) __builtin_trap();
    if (whole && zip::crc32_of(*whole) != e.crc32) __builtin_trap();
    if (e.method == zip::Method::deflate) {
      std::vector<uint8_t> out(e.uncompressed_size);
      auto st = zip::inflate_all({data + e.data_offset, static_cast<size_t>(e.compressed_size)}, out, e.crc32, limits);
      if (st.ok() != whole.ok() || (st && out != *whole)) __builtin_trap();
    }
  }
  return 0;
}
