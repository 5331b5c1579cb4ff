// ZIP archives as NumPy's .npz and PyTorch's torch.save write them: stored and DEFLATE
// entries, ZIP64, data descriptors. Sans-IO like every parser: reads go through the
// FileSet and may answer need_bytes. The central directory and every local header are
// cross-checked (name, sizes, method, flags): a mismatch is an error, never a guess,
// because scanners have been bypassed through exactly such desyncs.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/limits.h"
#include "core/source.h"

namespace amn::zip {

enum class Method : uint16_t { stored = 0, deflate = 8 };

struct Entry {
  std::string name;               // as stored (UTF-8; CP437 names with bytes >= 0x80 are refused)
  Method method = Method::stored;
  uint64_t compressed_size = 0;   // bytes at data_offset
  uint64_t uncompressed_size = 0;
  uint32_t crc32 = 0;
  uint64_t local_header_offset = 0;
  uint64_t data_offset = 0;       // absolute offset of the entry's data in the file
};

struct Archive {
  std::vector<Entry> entries;     // central-directory order
  // Header-derived bytes reading it took (the central directory, entries, names), already
  // charged against max_total_bytes: callers go on charging from here (MemoryBudget).
  uint64_t memory = 0;
  // nullptr when absent. Names are unique (duplicates are rejected at read time).
  const Entry* find(std::string_view name) const;
};

// Reads the end-of-central-directory (and ZIP64 records), the central directory and
// every local header, and checks them against each other. All local headers are asked
// for in one need_bytes round; each request also covers `data_prefix` bytes of the
// entry's data, so a caller that next reads a short prefix of every entry (an NPY
// header, a pickle) finds it already there.
Result<Archive> read_archive(FileSet& files, uint32_t file, const ParseLimits& limits,
                             uint64_t data_prefix = 0);

// The byte ranges read_archive would ask for next after the central directory, i.e.
// each entry's local header plus `data_prefix` bytes (for callers batching more reads).
std::vector<ByteRange> local_header_ranges(const Archive& archive, uint32_t file, uint64_t data_prefix);

// The first min(n, uncompressed_size) bytes of an entry's contents. Stored entries are
// read directly; DEFLATE entries are inflated only as far as needed (asking for
// compressed input in growing chunks). Bounded by max_decompression_ratio.
Result<std::vector<uint8_t>> read_prefix(FileSet& files, uint32_t file, const Entry& entry,
                                         uint64_t n, const ParseLimits& limits);

// Inflates a whole DEFLATE entry's compressed bytes into `out`, which must be exactly the
// declared uncompressed size; checks the CRC-32 (`crc32`) and that the stream ends
// exactly there. Errors: parse (corrupt stream, size or CRC mismatch), limit (ratio).
Status inflate_all(std::span<const uint8_t> compressed, std::span<uint8_t> out, uint32_t crc32,
                   const ParseLimits& limits);

// CRC-32 (zlib's) of bytes, for stored entries when a caller verifies them.
uint32_t crc32_of(std::span<const uint8_t> bytes);

}  // namespace amn::zip
