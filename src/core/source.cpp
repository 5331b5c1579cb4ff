#include "core/source.h"

#include <algorithm>

#include <cstring>

#ifndef __EMSCRIPTEN__
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#endif

namespace amn {
namespace {

Error out_of_range(uint64_t offset, uint64_t length, uint64_t size) {
  return make_error(ErrorCode::io,
                    "read of " + std::to_string(length) + " bytes at offset " +
                        std::to_string(offset) + " is past the end of the file (" +
                        std::to_string(size) + " bytes)",
                    offset);
}

bool in_bounds(uint64_t offset, uint64_t length, uint64_t size) {
  return offset <= size && length <= size - offset;
}

void free_buffer(uint8_t* p) { delete[] p; }

}  // namespace

Status ByteSource::read_into(uint32_t file, uint64_t offset, std::span<uint8_t> dst) {
  AMN_ASSIGN(auto bytes, read(file, offset, dst.size()));
  if (!bytes.empty()) std::memcpy(dst.data(), bytes.data(), bytes.size());
  return {};
}

Result<std::span<const uint8_t>> MemorySource::read(uint32_t, uint64_t offset, uint64_t length) {
  if (!in_bounds(offset, length, bytes_.size())) return out_of_range(offset, length, bytes_.size());
  return bytes_.subspan(offset, length);
}

Result<std::span<const uint8_t>> SparseSource::read(uint32_t file, uint64_t offset,
                                                    uint64_t length) {
  if (!in_bounds(offset, length, size_)) return out_of_range(offset, length, size_);
  if (length == 0) return std::span<const uint8_t>();
  const uint64_t end = offset + length;
  // The chunk starting at or before offset.
  auto it = chunks_.upper_bound(offset);
  if (it != chunks_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second.length >= end) {
      return std::span<const uint8_t>(prev->second.data.get() + (offset - prev->first), length);
    }
  }
  // Collect the gaps in [offset, end) not covered by any chunk.
  std::vector<ByteRange> gaps;
  uint64_t pos = offset;
  auto c = chunks_.upper_bound(offset);
  if (c != chunks_.begin()) --c;
  for (; c != chunks_.end() && c->first < end; ++c) {
    const uint64_t cs = c->first, ce = c->first + c->second.length;
    if (ce <= pos) continue;
    if (cs > pos) gaps.push_back({file, pos, cs - pos});
    pos = std::max(pos, ce);
    if (pos >= end) break;
  }
  if (pos < end) gaps.push_back({file, pos, end - pos});
  if (!gaps.empty()) {
    Error e = make_error(ErrorCode::need_bytes, "bytes not yet available", offset);
    e.need_bytes = std::move(gaps);
    return e;
  }
  // Covered by several chunks: coalesce them into one buffer covering [first start, last end).
  auto first = chunks_.upper_bound(offset);
  if (first != chunks_.begin()) {
    auto prev = std::prev(first);
    if (prev->first + prev->second.length > offset) first = prev;
  }
  const uint64_t start = std::min(first->first, offset);
  uint64_t stop = end;
  auto last = first;
  for (auto i = first; i != chunks_.end() && i->first < end; ++i) {
    stop = std::max(stop, i->first + i->second.length);
    last = i;
  }
  Buffer merged(new uint8_t[stop - start], free_buffer);
  for (auto i = first;; ++i) {
    std::memcpy(merged.get() + (i->first - start), i->second.data.get(), i->second.length);
    if (i == last) break;
  }
  chunks_.erase(first, std::next(last));
  auto [pos_it, inserted] = chunks_.emplace(start, Chunk{std::move(merged), stop - start});
  (void)inserted;
  return std::span<const uint8_t>(pos_it->second.data.get() + (offset - start), length);
}

std::optional<ByteSource::OwnedBytes> SparseSource::take(uint64_t offset, uint64_t length) {
  auto it = chunks_.find(offset);
  if (length == 0 || it == chunks_.end() || it->second.length != length) return std::nullopt;
  OwnedBytes out = std::move(it->second.data);
  chunks_.erase(it);
  return out;
}

Status SparseSource::add(uint64_t offset, Buffer data, uint64_t length) {
  if (!in_bounds(offset, length, size_)) return out_of_range(offset, length, size_);
  if (length == 0) return {};
  auto it = chunks_.find(offset);
  if (it != chunks_.end()) {
    if (it->second.length >= length) return {};  // already held
    chunks_.erase(it);
  }
  chunks_.emplace(offset, Chunk{std::move(data), length});
  return {};
}

