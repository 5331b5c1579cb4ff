// The ggml tensor types: one enum and one traits row per type id, read by the GGUF parser
// and writer (names, sizes), the planner (which types dequantize, big-endian layouts) and
// the kernels (block shapes), instead of a switch in each. Keyed by id like ggml's own
// `type_traits[]`. The dequantizers register themselves beside their code, keyed by this
// enum (kernels/ggml/dequantize.h); adding a type: docs/architecture.md.
#pragma once
#include <array>
#include <cstddef>
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
// by compiling the header; the structs below restate them and are asserted against this table),
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

// The type whose gguf-py name is `name`, ignoring ASCII case ("q4_k" is Q4_K); nullopt
// for a name ggml never defined and for the removed ids.
constexpr std::optional<GgmlType> ggml_type_from_name(std::string_view name) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
  for (const GgmlTraits& t : kGgmlTraits) {
    if (t.block_elements == 0 || t.name.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i) same = lower(t.name[i]) == lower(name[i]);
    if (same) return t.type;
  }
  return std::nullopt;
}

// ---- the block layouts ----
//
// ggml's block structs (ggml/src/ggml-common.h, same commit), one beside each quantized
// type's row: field names and order are ggml's, and each size is asserted against the
// row. The dequantizers (kernels/ggml) read blocks through them; the F16 fields listed in
// the rows are their `ggml_half` members. Formulas: docs/formats/ggml-blocks.md.
namespace ggml {

using ggml_half = uint16_t;  // IEEE binary16 bits, converted with amn::scalar::f16_to_f32

inline constexpr int QK_K = 256;  // elements of a K-quant / IQ super-block

// ---- legacy blocks: 32 elements, one scale (and min) ----

struct block_q4_0 {
  ggml_half d;      // scale
  uint8_t qs[16];   // 4-bit quants: element j in the low nibble of qs[j], j+16 in the high
};
static_assert(sizeof(block_q4_0) == ggml_traits(GgmlType::Q4_0)->block_bytes);

struct block_q4_1 {
  ggml_half d;      // scale
  ggml_half m;      // min (added)
  uint8_t qs[16];   // 4-bit quants, nibbles as Q4_0
};
static_assert(sizeof(block_q4_1) == ggml_traits(GgmlType::Q4_1)->block_bytes);

struct block_q5_0 {
  ggml_half d;      // scale
  uint8_t qh[4];    // 5th bit of each quant: bit j of the little-endian uint32 for element j
  uint8_t qs[16];   // low 4 bits, nibbles as Q4_0
};
static_assert(sizeof(block_q5_0) == ggml_traits(GgmlType::Q5_0)->block_bytes);

struct block_q5_1 {
  ggml_half d;      // scale
  ggml_half m;      // min (added)
  uint8_t qh[4];    // 5th bits, as Q5_0
  uint8_t qs[16];   // low 4 bits, as Q5_0
};
static_assert(sizeof(block_q5_1) == ggml_traits(GgmlType::Q5_1)->block_bytes);

struct block_q8_0 {
  ggml_half d;      // scale
  int8_t qs[32];    // quants
};
static_assert(sizeof(block_q8_0) == ggml_traits(GgmlType::Q8_0)->block_bytes);

struct block_q8_1 {
  ggml_half d;      // scale
  ggml_half s;      // d * sum(qs): for dot products, not read when dequantizing
  int8_t qs[32];    // quants
};
static_assert(sizeof(block_q8_1) == ggml_traits(GgmlType::Q8_1)->block_bytes);

// ---- K-quants: super-blocks of 256 ----

struct block_q2_K {
  uint8_t scales[16];  // per 16 elements: scale in the low nibble, min in the high
  uint8_t qs[64];      // 2-bit quants, four per byte
  ggml_half d;         // super-block scale of the scales
  ggml_half dmin;      // super-block scale of the mins
};
static_assert(sizeof(block_q2_K) == ggml_traits(GgmlType::Q2_K)->block_bytes);

struct block_q3_K {
  uint8_t hmask[32];   // high (3rd) bit of each quant; set means "no -4"
  uint8_t qs[64];      // low 2 bits, four per byte
  uint8_t scales[12];  // sixteen 6-bit scales, biased by 32, packed
  ggml_half d;         // super-block scale
};
static_assert(sizeof(block_q3_K) == ggml_traits(GgmlType::Q3_K)->block_bytes);

inline constexpr int K_SCALE_SIZE = 12;

struct block_q4_K {
  ggml_half d;                   // super-block scale of the scales
  ggml_half dmin;                // super-block scale of the mins
  uint8_t scales[K_SCALE_SIZE];  // eight 6-bit scales and eight 6-bit mins, packed
  uint8_t qs[128];               // 4-bit quants
};
static_assert(sizeof(block_q4_K) == ggml_traits(GgmlType::Q4_K)->block_bytes);

struct block_q5_K {
  ggml_half d;                   // super-block scale of the scales
  ggml_half dmin;                // super-block scale of the mins
  uint8_t scales[K_SCALE_SIZE];  // scales and mins, packed as Q4_K
  uint8_t qh[32];                // 5th bit of each quant
  uint8_t qs[128];               // low 4 bits
};
static_assert(sizeof(block_q5_K) == ggml_traits(GgmlType::Q5_K)->block_bytes);

struct block_q6_K {
  uint8_t ql[128];    // low 4 bits of the quants
  uint8_t qh[64];     // high 2 bits
  int8_t scales[16];  // per 16 elements, 8-bit signed
  ggml_half d;        // super-block scale
};
static_assert(sizeof(block_q6_K) == ggml_traits(GgmlType::Q6_K)->block_bytes);

struct block_q8_K {
  float d;            // scale (F32, not F16)
  int8_t qs[256];     // quants
  int16_t bsums[16];  // sums of groups of 16 quants: for dot products, not read here
};
static_assert(sizeof(block_q8_K) == ggml_traits(GgmlType::Q8_K)->block_bytes);

// ---- IQ ("importance") quants: grids of magnitudes + sign bits ----

struct block_iq2_xxs {
  ggml_half d;        // super-block scale
  uint16_t qs[32];    // per 32 elements two uint32: 4 grid indices (8 bits each), then
                      // 4 x 7 sign bits and a 4-bit scale (bits 28..31)
};
static_assert(sizeof(block_iq2_xxs) == ggml_traits(GgmlType::IQ2_XXS)->block_bytes);

struct block_iq2_xs {
  ggml_half d;        // super-block scale
  uint16_t qs[32];    // per 8 elements: 9-bit grid index | 7 sign bits << 9
  uint8_t scales[8];  // per 32 elements two 4-bit scales (16 elements each)
};
static_assert(sizeof(block_iq2_xs) == ggml_traits(GgmlType::IQ2_XS)->block_bytes);

struct block_iq2_s {
  ggml_half d;        // super-block scale
  uint8_t qs[64];     // 32 low bytes of the 10-bit grid indices, then 32 bytes of signs
  uint8_t qh[8];      // per 32 elements: 2 high bits of each of the 4 indices
  uint8_t scales[8];  // per 32 elements two 4-bit scales
};
static_assert(sizeof(block_iq2_s) == ggml_traits(GgmlType::IQ2_S)->block_bytes);

struct block_iq3_xxs {
  ggml_half d;        // super-block scale
  uint8_t qs[96];     // 64 grid indices (8 bits, 4 elements each), then per 32 elements
                      // a uint32: 4 x 7 sign bits and a 4-bit scale (bits 28..31)
};
static_assert(sizeof(block_iq3_xxs) == ggml_traits(GgmlType::IQ3_XXS)->block_bytes);

inline constexpr int IQ3S_N_SCALE = QK_K / 64;

struct block_iq3_s {
  ggml_half d;                   // super-block scale
  uint8_t qs[64];                // low 8 bits of the 9-bit grid indices
  uint8_t qh[8];                 // 9th bits, one byte per 32 elements
  uint8_t signs[32];             // one sign bit per element
  uint8_t scales[IQ3S_N_SCALE];  // per 64 elements two 4-bit scales
};
static_assert(sizeof(block_iq3_s) == ggml_traits(GgmlType::IQ3_S)->block_bytes);

struct block_iq1_s {
  ggml_half d;        // super-block scale
  uint8_t qs[32];     // low 8 bits of the 11-bit grid indices
  uint16_t qh[8];     // per 32 elements: 4 x 3 high index bits, 3-bit scale (bits 12..14),
                      // delta sign (bit 15)
};
static_assert(sizeof(block_iq1_s) == ggml_traits(GgmlType::IQ1_S)->block_bytes);

struct block_iq1_m {
  uint8_t qs[32];     // low 8 bits of the 11-bit grid indices
  uint8_t qh[16];     // per 16 elements: 3 high index bits + delta sign, for two groups of 8
  uint8_t scales[8];  // 3-bit scales (per 16 elements); the F16 super-block scale is
                      // spread over the top 4 bits of the four uint16 words
};
static_assert(sizeof(block_iq1_m) == ggml_traits(GgmlType::IQ1_M)->block_bytes);

struct block_iq4_nl {
  ggml_half d;        // scale
  uint8_t qs[16];     // 4-bit indices into kvalues_iq4nl, nibbles as Q4_0
};
static_assert(sizeof(block_iq4_nl) == ggml_traits(GgmlType::IQ4_NL)->block_bytes);

struct block_iq4_xs {
  ggml_half d;          // super-block scale
  uint16_t scales_h;    // high 2 bits of the eight 6-bit scales
  uint8_t scales_l[4];  // low 4 bits of the eight scales
  uint8_t qs[128];      // 4-bit indices into kvalues_iq4nl
};
static_assert(sizeof(block_iq4_xs) == ggml_traits(GgmlType::IQ4_XS)->block_bytes);

// ---- ternary ----

struct block_tq1_0 {
  uint8_t qs[48];     // 5 trits per byte (base 3, as a fixed-point fraction of 256)
  uint8_t qh[4];      // 4 trits per byte, same encoding
  ggml_half d;        // scale
};
static_assert(sizeof(block_tq1_0) == ggml_traits(GgmlType::TQ1_0)->block_bytes);

struct block_tq2_0 {
  uint8_t qs[64];     // 2 bits per element (0, 1, 2 -> -1, 0, +1)
  ggml_half d;        // scale
};
static_assert(sizeof(block_tq2_0) == ggml_traits(GgmlType::TQ2_0)->block_bytes);

// ---- FP4 microscaling, 1- and 2-bit ----

struct block_mxfp4 {
  uint8_t e;          // E8M0 shared exponent
  uint8_t qs[16];     // E2M1 values, nibbles as Q4_0
};
static_assert(sizeof(block_mxfp4) == ggml_traits(GgmlType::MXFP4)->block_bytes);

struct block_nvfp4 {
  uint8_t d[4];       // UE4M3 scale per 16 elements
  uint8_t qs[32];     // E2M1 values; per 16 elements 8 bytes, nibbles as Q4_0
};
static_assert(sizeof(block_nvfp4) == ggml_traits(GgmlType::NVFP4)->block_bytes);

struct block_q1_0 {
  ggml_half d;        // scale: a set bit is +d, a clear bit -d
  uint8_t qs[16];     // one bit per element, element j at bit j%8 of byte j/8
};
static_assert(sizeof(block_q1_0) == ggml_traits(GgmlType::Q1_0)->block_bytes);

struct block_q2_0 {
  ggml_half d;        // scale
  uint8_t qs[16];     // 2 bits per element, element j at bits 2*(j%4) of byte j/4: q-1
};
static_assert(sizeof(block_q2_0) == ggml_traits(GgmlType::Q2_0)->block_bytes);

}  // namespace ggml

}  // namespace amn
