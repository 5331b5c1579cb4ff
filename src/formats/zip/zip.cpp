// The ZIP container: end records, central directory, local headers, cross-checked.
// Layout and the reasons for each refusal: docs/formats/zip.md.
#include "formats/zip/zip.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "core/bytes.h"
#include "core/checked.h"
#include "core/text.h"
#include "formats/zip/detail.h"

namespace amn::zip {
namespace {

using detail::error;

constexpr uint32_t kEocdSig = 0x06054b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kZip64EocdSig = 0x06064b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint64_t kEocdBytes = 22;
constexpr uint64_t kZip64LocatorBytes = 20;
constexpr uint64_t kZip64EocdBytes = 56;
constexpr uint64_t kCentralBytes = 46;
constexpr uint64_t kLocalBytes = 30;
// The end record sits in the last 22 + 65535 (comment) bytes; the ZIP64 locator and end
// record, when present, just before it. One read of this window finds all three.
constexpr uint64_t kTailWindow = kEocdBytes + 0xFFFF + kZip64LocatorBytes + kZip64EocdBytes;
// Local extra fields usually differ from the central ones (ZIP64 sizes: 20 bytes,
// PyTorch's 64-byte alignment padding: up to 67): the local-header read guesses this much
// more so that one round fetches them.
constexpr uint64_t kLocalExtraSlack = 128;

constexpr uint16_t kFlagEncrypted = 1u << 0;
constexpr uint16_t kFlagDescriptor = 1u << 3;
constexpr uint16_t kFlagStrongEncryption = 1u << 6;
constexpr uint16_t kFlagUtf8 = 1u << 11;
constexpr uint16_t kFlagMaskedHeaders = 1u << 13;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint32_t kMax32 = 0xFFFFFFFF;
constexpr uint16_t kMax16 = 0xFFFF;

std::string hex(uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), digits[v & 15]);
    v >>= 4;
  } while (v);
  return "0x" + s;
}

// The 32-bit (or 16-bit) header fields a ZIP64 extra field may replace, in its order.
struct Zip64Fields {
  uint64_t* uncompressed = nullptr;
  uint64_t* compressed = nullptr;
  uint64_t* offset = nullptr;
  uint64_t* disk = nullptr;
};

// Walks an extra block (as Python's zipfile does: a field running past the block is an
// error, fewer than 4 trailing bytes are padding) and resolves the 0xFFFFFFFF markers.
Status resolve_zip64(std::span<const uint8_t> extra, Zip64Fields f, const std::string& name,
                     const char* where, uint64_t at) {
  std::optional<std::span<const uint8_t>> zip64;
  size_t pos = 0;
  while (extra.size() - pos >= 4) {
    const uint16_t id = load_le16(extra.data() + pos);
    const uint16_t len = load_le16(extra.data() + pos + 2);
    if (len > extra.size() - pos - 4) {
      return error(ErrorCode::parse,
                   "extra field " + hex(id) + " of " + quote(name) + " in the " + where +
                       " runs past its extra block (" + num(len) + " bytes, " +
                       num(extra.size() - pos - 4) + " left)",
                   at);
    }
    if (id == kZip64ExtraId) {
      if (zip64) {
        return error(ErrorCode::parse, quote(name) + " has two ZIP64 extra fields in the " + where, at);
      }
      zip64 = extra.subspan(pos + 4, len);
    }
    pos += 4 + size_t{len};
  }
  struct Want {
    uint64_t* field;
    uint64_t marker;
    unsigned bytes;
    const char* what;
  };
  const Want wants[] = {{f.uncompressed, kMax32, 8, "uncompressed size"},
                        {f.compressed, kMax32, 8, "compressed size"},
                        {f.offset, kMax32, 8, "local header offset"},
                        {f.disk, kMax16, 4, "disk number"}};
  size_t zpos = 0;
  for (const Want& w : wants) {
    if (!w.field || *w.field != w.marker) continue;
    if (!zip64) {
      return error(ErrorCode::parse,
                   quote(name) + " has the ZIP64 marker " + hex(w.marker) + " as its " + w.what +
                       " in the " + where + " but no ZIP64 extra field",
                   at);
    }
    if (zip64->size() - zpos < w.bytes) {
      return error(ErrorCode::parse,
                   "the ZIP64 extra field of " + quote(name) + " in the " + where + " (" +
                       num(zip64->size()) + " bytes) lacks its " + w.what,
                   at);
    }
    *w.field = load_le(zip64->data() + zpos, w.bytes);
    zpos += w.bytes;
  }
  return {};
}

