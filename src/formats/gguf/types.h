// The ggml tensor type table: one row per type id, read by the GGUF parser (sizes) and,
// later, by the dequantizers (names, block shapes). Keyed by id like ggml's own
// `type_traits[]`, so no other file needs a switch over ggml types.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace amn {

struct GgmlTypeInfo {
  uint32_t id;
  std::string_view name;       // gguf-py's GGMLQuantizationType name ("Q4_K", "BF16")
  std::string_view ggml_name;  // ggml's type_name ("q4_K", "bf16")
  uint32_t block_elements;     // elements per block; 0 for ids ggml removed
  uint32_t block_bytes;        // bytes per block; 0 for ids ggml removed
  bool quantized;
};

// The highest id ggml defines, plus one (GGML_TYPE_COUNT).
inline constexpr uint32_t kGgmlTypeCount = 43;

// The row for `id`, or nullptr when ggml never defined it. Ids ggml defined and later
// removed (Q4_2, Q4_3, the *_4_4 / *_4_8 / *_8_8 repacked layouts) have a row with
// block_elements == 0: a file may name them, nothing can size or decode them.
const GgmlTypeInfo* ggml_type_info(uint32_t id);

// True when tensors of this id have a known size (the row exists and is not removed).
inline bool ggml_type_sized(const GgmlTypeInfo* t) { return t && t->block_elements != 0; }

// Big-endian GGUF: the byte offsets, within one block, of the f16 fields that gguf-py's
// endian converter (gguf-py/gguf/scripts/gguf_convert_endian.py, byteswap_tensors)
// byte-swaps; everything else in a block is single bytes. nullopt: the converter refuses
// the type, so its big-endian layout is not defined.
std::optional<std::span<const uint16_t>> ggml_big_endian_f16_fields(uint32_t id);

// Bytes of `elements` elements of a sized type; nullopt when elements is not a whole
// number of blocks or the product overflows.
std::optional<uint64_t> ggml_nbytes(const GgmlTypeInfo& t, uint64_t elements);

}  // namespace amn
