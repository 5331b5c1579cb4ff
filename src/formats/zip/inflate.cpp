// Entry contents: stored bytes as they are, DEFLATE through zlib (raw streams, as ZIP
// holds them). Output never exceeds the declared size; a whole entry is CRC-checked.
#include <zlib.h>

#include <algorithm>
#include <functional>

#include "core/text.h"
#include "formats/zip/detail.h"
#include "formats/zip/zip.h"

namespace amn::zip {
namespace {

using detail::error;

// zlib counts in uInt (32 bits): larger spans are fed in pieces of this size.
constexpr uint64_t kZlibPiece = uint64_t{1} << 30;


std::string hex32(uint32_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) s += digits[(v >> shift) & 15];
  return s;
}

// Pulls the next piece of compressed input; an empty span means there is no more.
using Pull = std::function<Result<std::span<const uint8_t>>()>;

class Inflater {
 public:
  Inflater() = default;
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  ~Inflater() {
    if (live_) inflateEnd(&zs_);
  }

  // Inflates into `out` until it is full. With `whole`, the stream must also end exactly
  // there and use up all `total_input` bytes. `what` names the stream in errors.
  Status run(std::span<uint8_t> out, bool whole, uint64_t total_input, const Pull& pull, const std::string& what,
             uint64_t at) {
    if (inflateInit2(&zs_, -MAX_WBITS) != Z_OK) {
      return error(ErrorCode::internal, "cannot initialise zlib for " + what, at);
    }
    live_ = true;
    uint64_t produced = 0;
    uint64_t consumed = 0;  // input handed to zlib, including what it has not used yet
    bool input_done = false;
    bool ended = false;
    uint8_t scratch = 0;
    for (;;) {
      if (zs_.avail_in == 0 && !input_done) {
        AMN_ASSIGN(auto in, pull());
        if (in.empty()) {
          input_done = true;
        } else {
          zs_.next_in = const_cast<Bytef*>(in.data());
          zs_.avail_in = static_cast<uInt>(in.size());
          consumed += in.size();
        }
      }
      bool probing = false;
      if (produced < out.size()) {
        zs_.next_out = out.data() + produced;
        zs_.avail_out = static_cast<uInt>(std::min<uint64_t>(out.size() - produced, kZlibPiece));
      } else if (whole) {
        // One spare byte tells a stream that ends here from one that goes on.
        zs_.next_out = &scratch;
        zs_.avail_out = 1;
        probing = true;
      } else {
        break;
      }
      const uInt before = zs_.avail_out;
      const int ret = inflate(&zs_, Z_NO_FLUSH);
      const uInt wrote = before - zs_.avail_out;
      if (probing && wrote > 0) {
        return error(ErrorCode::parse, what + " inflates to more than the declared " + num(out.size()) + " bytes",
                     at);
      }
      if (!probing) produced += wrote;
      if (ret == Z_STREAM_END) {
        ended = true;
        break;
      }
      if (ret == Z_DATA_ERROR || ret == Z_NEED_DICT) {
        return error(ErrorCode::parse,
                     "corrupt DEFLATE data in " + what + ": " + (zs_.msg ? zs_.msg : "invalid stream"), at);
      }
      if (ret == Z_MEM_ERROR) return error(ErrorCode::limit, "out of memory inflating " + what, at);
      if (ret == Z_BUF_ERROR && input_done) break;  // no input left and no progress possible
      if (ret != Z_OK && ret != Z_BUF_ERROR) {
        return error(ErrorCode::internal, "zlib error " + num(static_cast<uint64_t>(-ret)) + " inflating " + what, at);
      }
    }
    if (ended && produced < out.size()) {
      return error(ErrorCode::parse,
                   "DEFLATE stream of " + what + " ends after " + num(produced) + " bytes, but " +
                       num(out.size()) + " are declared",
                   at);
    }
    if (produced < out.size()) {
      return error(ErrorCode::parse,
                   "DEFLATE data of " + what + " is truncated: its " + num(total_input) +
                       " compressed bytes inflate to only " + num(produced) + " of " + num(out.size()) + " bytes",
                   at);
    }
    if (!whole) return {};
    if (!ended) {
      return error(ErrorCode::parse,
                   "DEFLATE stream of " + what + " has no end within its " + num(total_input) + " compressed bytes",
                   at);
    }
    // Compressed bytes after the end marker would be a second view of the entry for a
    // reader that does not stop there.
    const uint64_t used = consumed - zs_.avail_in;
    if (used != total_input) {
      return error(ErrorCode::parse,
                   "compressed data of " + what + " continues for " + num(total_input - used) +
                       " bytes after the end of its DEFLATE stream",
                   at);
    }
    return {};
  }