// What the central directory says beyond the public Entry, for the local-header checks.
struct Central {
  uint16_t flags = 0;
  uint16_t extra_len = 0;
  uint64_t record_offset = 0;  // of the central directory record, for errors
};

class Reader {
 public:
  Reader(FileSet& files, uint32_t file, const ParseLimits& limits, uint64_t data_prefix)
      : files_(files), file_(file), limits_(effective_limits(limits)), size_(files.size(file)),
        prefix_(data_prefix) {}

  Result<Archive> run() {
    AMN_TRY(read_end_records());
    Archive archive;
    std::vector<Central> central;
    AMN_TRY(read_central_directory(archive, central));
    AMN_TRY(read_local_headers(archive, central));
    AMN_TRY(check_overlaps(archive));
    return archive;
  }

 private:
  Status read_end_records();
  Status read_zip64_end(uint64_t locator_at, uint64_t eocd_at, uint64_t n_disk16, uint64_t n_total16,
                        uint64_t cd_size32, uint64_t cd_offset32);
  Status read_central_directory(Archive& archive, std::vector<Central>& central);
  Status read_central_entry(std::span<const uint8_t> cd, uint64_t& pos, uint64_t index, Entry& e, Central& c);
  Status check_name(const std::string& name, uint16_t flags, uint64_t index, uint64_t at);
  Status read_local_headers(Archive& archive, const std::vector<Central>& central);
  Status check_local(std::span<const uint8_t> h, Entry& e, const Central& c);
  Status check_overlaps(const Archive& archive);

  // A read that records the missing ranges instead of failing, so one need_bytes can name
  // every range this round needs. A copy into `buffer`: local headers are small and
  // scattered through the file, and a local file answers a copy with pread instead of
  // faulting in a page of its mapping per header (320 faults for a ResNet-50 checkpoint,
  // most of the parse time on a VM that pays ~20 us a fault).
  Result<std::optional<std::span<const uint8_t>>> try_copy(uint64_t offset, uint64_t length,
                                                             std::vector<uint8_t>& buffer) {
    buffer.resize(static_cast<size_t>(length));
    Status r = files_.read_into(file_, offset, buffer);
    if (r) return std::optional<std::span<const uint8_t>>(std::span<const uint8_t>(buffer));
    if (r.error().code != ErrorCode::need_bytes) return std::move(r).error();
    const auto& gaps = r.error().need_bytes;
    gaps_.insert(gaps_.end(), gaps.begin(), gaps.end());
    return std::optional<std::span<const uint8_t>>();
  }

  FileSet& files_;
  uint32_t file_;
  ParseLimits limits_;
  uint64_t size_;
  uint64_t prefix_;
  uint64_t cd_offset_ = 0, cd_size_ = 0, entry_count_ = 0;
  uint64_t cd_end_ = 0;  // where the end records begin: the central directory must end there
  std::vector<ByteRange> gaps_;
};

