// The ggml tensor types: one enum and one traits row per type id, read by the GGUF parser
// and writer (names, sizes), the planner (which types dequantize, big-endian layouts) and
// the kernels (block shapes), instead of a switch in each. Keyed by id like ggml's own
// `type_traits[]`. The dequantizers register themselves beside their code, keyed by this
// enum (kernels/ggml/dequantize.h); adding a type: docs/architecture.md.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "core/checked.h"
#include "core/dtype.h"

namespace amn {

// ggml.h `enum ggml_type`. A file may name an id ggml never defined: such a value is
// still a GgmlType (the enum is an uint32_t), and ggml_traits() answers nullptr for it.
enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q4_2 = 4, Q4_3 = 5, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23,
  I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  Q4_0_4_4 = 31, Q4_0_4_8 = 32, Q4_0_8_8 = 33, TQ1_0 = 34, TQ2_0 = 35,
  IQ4_NL_4_4 = 36, IQ4_NL_4_8 = 37, IQ4_NL_8_8 = 38, MXFP4 = 39, NVFP4 = 40, Q1_0 = 41, Q2_0 = 42,
};

// The highest id ggml defines, plus one (GGML_TYPE_COUNT).
inline constexpr uint32_t kGgmlTypeCount = 43;

// "Not a ggml block type" (a tensor DType describes): not an id ggml could ever use.
inline constexpr GgmlType kNoGgmlType = static_cast<GgmlType>(~uint32_t{0});

inline constexpr uint32_t ggml_id(GgmlType t) { return static_cast<uint32_t>(t); }

struct GgmlTraits {
  GgmlType type;
  std::string_view name;       // gguf-py's GGMLQuantizationType name ("Q4_K", "BF16")
  std::string_view ggml_name;  // ggml's type_name ("q4_K", "bf16")
  uint32_t block_elements;     // elements per block; 0 for ids ggml removed
  uint32_t block_bytes;        // bytes per block; 0 for ids ggml removed
  bool quantized;
  std::optional<DType> dtype;  // the plain element types (F32, ..., BF16): their DType
  // Byte offsets, within a block, of its F16 fields (scales, mins). IQ1_M's scale is
  // spread over four words and Q8_K's is F32: neither is listed.
  std::array<uint16_t, 2> f16_at;
  uint8_t f16_count;
  // Big-endian GGUF: gguf-py's endian converter (gguf-py/gguf/scripts/
  // gguf_convert_endian.py, byteswap_tensors) swaps exactly the F16 fields above of these
  // types (everything else in their blocks is single bytes). For the others it refuses
  // the type, so their big-endian layout is not defined.
  bool big_endian_defined;

  std::span<const uint16_t> f16_fields() const { return {f16_at.data(), f16_count}; }
};

namespace ggml_rows {
// Row makers, so that the table below reads as one line per type.
struct F16At {
  std::array<uint16_t, 2> at{};
  uint8_t count = 0;
};
constexpr F16At none() { return {}; }
constexpr F16At at(uint16_t a) { return {{a, 0}, 1}; }
constexpr F16At at(uint16_t a, uint16_t b) { return {{a, b}, 2}; }
enum BigEndian : bool { kNoBigEndian = false, kBigEndian = true };

constexpr GgmlTraits plain(GgmlType t, std::string_view name, std::string_view ggml_name, uint32_t bytes, DType d) {
  return {t, name, ggml_name, 1, bytes, false, d, {}, 0, false};
}
constexpr GgmlTraits block(GgmlType t, std::string_view name, std::string_view ggml_name, uint32_t elements,
                           uint32_t bytes, F16At f16, BigEndian be) {
  return {t, name, ggml_name, elements, bytes, true, std::nullopt, f16.at, f16.count, be};
}
// An id ggml defined and later removed (Q4_2, Q4_3, the *_4_4 / *_4_8 / *_8_8 repacked
// layouts): a file may name it, nothing can size or decode it.
constexpr GgmlTraits removed(GgmlType t, std::string_view name, std::string_view ggml_name) {
  return {t, name, ggml_name, 0, 0, true, std::nullopt, {}, 0, false};
}
}  // namespace ggml_rows

