// The GGUF v3 header for a list of KVs and tensors laid out back to back, as ggml's
// gguf_write_to_buf and gguf-py's GGUFWriter produce it: little-endian, every tensor at
// the running sum of the padded sizes before it. Pure: no I/O; the caller writes the
// header, then each tensor's bytes at its offset (zero padding in between). Spec and our
// choices: docs/formats/gguf-write.md.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/ggml_type.h"
#include "formats/gguf/parse.h"

namespace amn {

inline constexpr uint64_t kGgufDefaultAlignment = 32;  // GGUF_DEFAULT_ALIGNMENT

struct GgufWriteTensor {
  std::string name;
  GgmlType ggml_type = GgmlType::F32;  // a sized type (core/ggml_type.h)
  std::vector<uint64_t> ne;     // GGUF order: ne[0] is the fastest-varying dimension
  uint64_t nbytes = 0;          // must equal elements / block_elements * block_bytes
};

struct GgufLayout {
  // Magic, version, counts, KVs and tensor infos, zero-padded to the alignment: the data
  // section starts right after.
  std::vector<uint8_t> header;
  std::vector<uint64_t> offsets;  // per tensor, relative to the data section, aligned
  // The data section's size: every tensor and the padding between tensors, none after
  // the last one.
  uint64_t data_bytes = 0;
};

// Lays out a GGUF v3 file. Validates first, so nothing is written that our reader, ggml
// or gguf-py would refuse for a reason we can see:
//  - alignment: a non-zero power of two that fits UINT32; when it is not 32 a UINT32
//    general.alignment is appended to the KVs, unless `kv` has one, which must then be a
//    UINT32 equal to `alignment` (it is written where it stands);
//  - keys: non-empty, valid UTF-8, at most 64 KiB, unique; values: known types, integers
//    in their type's range, arrays consistent with their count (raw / ends / items),
//    nested at most 4 deep, at most 1,000,000 elements, strings at most 10,000,000 bytes;
//  - tensors: names valid UTF-8, at most 64 KiB, unique; n_dims <= 4; every ne in
//    1 .. 2^63-1 with an element count that fits int64; a type ggml can size; ne[0] a
//    multiple of its block; nbytes equal to the type's size of the elements.
// Returns invalid_argument (limit for the built-in floors) naming the first problem.
Result<GgufLayout> gguf_layout(const std::vector<std::pair<std::string, GgufValue>>& kv,
                               std::span<const GgufWriteTensor> tensors,
                               uint64_t alignment = kGgufDefaultAlignment);

// Value constructors for the KVs a writer sets itself.
GgufValue gguf_value_string(std::string_view s);
GgufValue gguf_value_uint(GgufType type, uint64_t v);  // UINT8 / UINT16 / UINT32 / UINT64
GgufValue gguf_value_int(GgufType type, int64_t v);    // INT8 / INT16 / INT32 / INT64
GgufValue gguf_value_float(GgufType type, double v);   // FLOAT32 (rounded to float) / FLOAT64
GgufValue gguf_value_bool(bool v);
GgufValue gguf_value_array(GgufType elem_type);        // empty; fill with gguf_array_append
GgufValue gguf_value_string_array(std::span<const std::string> items);
// Appends one element to an array value: a scalar of the array's elem_type (its bytes to
// `raw`, or its text to `arena` + `ends`), or an ARRAY value to `items`. The element's type
// must be the array's elem_type: false (and nothing appended) otherwise.
bool gguf_array_append(GgufValue& array, const GgufValue& element);

}  // namespace amn