Status Reader::read_end_records() {
  if (size_ < kEocdBytes) {
    return error(ErrorCode::parse, "file too short for a ZIP archive (" + num(size_) + " bytes)", 0);
  }
  const uint64_t window = std::min(size_, kTailWindow);
  const uint64_t base = size_ - window;
  AMN_ASSIGN(auto tail, files_.read(file_, base, window));
  // The end record is the one whose comment reaches exactly the end of the file. Two such
  // records (a forged one inside the comment) would let two readers see two archives.
  std::vector<uint64_t> found;
  std::optional<uint64_t> loose;  // a signature whose comment length does not fit
  for (uint64_t i = window - kEocdBytes + 1; i-- > 0;) {
    if (load_le32(tail.data() + i) != kEocdSig) continue;
    if (load_le16(tail.data() + i + 20) == window - i - kEocdBytes) found.push_back(base + i);
    else if (!loose) loose = base + i;
  }
  if (found.empty()) {
    if (loose) {
      return error(ErrorCode::parse,
                   "the end-of-central-directory record at offset " + num(*loose) +
                       " has a comment length that does not reach the end of the file",
                   *loose);
    }
    return error(ErrorCode::parse, "no end-of-central-directory record (not a ZIP archive, or truncated)",
                 size_);
  }
  if (found.size() > 1) {
    return error(ErrorCode::parse,
                 "two end-of-central-directory records (at offsets " + num(found[1]) + " and " +
                     num(found[0]) + ") both reach the end of the file",
                 found[0]);
  }
  const uint64_t at = found[0];
  const uint8_t* e = tail.data() + (at - base);
  const uint16_t disk = load_le16(e + 4), cd_disk = load_le16(e + 6);
  const uint64_t n_disk = load_le16(e + 8), n_total = load_le16(e + 10);
  const uint64_t cd_size = load_le32(e + 12), cd_offset = load_le32(e + 16);
  if (disk != 0 || cd_disk != 0 || n_disk != n_total) {
    return error(ErrorCode::unsupported, "multi-disk (split or spanned) archives are not supported", at);
  }
  cd_offset_ = cd_offset;
  cd_size_ = cd_size;
  entry_count_ = n_total;
  cd_end_ = at;
  if (at >= kZip64LocatorBytes && at - kZip64LocatorBytes >= base &&
      load_le32(tail.data() + (at - kZip64LocatorBytes - base)) == kZip64LocatorSig) {
    AMN_TRY(read_zip64_end(at - kZip64LocatorBytes, at, n_disk, n_total, cd_size, cd_offset));
  }
  // Everything from the central directory to the end records must be accounted for:
  // bytes before the first local header (self-extracting stubs) or a central directory
  // that stops short are how archives smuggle a second view of their contents.
  const auto cd_stop = checked_add(cd_offset_, cd_size_);
  if (!cd_stop || *cd_stop > cd_end_) {
    return error(ErrorCode::parse,
                 "central directory (" + num(cd_size_) + " bytes at offset " + num(cd_offset_) +
                     ") runs past the end record at offset " + num(cd_end_),
                 cd_offset_);
  }
  if (*cd_stop != cd_end_) {
    return error(ErrorCode::parse,
                 "central directory (" + num(cd_size_) + " bytes at offset " + num(cd_offset_) +
                     ") ends at " + num(*cd_stop) + ", not at the end record (offset " + num(cd_end_) + ")",
                 *cd_stop);
  }
  if (entry_count_ > limits_.max_item_count) {
    return error(ErrorCode::limit,
                 num(entry_count_) + " entries exceed the item limit of " + num(limits_.max_item_count),
                 cd_end_);
  }
  if (entry_count_ > cd_size_ / kCentralBytes) {
    return error(ErrorCode::parse,
                 num(entry_count_) + " entries need at least " + num(entry_count_ * kCentralBytes) +
                     " bytes, but the central directory has " + num(cd_size_),
                 cd_offset_);
  }
  if (cd_size_ > limits_.max_single_alloc) {
    return error(ErrorCode::limit,
                 "central directory of " + num(cd_size_) + " bytes exceeds the allocation limit of " +
                     num(limits_.max_single_alloc),
                 cd_offset_);
  }
  return {};
}