// Source: ggml-org/ggml as carried by ngxson/llama.cpp at 3f545beccee6 (2026-08-22):
// `enum ggml_type` in ggml/include/ggml.h (ids), `type_traits[]` in ggml/src/ggml.c
// (type_name, blck_size) and the block structs of ggml/src/ggml-common.h (sizeof, checked
// by compiling the header; kernels/ggml/blocks.h asserts them against this table),
// cross-checked with gguf-py's GGML_QUANT_SIZES (gguf-py/gguf/constants.py). Names are
// gguf-py's GGMLQuantizationType members. Big-endian: gguf_convert_endian.py at the same
// commit (byteswap_q4_0 / q8_0 / q1_0 swap the leading F16 d; byteswap_q4_k d and dmin;
// byteswap_q6_k the d at 208; byteswap_tq2_0 the d at 64; MXFP4 and NVFP4 byteswap_noop).
inline constexpr std::array<GgmlTraits, kGgmlTypeCount> kGgmlTraits = [] {
  using namespace ggml_rows;
  using T = GgmlType;
  return std::array<GgmlTraits, kGgmlTypeCount>{{
      plain(T::F32, "F32", "f32", 4, DType::F32),
      plain(T::F16, "F16", "f16", 2, DType::F16),
      block(T::Q4_0, "Q4_0", "q4_0", 32, 18, at(0), kBigEndian),
      block(T::Q4_1, "Q4_1", "q4_1", 32, 20, at(0, 2), kNoBigEndian),
      removed(T::Q4_2, "Q4_2", "q4_2 (removed)"),
      removed(T::Q4_3, "Q4_3", "q4_3 (removed)"),
      block(T::Q5_0, "Q5_0", "q5_0", 32, 22, at(0), kNoBigEndian),
      block(T::Q5_1, "Q5_1", "q5_1", 32, 24, at(0, 2), kNoBigEndian),
      block(T::Q8_0, "Q8_0", "q8_0", 32, 34, at(0), kBigEndian),
      block(T::Q8_1, "Q8_1", "q8_1", 32, 36, at(0, 2), kNoBigEndian),
      block(T::Q2_K, "Q2_K", "q2_K", 256, 84, at(80, 82), kNoBigEndian),
      block(T::Q3_K, "Q3_K", "q3_K", 256, 110, at(108), kNoBigEndian),
      block(T::Q4_K, "Q4_K", "q4_K", 256, 144, at(0, 2), kBigEndian),
      block(T::Q5_K, "Q5_K", "q5_K", 256, 176, at(0, 2), kNoBigEndian),
      block(T::Q6_K, "Q6_K", "q6_K", 256, 210, at(208), kBigEndian),
      block(T::Q8_K, "Q8_K", "q8_K", 256, 292, none(), kNoBigEndian),  // d is F32
      block(T::IQ2_XXS, "IQ2_XXS", "iq2_xxs", 256, 66, at(0), kNoBigEndian),
      block(T::IQ2_XS, "IQ2_XS", "iq2_xs", 256, 74, at(0), kNoBigEndian),
      block(T::IQ3_XXS, "IQ3_XXS", "iq3_xxs", 256, 98, at(0), kNoBigEndian),
      block(T::IQ1_S, "IQ1_S", "iq1_s", 256, 50, at(0), kNoBigEndian),
      block(T::IQ4_NL, "IQ4_NL", "iq4_nl", 32, 18, at(0), kNoBigEndian),
      block(T::IQ3_S, "IQ3_S", "iq3_s", 256, 110, at(0), kNoBigEndian),
      block(T::IQ2_S, "IQ2_S", "iq2_s", 256, 82, at(0), kNoBigEndian),
      block(T::IQ4_XS, "IQ4_XS", "iq4_xs", 256, 136, at(0), kNoBigEndian),
      plain(T::I8, "I8", "i8", 1, DType::I8),
      plain(T::I16, "I16", "i16", 2, DType::I16),
      plain(T::I32, "I32", "i32", 4, DType::I32),
      plain(T::I64, "I64", "i64", 8, DType::I64),
      plain(T::F64, "F64", "f64", 8, DType::F64),
      block(T::IQ1_M, "IQ1_M", "iq1_m", 256, 56, none(), kNoBigEndian),  // scale spread over 4 words
      plain(T::BF16, "BF16", "bf16", 2, DType::BF16),
      removed(T::Q4_0_4_4, "Q4_0_4_4", "q4_0_4_4 (removed)"),
      removed(T::Q4_0_4_8, "Q4_0_4_8", "q4_0_4_8 (removed)"),
      removed(T::Q4_0_8_8, "Q4_0_8_8", "q4_0_8_8 (removed)"),
      block(T::TQ1_0, "TQ1_0", "tq1_0", 256, 54, at(52), kNoBigEndian),
      block(T::TQ2_0, "TQ2_0", "tq2_0", 256, 66, at(64), kBigEndian),
      removed(T::IQ4_NL_4_4, "IQ4_NL_4_4", "iq4_nl_4_4 (removed)"),
      removed(T::IQ4_NL_4_8, "IQ4_NL_4_8", "iq4_nl_4_8 (removed)"),
      removed(T::IQ4_NL_8_8, "IQ4_NL_8_8", "iq4_nl_8_8 (removed)"),
      block(T::MXFP4, "MXFP4", "mxfp4", 32, 17, none(), kBigEndian),  // E8M0 scale byte
      block(T::NVFP4, "NVFP4", "nvfp4", 64, 36, none(), kBigEndian),  // UE4M3 scale bytes
      block(T::Q1_0, "Q1_0", "q1_0", 128, 18, at(0), kBigEndian),
      block(T::Q2_0, "Q2_0", "q2_0", 64, 18, at(0), kNoBigEndian),
  }};
}();