 private:
  z_stream zs_{};
  bool live_ = false;
};

Status check_crc(std::span<const uint8_t> bytes, uint32_t expected, const std::string& what, uint64_t at) {
  const uint32_t got = crc32_of(bytes);
  if (got == expected) return {};
  return error(ErrorCode::parse,
               "CRC-32 of " + what + " is " + hex32(got) + ", but " + hex32(expected) + " is declared", at);
}

}  // namespace

uint32_t crc32_of(std::span<const uint8_t> bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (!bytes.empty()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(bytes.size(), kZlibPiece));
    crc = crc32(crc, bytes.data(), static_cast<uInt>(n));
    bytes = bytes.subspan(n);
  }
  return static_cast<uint32_t>(crc);
}

Status inflate_all(std::span<const uint8_t> compressed, std::span<uint8_t> out, uint32_t expected_crc,
                   const ParseLimits& limits) {
  const ParseLimits lim = effective_limits(limits);
  if (out.size() > compressed.size() &&
      static_cast<double>(out.size()) > static_cast<double>(compressed.size()) * lim.max_decompression_ratio) {
    return error(ErrorCode::limit,
                 "inflating " + num(compressed.size()) + " bytes to " + num(out.size()) +
                     " exceeds the decompression ratio limit of " +
                     num(static_cast<uint64_t>(lim.max_decompression_ratio)));
  }
  std::span<const uint8_t> rest = compressed;
  Pull pull = [&rest]() -> Result<std::span<const uint8_t>> {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(rest.size(), kZlibPiece));
    auto piece = rest.first(n);
    rest = rest.subspan(n);
    return piece;
  };
  Inflater inflater;
  AMN_TRY(inflater.run(out, true, compressed.size(), pull, "the entry", kNoOffset));
  return check_crc(out, expected_crc, "the entry", kNoOffset);
}

Result<std::vector<uint8_t>> read_prefix(FileSet& files, uint32_t file, const Entry& entry, uint64_t n,
                                         const ParseLimits& limits) {
  const ParseLimits lim = effective_limits(limits);
  const std::string what = "entry " + quote(entry.name);
  const uint64_t want = std::min(n, entry.uncompressed_size);
  const bool whole = want == entry.uncompressed_size;
  if (want > lim.max_single_alloc) {
    return error(ErrorCode::limit,
                 "reading " + num(want) + " bytes of " + what + " exceeds the allocation limit of " +
                     num(lim.max_single_alloc),
                 entry.data_offset);
  }
  AMN_TRY(detail::check_ratio(entry, lim.max_decompression_ratio));
  std::vector<uint8_t> out;
  if (entry.method == Method::stored) {
    if (entry.compressed_size != entry.uncompressed_size) {
      return error(ErrorCode::parse,
                   "stored " + what + " has a compressed size of " + num(entry.compressed_size) +
                       " but an uncompressed size of " + num(entry.uncompressed_size),
                   entry.data_offset);
    }
    out.resize(static_cast<size_t>(want));
    AMN_TRY(files.read_into(file, entry.data_offset, out));  // pread on a local file: no page faults
    if (whole) AMN_TRY(check_crc(out, entry.crc32, what, entry.data_offset));
    return out;
  }
  if (!whole && want == 0) return out;  // a whole read of an empty entry still checks its stream
  out.resize(static_cast<size_t>(want));
  // Compressed input in growing reads: the first is what read_archive prefetched for the
  // same prefix (or the whole entry for a whole read), each next one twice as large.
  uint64_t fed = 0;
  uint64_t chunk = whole ? entry.compressed_size : detail::compressed_window(entry, want);
  chunk = std::max<uint64_t>(chunk, 1);
  Pull pull = [&]() -> Result<std::span<const uint8_t>> {
    const uint64_t left = entry.compressed_size - fed;
    const uint64_t take = std::min({chunk, left, kZlibPiece});
    if (take == 0) return std::span<const uint8_t>();
    AMN_ASSIGN(auto bytes, files.read(file, entry.data_offset + fed, take));
    fed += take;
    chunk = std::min<uint64_t>(chunk * 2, kZlibPiece);
    return bytes;
  };
  Inflater inflater;
  AMN_TRY(inflater.run(out, whole, entry.compressed_size, pull, what, entry.data_offset));
  if (whole) AMN_TRY(check_crc(out, entry.crc32, what, entry.data_offset));
  return out;
}

}  // namespace amn::zip