Status Reader::read_zip64_end(uint64_t locator_at, uint64_t eocd_at, uint64_t n_disk16, uint64_t n_total16,
                              uint64_t cd_size32, uint64_t cd_offset32) {
  // Copied first: the next read may move the tail window (a SparseSource coalesces).
  uint8_t loc[kZip64LocatorBytes];
  {
    AMN_ASSIGN(auto l, files_.read(file_, locator_at, kZip64LocatorBytes));
    std::copy(l.begin(), l.end(), loc);
  }
  const uint32_t z_disk = load_le32(loc + 4), disks = load_le32(loc + 16);
  const uint64_t z_at = load_le64(loc + 8);
  if (z_disk != 0 || disks > 1) {
    return error(ErrorCode::unsupported, "multi-disk (split or spanned) ZIP64 archives are not supported",
                 locator_at);
  }
  if (z_at > locator_at || locator_at - z_at < kZip64EocdBytes) {
    return error(ErrorCode::parse,
                 "the ZIP64 locator points at offset " + num(z_at) +
                     ", which leaves no room for a ZIP64 end record before the locator (offset " +
                     num(locator_at) + ")",
                 locator_at);
  }
  AMN_ASSIGN(auto z, files_.read(file_, z_at, kZip64EocdBytes));
  if (load_le32(z.data()) != kZip64EocdSig) {
    return error(ErrorCode::parse, "bad ZIP64 end record signature at offset " + num(z_at), z_at);
  }
  const uint64_t record = load_le64(z.data() + 4);
  if (record != locator_at - z_at - 12) {
    return error(ErrorCode::parse,
                 "the ZIP64 end record at offset " + num(z_at) + " declares " + num(record) +
                     " bytes, but its locator is " + num(locator_at - z_at - 12) + " bytes after its size field",
                 z_at);
  }
  const uint32_t disk = load_le32(z.data() + 16), cd_disk = load_le32(z.data() + 20);
  const uint64_t n_disk = load_le64(z.data() + 24), n_total = load_le64(z.data() + 32);
  const uint64_t cd_size = load_le64(z.data() + 40), cd_offset = load_le64(z.data() + 48);
  if (disk != 0 || cd_disk != 0 || n_disk != n_total) {
    return error(ErrorCode::unsupported, "multi-disk (split or spanned) ZIP64 archives are not supported", z_at);
  }
  // A 16/32-bit field is either the "see ZIP64" marker or the same value.
  auto agree = [](uint64_t small, uint64_t marker, uint64_t big) { return small == marker || small == big; };
  if (!agree(n_total16, kMax16, n_total) || !agree(n_disk16, kMax16, n_disk)) {
    return error(ErrorCode::parse,
                 "the end record (" + num(n_total16) + " entries) and the ZIP64 end record (" +
                     num(n_total) + " entries) disagree",
                 eocd_at);
  }
  if (!agree(cd_size32, kMax32, cd_size) || !agree(cd_offset32, kMax32, cd_offset)) {
    return error(ErrorCode::parse,
                 "the end record (central directory of " + num(cd_size32) + " bytes at " + num(cd_offset32) +
                     ") and the ZIP64 end record (" + num(cd_size) + " bytes at " + num(cd_offset) + ") disagree",
                 eocd_at);
  }
  cd_offset_ = cd_offset;
  cd_size_ = cd_size;
  entry_count_ = n_total;
  cd_end_ = z_at;
  return {};
}

Status Reader::check_name(const std::string& name, uint16_t flags, uint64_t index, uint64_t at) {
  const std::string which = "the name of entry " + num(index);
  if (name.empty()) return error(ErrorCode::parse, "entry " + num(index) + " has an empty name", at);
  if (name.size() > kHardMaxNameBytes) {
    return error(ErrorCode::limit, which + " is longer than " + num(kHardMaxNameBytes) + " bytes", at);
  }
  if (name.find('\0') != std::string::npos) {
    return error(ErrorCode::parse, which + " (" + quote(name) + ") contains a NUL byte", at);
  }
  const bool ascii = std::all_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (ascii) return {};
  if (!(flags & kFlagUtf8)) {
    return error(ErrorCode::unsupported,
                 which + " has non-ASCII bytes without the UTF-8 flag (CP437 names are not supported)", at);
  }
  if (!valid_utf8(name)) return error(ErrorCode::parse, which + " is not valid UTF-8", at);
  return {};
}