Status SparseSource::add_copy(uint64_t offset, std::span<const uint8_t> bytes) {
  Buffer copy(new uint8_t[bytes.size() ? bytes.size() : 1], free_buffer);
  if (!bytes.empty()) std::memcpy(copy.get(), bytes.data(), bytes.size());
  return add(offset, std::move(copy), bytes.size());
}

uint64_t SparseSource::bytes_held() const {
  uint64_t n = 0;
  for (const auto& [off, c] : chunks_) n += c.length;
  return n;
}

#ifndef __EMSCRIPTEN__
Result<std::unique_ptr<MmapSource>> MmapSource::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(ErrorCode::io, "cannot open " + path + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return make_error(ErrorCode::io, "cannot stat " + path + ": " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(ErrorCode::io, path + " is not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const uint8_t* base = nullptr;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return make_error(ErrorCode::io, "cannot map " + path + ": " + std::strerror(err));
    }
    base = static_cast<const uint8_t*>(p);
  }
  return std::unique_ptr<MmapSource>(new MmapSource(fd, base, size));
}

MmapSource::~MmapSource() {
  if (base_) ::munmap(const_cast<uint8_t*>(base_), size_);
  ::close(fd_);
}

Status MmapSource::read_into(uint32_t, uint64_t offset, std::span<uint8_t> dst) {
  if (!in_bounds(offset, dst.size(), size_)) return out_of_range(offset, dst.size(), size_);
  size_t done = 0;
  while (done < dst.size()) {
    const ssize_t n = ::pread(fd_, dst.data() + done, dst.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_error(ErrorCode::io, std::string("cannot read the file: ") + std::strerror(errno), offset);
    if (n == 0) return make_error(ErrorCode::io, "the file became shorter while it was read", offset + done);
    done += static_cast<size_t>(n);
  }
  return {};
}

Result<std::span<const uint8_t>> MmapSource::read(uint32_t, uint64_t offset, uint64_t length) {
  if (!in_bounds(offset, length, size_)) return out_of_range(offset, length, size_);
  return std::span<const uint8_t>(base_ + offset, length);
}
#endif

uint32_t FileSet::add(std::string name, std::unique_ptr<ByteSource> source) {
  files_.push_back({std::move(name), std::move(source)});
  return static_cast<uint32_t>(files_.size() - 1);
}

std::optional<uint32_t> FileSet::find(std::string_view name) const {
  for (size_t i = 0; i < files_.size(); ++i) {
    if (files_[i].name == name) return static_cast<uint32_t>(i);
  }
  return std::nullopt;
}

Status require_ranges(FileSet& files, std::span<const ByteRange> ranges) {
  std::vector<ByteRange> missing;
  for (const auto& r : ranges) {
    auto got = files.read(r.file, r.offset, r.length);
    if (got) continue;
    if (got.error().code != ErrorCode::need_bytes) return std::move(got).error();
    missing.insert(missing.end(), got.error().need_bytes.begin(), got.error().need_bytes.end());
  }
  if (!missing.empty()) {
    Error e = make_error(ErrorCode::need_bytes, "inputs not yet available");
    e.need_bytes = std::move(missing);
    return e;
  }
  return {};
}

Result<std::vector<std::vector<uint8_t>>> read_copies(FileSet& files, std::span<const ByteRange> ranges) {
  AMN_TRY(require_ranges(files, ranges));
  std::vector<std::vector<uint8_t>> out;
  out.reserve(ranges.size());
  for (const auto& r : ranges) {
    out.emplace_back(static_cast<size_t>(r.length));
    AMN_TRY(files.read_into(r.file, r.offset, out.back()));
  }
  return out;
}

std::vector<ByteRange> coalesce_ranges(std::vector<ByteRange> ranges, uint64_t max_gap) {
  std::erase_if(ranges, [](const ByteRange& r) { return r.length == 0; });
  std::sort(ranges.begin(), ranges.end(), [](const ByteRange& a, const ByteRange& b) {
    return a.file != b.file ? a.file < b.file : a.offset < b.offset;
  });
  std::vector<ByteRange> out;
  for (const auto& r : ranges) {
    if (!out.empty() && out.back().file == r.file) {
      ByteRange& last = out.back();
      const uint64_t end = last.offset + last.length;  // ranges lie inside a file: no overflow
      if (r.offset <= end || r.offset - end <= max_gap) {
        last.length = std::max(end, r.offset + r.length) - last.offset;
        continue;
      }
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace amn
