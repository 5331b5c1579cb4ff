// Streaming digests for `amn hash`: SHA-256 and SHA-1 (FIPS 180-4) and XXH64 (seed 0).
// XXH64 is the xxHash library's own code (Debian libxxhash-dev's header, inlined; see
// CMakeLists.txt). SHA-256 and SHA-1 are written here because the same code must run in
// the WASM core, where no streaming digest exists (Web Crypto digests whole buffers only,
// and a tensor is never held whole); SHA-1 only because llama.cpp's gguf-hash derives
// its model UUID (UUIDv5) from it. Checked against the FIPS 180-4 examples and against
// gguf-hash's own output (tests_native/test_hash.cpp, fixtures/gguf/gguf_hash).
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>

namespace amn {

class Sha256 {
 public:
  Sha256();
  void update(std::span<const uint8_t> bytes);
  std::array<uint8_t, 32> finish();  // once

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  uint8_t buf_[64];
  size_t fill_ = 0;
  uint64_t total_ = 0;
};

class Sha1 {
 public:
  Sha1();
  void update(std::span<const uint8_t> bytes);
  std::array<uint8_t, 20> finish();  // once

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 5> h_;
  uint8_t buf_[64];
  size_t fill_ = 0;
  uint64_t total_ = 0;
};

class Xxh64 {
 public:
  Xxh64();
  ~Xxh64();
  Xxh64(const Xxh64&) = delete;
  Xxh64& operator=(const Xxh64&) = delete;
  Xxh64(Xxh64&& o) noexcept : state_(o.state_) { o.state_ = nullptr; }
  void update(std::span<const uint8_t> bytes);
  uint64_t finish() const;

 private:
  void* state_;  // XXH64_state_t
};

std::string hex(std::span<const uint8_t> bytes);
std::string hex64(uint64_t v);  // big-endian digits, as xxhsum and gguf-hash print it

}  // namespace amn