Status Reader::read_central_entry(std::span<const uint8_t> cd, uint64_t& pos, uint64_t index, Entry& e,
                                  Central& c) {
  const uint64_t at = cd_offset_ + pos;
  auto past = [&] {
    return error(ErrorCode::parse,
                 "central directory entry " + num(index) + " at offset " + num(at) +
                     " runs past the end of the central directory",
                 at);
  };
  if (cd.size() - pos < kCentralBytes) return past();
  const uint8_t* h = cd.data() + pos;
  if (load_le32(h) != kCentralSig) {
    return error(ErrorCode::parse,
                 "bad central directory signature at offset " + num(at) + " (entry " + num(index) + ")", at);
  }
  c.flags = load_le16(h + 8);
  const uint16_t method = load_le16(h + 10);
  e.crc32 = load_le32(h + 16);
  e.compressed_size = load_le32(h + 20);
  e.uncompressed_size = load_le32(h + 24);
  const uint16_t name_len = load_le16(h + 28);
  c.extra_len = load_le16(h + 30);
  const uint16_t comment_len = load_le16(h + 32);
  uint64_t disk = load_le16(h + 34);
  e.local_header_offset = load_le32(h + 42);
  c.record_offset = at;
  if (cd.size() - pos - kCentralBytes < uint64_t{name_len} + c.extra_len + comment_len) return past();
  e.name.assign(reinterpret_cast<const char*>(h + kCentralBytes), name_len);
  AMN_TRY(check_name(e.name, c.flags, index, at));
  if (c.flags & (kFlagEncrypted | kFlagStrongEncryption | kFlagMaskedHeaders)) {
    return error(ErrorCode::unsupported, "entry " + quote(e.name) + " is encrypted", at);
  }
  if (method != static_cast<uint16_t>(Method::stored) && method != static_cast<uint16_t>(Method::deflate)) {
    return error(ErrorCode::unsupported,
                 "entry " + quote(e.name) + " uses compression method " + num(method) +
                     " (only 0, stored, and 8, DEFLATE, are supported)",
                 at);
  }
  e.method = static_cast<Method>(method);
  AMN_TRY(resolve_zip64(cd.subspan(pos + kCentralBytes + name_len, c.extra_len),
                        {&e.uncompressed_size, &e.compressed_size, &e.local_header_offset, &disk}, e.name,
                        "central directory", at));
  if (disk != 0) {
    return error(ErrorCode::unsupported,
                 "entry " + quote(e.name) + " starts on disk " + num(disk) + " (multi-disk archives are not supported)",
                 at);
  }
  if (e.method == Method::stored && e.compressed_size != e.uncompressed_size) {
    return error(ErrorCode::parse,
                 "stored entry " + quote(e.name) + " has a compressed size of " + num(e.compressed_size) +
                     " but an uncompressed size of " + num(e.uncompressed_size),
                 at);
  }
  AMN_TRY(detail::check_ratio(e, limits_.max_decompression_ratio));
  const uint64_t lho = e.local_header_offset;
  if (lho > size_ || size_ - lho < kLocalBytes) {
    return error(ErrorCode::parse,
                 "local header of " + quote(e.name) + " at offset " + num(lho) +
                     " is past the end of the file (" + num(size_) + " bytes)",
                 at);
  }
  if (lho > cd_offset_ || cd_offset_ - lho < kLocalBytes) {
    return error(ErrorCode::parse,
                 "local header of " + quote(e.name) + " at offset " + num(lho) +
                     " is not before the central directory (offset " + num(cd_offset_) + ")",
                 at);
  }
  pos += kCentralBytes + name_len + c.extra_len + comment_len;
  return {};
}

Status Reader::read_central_directory(Archive& archive, std::vector<Central>& central) {
  MemoryBudget budget(limits_, "zip");
  AMN_TRY(budget.charge(cd_size_, "the central directory", cd_offset_));
  AMN_TRY(budget.charge(entry_count_ * (sizeof(Entry) + sizeof(Central)), "the entry list", cd_offset_));
  AMN_ASSIGN(auto cd, files_.read(file_, cd_offset_, cd_size_));
  // entry_count_ <= cd_size_ / 46 <= max_single_alloc / 46: bounded by the checks above.
  archive.entries.resize(entry_count_);
  central.resize(entry_count_);
  uint64_t pos = 0;
  for (uint64_t i = 0; i < entry_count_; ++i) {
    const uint64_t at = cd_offset_ + pos;
    AMN_TRY(read_central_entry(cd, pos, i, archive.entries[i], central[i]));
    AMN_TRY(budget.charge(archive.entries[i].name.size(), "the name of entry " + num(i), at));
  }
  archive.memory = budget.used();
  if (pos != cd_size_) {
    return error(ErrorCode::parse,
                 "central directory has " + num(cd_size_ - pos) + " bytes left after its " +
                     num(entry_count_) + " entries",
                 cd_offset_ + pos);
  }
  std::vector<uint32_t> order(archive.entries.size());
  std::iota(order.begin(), order.end(), 0u);
  const auto& entries = archive.entries;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return entries[a].name != entries[b].name ? entries[a].name < entries[b].name : a < b;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    if (entries[order[k]].name == entries[order[k - 1]].name) {
      return error(ErrorCode::parse,
                   "duplicate entry name " + quote(entries[order[k]].name) + " (entries " +
                       num(order[k - 1]) + " and " + num(order[k]) + ")",
                   central[order[k]].record_offset);
    }
  }
  return {};
}

