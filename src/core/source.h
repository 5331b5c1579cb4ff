// Sans-IO byte access. Parsers and the executor never open files or sockets: they ask
// a ByteSource for byte ranges. A native mmap never misses; a SparseSource (fed by
// async JS readers: Blob, HTTP Range, FileHandle) answers ErrorCode::need_bytes with
// the missing ranges, the caller fetches and adds them, and calls the parser again.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"

namespace amn {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // A view of [offset, offset+length), valid until the source is next modified or
  // destroyed. Ranges past the end are an io error. `file` only labels need_bytes.
  virtual Result<std::span<const uint8_t>> read(uint32_t file, uint64_t offset,
                                                uint64_t length) = 0;
  // Copies [offset, offset+dst.size()) into dst. Same errors as read (need_bytes too).
  // Callers that keep a copy anyway (headers, small records) use this: a local file
  // answers with pread, which costs far less than first-touching a page of its mapping
  // (a fault per page; ~20 us each on some VMs).
  virtual Status read_into(uint32_t file, uint64_t offset, std::span<uint8_t> dst);
  // The open file descriptor behind a native local file, or -1 (memory, JS readers).
  // Lets a sink move bytes kernel-side (copy_file_range) instead of through user memory.
  virtual int native_fd() const { return -1; }
  // Bytes the caller handed over as one buffer covering exactly [offset, offset+length)
  // (a SparseSource chunk): ownership passes to whoever takes them, so a layer's input can
  // be kept without a second copy (in WASM, the copy was a whole tensor more of memory).
  // The source no longer holds them and answers need_bytes if they are read again. Empty
  // when the bytes are held otherwise (a mapping, part of a larger chunk, not yet here).
  using OwnedBytes = std::unique_ptr<uint8_t[], void (*)(uint8_t*)>;
  virtual std::optional<OwnedBytes> take(uint64_t offset, uint64_t length) {
    (void)offset, (void)length;
    return std::nullopt;
  }
};

// Bytes the caller already holds (an ArrayBuffer, a test vector). Not copied.
class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  Result<std::span<const uint8_t>> read(uint32_t file, uint64_t offset, uint64_t length) override;

 private:
  std::span<const uint8_t> bytes_;
};

// Known ranges of a file of known size. Chunks are kept as added; a read spanning
// several adjacent chunks coalesces them into one (views into the old chunks die).
class SparseSource final : public ByteSource {
 public:
  using Buffer = OwnedBytes;
  explicit SparseSource(uint64_t size) : size_(size) {}
  uint64_t size() const override { return size_; }
  Result<std::span<const uint8_t>> read(uint32_t file, uint64_t offset, uint64_t length) override;
  std::optional<OwnedBytes> take(uint64_t offset, uint64_t length) override;
  // Adopts `data` (length bytes at offset). Overlaps with known chunks are allowed.
  Status add(uint64_t offset, Buffer data, uint64_t length);
  Status add_copy(uint64_t offset, std::span<const uint8_t> bytes);
  // Drops every chunk (after a parse the model holds all it needs).
  void clear() { chunks_.clear(); }
  uint64_t bytes_held() const;

 private:
  struct Chunk {
    Buffer data;
    uint64_t length;
  };
  uint64_t size_;
  std::map<uint64_t, Chunk> chunks_;  // by start offset
};

#ifndef __EMSCRIPTEN__
// A read-only memory map of a whole file. Inputs are never modified.
class MmapSource final : public ByteSource {
 public:
  static Result<std::unique_ptr<MmapSource>> open(const std::string& path);
  ~MmapSource() override;
  uint64_t size() const override { return size_; }
  Result<std::span<const uint8_t>> read(uint32_t file, uint64_t offset, uint64_t length) override;
  Status read_into(uint32_t file, uint64_t offset, std::span<uint8_t> dst) override;  // pread
  int native_fd() const override { return fd_; }

 private:
  MmapSource(int fd, const uint8_t* base, uint64_t size) : fd_(fd), base_(base), size_(size) {}
  int fd_;  // kept open (O_CLOEXEC) for pread and copy_file_range
  const uint8_t* base_;
  uint64_t size_;
};
#endif

// The files one model is made of: the entry (index 0) and, for sharded models, the
// shards and a sibling config.json. Names are as the user sees them (no directories).
class FileSet {
 public:
  uint32_t add(std::string name, std::unique_ptr<ByteSource> source);
  size_t count() const { return files_.size(); }
  const std::string& name(uint32_t file) const { return files_[file].name; }
  ByteSource& source(uint32_t file) { return *files_[file].source; }
  uint64_t size(uint32_t file) const { return files_[file].source->size(); }
  std::optional<uint32_t> find(std::string_view name) const;
  Result<std::span<const uint8_t>> read(uint32_t file, uint64_t offset, uint64_t length) {
    return files_[file].source->read(file, offset, length);
  }
  Status read_into(uint32_t file, uint64_t offset, std::span<uint8_t> dst) {
    return files_[file].source->read_into(file, offset, dst);
  }
  int native_fd(uint32_t file) const { return files_[file].source->native_fd(); }
  std::optional<ByteSource::OwnedBytes> take(uint32_t file, uint64_t offset, uint64_t length) {
    return files_[file].source->take(offset, length);
  }

 private:
  struct Entry {
    std::string name;
    std::unique_ptr<ByteSource> source;
  };
  std::vector<Entry> files_;
};

// Ok when every range can be read now; else one need_bytes error naming every missing
// range (one round trip, not one per range).
Status require_ranges(FileSet& files, std::span<const ByteRange> ranges);

// Copies of several ranges, each read through `files`; need_bytes as require_ranges.
// Copied, because reading one range of a sparse source may coalesce chunks and end an
// earlier view.
Result<std::vector<std::vector<uint8_t>>> read_copies(FileSet& files, std::span<const ByteRange> ranges);

// Ranges of one need_bytes round closer than this are asked for as one. Over HTTP a
// request costs a round trip (20-100 ms); 64 KiB more of a response costs less than
// that at any rate above ~5 Mbit/s (64 KiB in ~0.1 s at 5 Mbit/s, ~5 ms at 100 Mbit/s),
// and a Blob slice or pread of it costs microseconds. So the local headers of a ZIP whose
// members are small (a .pth of many small tensors) come in one range, not one per member.
inline constexpr uint64_t kCoalesceGap = 64 * 1024;

// Sorted by file and offset, with ranges that overlap, touch or lie at most `max_gap`
// bytes apart merged into one (the bytes between are read too). Empty ranges are dropped.
std::vector<ByteRange> coalesce_ranges(std::vector<ByteRange> ranges, uint64_t max_gap = kCoalesceGap);

}  // namespace amn
