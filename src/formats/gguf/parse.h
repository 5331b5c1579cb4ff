// GGUF container parsing (v2 and v3, little- and big-endian): the header, every metadata
// value, the tensor infos, and the placement of tensor data. Mirrors the format
// authorities ggml (ggml/src/gguf.cpp, gguf_init_from_file_impl) and gguf-py
// (gguf-py/gguf/gguf_reader.py). Spec and our choices: docs/formats/gguf.md.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/ggml_type.h"
#include "core/limits.h"
#include "core/source.h"

namespace amn {

// Metadata value types, numbered as on disk (gguf.h `enum gguf_type`).
enum class GgufType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
  BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
inline constexpr uint32_t kGgufTypeCount = 13;
std::string_view gguf_type_name(GgufType type);  // "UINT8", ..., "FLOAT64"
// Bytes of one value of a fixed-size type; 0 for STRING and ARRAY.
uint64_t gguf_fixed_size(GgufType type);

// One metadata value. Scalars fill the field of their kind; arrays are stored compactly
// (a tokenizer of 150,000 strings is one arena plus one offset per string):
//  - fixed-size elements (numbers, BOOL) as their bytes, little-endian, in `raw`;
//  - STRING elements concatenated in `arena`, element i ending at `ends[i]`;
//  - ARRAY elements (nested arrays) as values in `items`.
struct GgufValue {
  GgufType type = GgufType::UINT8;
  uint64_t u = 0;     // UINT8 / UINT16 / UINT32 / UINT64
  int64_t i = 0;      // INT8 / INT16 / INT32 / INT64
  double f = 0;       // FLOAT32 / FLOAT64
  bool b = false;     // BOOL (any non-zero byte is true)
  std::string str;    // STRING
  // ARRAY
  GgufType elem_type = GgufType::UINT8;
  uint64_t count = 0;
  std::vector<uint8_t> raw;
  std::string arena;
  std::vector<uint64_t> ends;
  std::vector<GgufValue> items;

  // An integer of any integer type, when it is representable as uint64 / int64.
  std::optional<uint64_t> as_uint() const;
  std::optional<int64_t> as_int() const;

  // Element access for arrays (index < count, elem_type as named).
  std::string_view string_at(uint64_t index) const;
  uint64_t uint_at(uint64_t index) const;   // unsigned integer elements
  int64_t int_at(uint64_t index) const;     // signed integer elements
  double float_at(uint64_t index) const;    // FLOAT32 / FLOAT64 elements
  bool bool_at(uint64_t index) const;
};

struct GgufTensorInfo {
  std::string name;
  GgmlType type = GgmlType::F32;  // as stored: may be an id ggml never defined (core/ggml_type.h)
  std::vector<uint64_t> ne;    // GGUF order: ne[0] is the fastest-varying dimension
  uint64_t offset = 0;         // relative to GgufFile::data_offset
  uint64_t nbytes = 0;         // 0 when size_known is false
  bool size_known = false;
  // The type is unknown (or removed from ggml) and nbytes is the distance to the next
  // tensor's offset, or to the end of the file: an upper bound that includes padding.
  bool size_from_offsets = false;
  uint64_t elements = 0;       // product of ne (1 for n_dims == 0)
};

// A shard of a model split by llama.cpp's gguf-split (KVs split.no, split.count,
// split.tensors.count; files named <prefix>-00001-of-00003.gguf).
struct GgufSplit {
  uint32_t no = 0;              // 0-based (the file name counts from 1)
  uint32_t count = 0;
  uint64_t tensors_count = 0;   // tensors across all shards
};

struct GgufFile {
  uint32_t version = 0;
  bool big_endian = false;      // every number in the file, tensor data included
  uint64_t alignment = 32;
  uint64_t data_offset = 0;     // absolute: where tensor data starts
  uint64_t header_bytes = 0;    // bytes the header occupies before padding
  std::vector<std::pair<std::string, GgufValue>> kv;  // in file order
  std::vector<GgufTensorInfo> tensors;                // in file order
  std::optional<GgufSplit> split;
  std::vector<std::string> warnings;

  const GgufValue* find(std::string_view key) const;
};

// Built-in floors, at least as strict as @huggingface/gguf's hardening (packages/gguf,
// gguf.ts: MAX_KV_COUNT, MAX_TENSOR_COUNT, MAX_METADATA_ARRAY_LENGTH, MAX_STRING_LENGTH,
// MAX_TENSOR_NDIMS, MAX_ARRAY_RECURSION_DEPTH), and by ggml's GGML_MAX_DIMS for rank.
inline constexpr uint64_t kHardMaxGgufKv = 100'000;
inline constexpr uint64_t kHardMaxGgufTensors = 10'000'000;
inline constexpr uint64_t kHardMaxGgufArrayLength = 1'000'000;
inline constexpr uint64_t kHardMaxGgufString = 10'000'000;  // one string value, bytes
inline constexpr uint32_t kHardMaxGgufArrayDepth = 4;       // arrays within arrays, counting the outermost
inline constexpr uint32_t kGgmlMaxDims = 4;

// Read-ahead. A remote host's first request of a GGUF file asks for kGgufFirstRequest
// bytes (the registry's first_read): 1 MiB holds a header with a 32,000-token vocabulary.
// It hands the bytes over as they arrive and stops reading once the model is open, so the
// parser's first window is small: a small header is parsed from its first 64 KiB without
// waiting for the rest. A longer header grows to that whole first request before
// projecting (a projection from 64 KiB of a vocabulary misses by more than its margin: the
// scores and types arrays after it are guessed at 64 bytes each, and each miss costs a
// request and 1.5x the bytes), then at least 1.5x and towards a projection of where the
// header ends, so a large header arrives in few rounds without asking for much tensor data.
inline constexpr uint64_t kGgufFirstRequest = 1 << 20;
inline constexpr uint64_t kGgufFirstWindow = 64 * 1024;

// Parses one GGUF file of `files`. Reads only the header (never tensor data); validates
// that every tensor of known type lies aligned, inside the file and not overlapping.
// Sans-IO: with a SparseSource, answers need_bytes for the next read-ahead window.
Result<GgufFile> parse_gguf(FileSet& files, uint32_t file, const ParseLimits& limits);

// True when the first bytes are the GGUF magic.
bool looks_like_gguf(std::span<const uint8_t> head);

// "<prefix>-00001-of-00003.gguf" -> {prefix, 1, 3} (numbers as written: 1-based).
struct GgufSplitName {
  std::string prefix;
  uint32_t no = 0;
  uint32_t count = 0;
};
std::optional<GgufSplitName> gguf_split_name(std::string_view file_name);

}  // namespace amn