Status Reader::check_local(std::span<const uint8_t> h, Entry& e, const Central& c) {
  const uint64_t at = e.local_header_offset;
  const std::string who = quote(e.name);  // the signature and the length were checked by the caller
  const uint16_t flags = load_le16(h.data() + 6), method = load_le16(h.data() + 8);
  uint64_t crc = load_le32(h.data() + 14);
  uint64_t csize = load_le32(h.data() + 18), usize = load_le32(h.data() + 22);
  const uint16_t name_len = load_le16(h.data() + 26), extra_len = load_le16(h.data() + 28);
  const std::string_view name(reinterpret_cast<const char*>(h.data() + kLocalBytes), name_len);
  if (name != e.name) {
    return error(ErrorCode::parse,
                 "the local header at offset " + num(at) + " names " + quote(name) +
                     ", the central directory " + who,
                 at);
  }
  if (flags != c.flags) {
    return error(ErrorCode::parse,
                 "flags of " + who + " differ: " + hex(c.flags) + " in the central directory, " + hex(flags) +
                     " in the local header",
                 at);
  }
  if (method != static_cast<uint16_t>(e.method)) {
    return error(ErrorCode::parse,
                 "compression method of " + who + " differs: " + num(static_cast<uint16_t>(e.method)) +
                     " in the central directory, " + num(method) + " in the local header",
                 at);
  }
  AMN_TRY(resolve_zip64(h.subspan(kLocalBytes + name_len, extra_len), {&usize, &csize, nullptr, nullptr}, e.name,
                        "local header", at));
  // With a data descriptor (bit 3) the local fields may be zero, written before the data
  // was; the central directory then holds the sizes. Anything else must agree.
  const bool descriptor = flags & kFlagDescriptor;
  struct Field {
    const char* what;
    uint64_t central, local;
  };
  const Field fields[] = {{"CRC-32", e.crc32, crc},
                          {"compressed size", e.compressed_size, csize},
                          {"uncompressed size", e.uncompressed_size, usize}};
  for (const Field& f : fields) {
    if (f.local == f.central || (descriptor && f.local == 0)) continue;
    const bool is_crc = f.what[0] == 'C';
    return error(ErrorCode::parse,
                 std::string(f.what) + " of " + who + " differs: " + (is_crc ? hex(f.central) : num(f.central)) +
                     " in the central directory, " + (is_crc ? hex(f.local) : num(f.local)) + " in the local header",
                 at);
  }
  e.data_offset = at + kLocalBytes + name_len + extra_len;
  const auto end = checked_add(e.data_offset, e.compressed_size);
  if (!end || *end > size_) {
    return error(ErrorCode::parse,
                 "data of " + who + " (" + num(e.compressed_size) + " bytes at offset " + num(e.data_offset) +
                     ") runs past the end of the file (" + num(size_) + " bytes)",
                 e.data_offset);
  }
  if (*end > cd_offset_) {
    return error(ErrorCode::parse,
                 "data of " + who + " (" + num(e.compressed_size) + " bytes at offset " + num(e.data_offset) +
                     ") runs into the central directory (offset " + num(cd_offset_) + ")",
                 e.data_offset);
  }
  return {};
}

