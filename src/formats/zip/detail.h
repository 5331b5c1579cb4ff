// Shared by the ZIP reader (zip.cpp) and the inflater (inflate.cpp); not a public header.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/text.h"
#include "formats/zip/zip.h"

namespace amn::zip::detail {

inline Error error(ErrorCode code, std::string message, uint64_t offset = kNoOffset) {
  return make_error(code, "zip: " + std::move(message), offset);
}

// Compressed bytes to fetch so that the first `n` bytes of an entry can be produced in one
// go. A DEFLATE block starts with up to ~300 bytes of Huffman tables and zlib never expands
// data by more than 5 bytes per 16 KiB stored block, so n + n/64 + 1 KiB always suffices.
// read_archive's prefetch and read_prefix's first read use the same window, so a caller
// that asks read_archive for data_prefix = n and then reads n bytes needs no extra round.
inline uint64_t compressed_window(const Entry& e, uint64_t n) {
  if (n == 0) return 0;
  if (e.method == Method::stored) return n < e.compressed_size ? n : e.compressed_size;
  const uint64_t want = n > (uint64_t{1} << 56) ? e.compressed_size : n + n / 64 + 1024;
  return want < e.compressed_size ? want : e.compressed_size;
}

// The declared sizes against max_decompression_ratio (an entry that expands nothing,
// stored or empty, always passes).
inline Status check_ratio(const Entry& e, double max_ratio) {
  if (e.uncompressed_size <= e.compressed_size) return {};
  if (static_cast<double>(e.uncompressed_size) <= static_cast<double>(e.compressed_size) * max_ratio) return {};
  return error(ErrorCode::limit,
               "entry " + quote(e.name) + " declares " + std::to_string(e.uncompressed_size) +
                   " bytes from " + std::to_string(e.compressed_size) +
                   " compressed: more than the decompression ratio limit of " +
                   std::to_string(static_cast<uint64_t>(max_ratio)),
               e.local_header_offset);
}

}  // namespace amn::zip::detail