constexpr bool ggml_traits_indexed_by_id() {
  for (uint32_t i = 0; i < kGgmlTypeCount; ++i) {
    if (ggml_id(kGgmlTraits[i].type) != i) return false;
  }
  return true;
}
static_assert(ggml_traits_indexed_by_id(), "row i must describe type id i");

// The row for `type`, or nullptr when ggml never defined that id.
constexpr const GgmlTraits* ggml_traits(GgmlType type) {
  return ggml_id(type) < kGgmlTypeCount ? &kGgmlTraits[ggml_id(type)] : nullptr;
}

// True when tensors of this type have a known size (the row exists and is not removed).
constexpr bool ggml_type_sized(const GgmlTraits* t) { return t && t->block_elements != 0; }

// The F16 fields gguf-py's endian converter byte-swaps in one block; nullopt when it
// refuses the type (or the id is unknown).
inline std::optional<std::span<const uint16_t>> ggml_big_endian_f16_fields(GgmlType type) {
  const GgmlTraits* t = ggml_traits(type);
  if (!t || !t->big_endian_defined) return std::nullopt;
  return t->f16_fields();
}

// Bytes of `elements` elements of a sized type; nullopt when elements is not a whole
// number of blocks or the product overflows.
inline std::optional<uint64_t> ggml_nbytes(const GgmlTraits& t, uint64_t elements) {
  if (t.block_elements == 0 || elements % t.block_elements != 0) return std::nullopt;
  return checked_mul(elements / t.block_elements, t.block_bytes);
}

// The ggml type of a plain element type (F32, F16, BF16, F64, I8..I64), if GGUF has one.
constexpr std::optional<GgmlType> ggml_type_of(DType d) {
  for (const GgmlTraits& t : kGgmlTraits) {
    if (t.dtype == d) return t.type;
  }
  return std::nullopt;
}

}  // namespace amn