Status Reader::read_local_headers(Archive& archive, const std::vector<Central>& central) {
  std::vector<uint8_t> buffer;  // one header (and data prefix) at a time
  for (size_t i = 0; i < archive.entries.size(); ++i) {
    Entry& e = archive.entries[i];
    const Central& c = central[i];
    const uint64_t lho = e.local_header_offset;  // lho + 30 <= cd_offset_, checked
    const uint64_t room = cd_offset_ - lho;
    const uint64_t guess = kLocalBytes + e.name.size() + c.extra_len + kLocalExtraSlack +
                           detail::compressed_window(e, prefix_);
    auto fail = [&](Error err) -> Status {
      // An earlier entry's bytes are still missing: fetch them first, so the verdict is the
      // first defect in central-directory order whatever the source.
      if (!gaps_.empty()) return Status();
      return err;
    };
    AMN_ASSIGN(auto window, try_copy(lho, std::min(room, guess), buffer));
    if (!window) continue;
    if (load_le32(window->data()) != kLocalSig) {
      Status s = fail(error(ErrorCode::parse,
                            "bad local header signature at offset " + num(lho) + " (entry " + quote(e.name) + ")",
                            lho));
      if (!s) return s;
      break;
    }
    const uint64_t header = kLocalBytes + uint64_t{load_le16(window->data() + 26)} + load_le16(window->data() + 28);
    if (header > room) {
      Status s = fail(error(ErrorCode::parse,
                            "local header of " + quote(e.name) + " (" + num(header) + " bytes at offset " +
                                num(lho) + ") runs into the central directory (offset " + num(cd_offset_) + ")",
                            lho));
      if (!s) return s;
      break;
    }
    // The header itself, and the data prefix the caller asked for, when the guess fell short.
    Entry probe = e;
    probe.data_offset = lho + header;
    const uint64_t want = std::min(room, header + detail::compressed_window(probe, prefix_));
    std::span<const uint8_t> h = *window;
    if (want > window->size()) {
      AMN_ASSIGN(auto full, try_copy(lho, want, buffer));
      if (!full) continue;
      h = *full;
    }
    Status s = check_local(h, e, c);
    if (!s) {
      Status f = fail(std::move(s).error());
      if (!f) return f;
      break;
    }
  }
  if (!gaps_.empty()) {
    Error e = error(ErrorCode::need_bytes, "local headers not yet available", gaps_.front().offset);
    // Nearby headers in one range (kCoalesceGap): a .pth of many small tensors is one
    // request, not one per member.
    e.need_bytes = coalesce_ranges(std::move(gaps_));
    return e;
  }
  return {};
}

// Entries are laid out one after another; two that share bytes (the "overlapping files"
// zip bomb, or a scanner seeing different data than an extractor) are refused.
Status Reader::check_overlaps(const Archive& archive) {
  const auto& entries = archive.entries;
  std::vector<uint32_t> order(entries.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return entries[a].local_header_offset != entries[b].local_header_offset
               ? entries[a].local_header_offset < entries[b].local_header_offset
               : a < b;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const Entry& a = entries[order[k - 1]];
    const Entry& b = entries[order[k]];
    const uint64_t a_end = a.data_offset + a.compressed_size;
    if (b.local_header_offset < a_end) {
      return error(ErrorCode::parse,
                   "entries " + quote(a.name) + " (bytes " + num(a.local_header_offset) + ".." + num(a_end) +
                       ") and " + quote(b.name) + " (from offset " + num(b.local_header_offset) + ") overlap",
                   b.local_header_offset);
    }
  }
  return {};
}

}  // namespace

const Entry* Archive::find(std::string_view name) const {
  for (const Entry& e : entries)
    if (e.name == name) return &e;
  return nullptr;
}

Result<Archive> read_archive(FileSet& files, uint32_t file, const ParseLimits& limits, uint64_t data_prefix) {
  return Reader(files, file, limits, data_prefix).run();
}

std::vector<ByteRange> local_header_ranges(const Archive& archive, uint32_t file, uint64_t data_prefix) {
  std::vector<ByteRange> out;
  out.reserve(archive.entries.size());
  for (const Entry& e : archive.entries) {
    const uint64_t header = e.data_offset > e.local_header_offset ? e.data_offset - e.local_header_offset : kLocalBytes;
    out.push_back({file, e.local_header_offset, header + detail::compressed_window(e, data_prefix)});
  }
  return out;
}

}  // namespace amn::zip
