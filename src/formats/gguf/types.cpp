#include "formats/gguf/types.h"

#include <array>

#include "core/checked.h"

namespace amn {
namespace {

// Source: ggml-org/ggml as carried by ngxson/llama.cpp at 3f545beccee6 (2026-08-22):
// `enum ggml_type` in ggml/include/ggml.h (ids), `type_traits[]` in ggml/src/ggml.c
// (type_name, blck_size) and the block structs of ggml/src/ggml-common.h (sizeof, checked
// by compiling the header), cross-checked with gguf-py's GGML_QUANT_SIZES
// (gguf-py/gguf/constants.py). Names are gguf-py's GGMLQuantizationType members.
constexpr std::array<GgmlTypeInfo, 43> kTable = {{
    {0, "F32", "f32", 1, 4, false},
    {1, "F16", "f16", 1, 2, false},
    {2, "Q4_0", "q4_0", 32, 18, true},
    {3, "Q4_1", "q4_1", 32, 20, true},
    {4, "Q4_2", "q4_2 (removed)", 0, 0, true},
    {5, "Q4_3", "q4_3 (removed)", 0, 0, true},
    {6, "Q5_0", "q5_0", 32, 22, true},
    {7, "Q5_1", "q5_1", 32, 24, true},
    {8, "Q8_0", "q8_0", 32, 34, true},
    {9, "Q8_1", "q8_1", 32, 36, true},
    {10, "Q2_K", "q2_K", 256, 84, true},
    {11, "Q3_K", "q3_K", 256, 110, true},
    {12, "Q4_K", "q4_K", 256, 144, true},
    {13, "Q5_K", "q5_K", 256, 176, true},
    {14, "Q6_K", "q6_K", 256, 210, true},
    {15, "Q8_K", "q8_K", 256, 292, true},
    {16, "IQ2_XXS", "iq2_xxs", 256, 66, true},
    {17, "IQ2_XS", "iq2_xs", 256, 74, true},
    {18, "IQ3_XXS", "iq3_xxs", 256, 98, true},
    {19, "IQ1_S", "iq1_s", 256, 50, true},
    {20, "IQ4_NL", "iq4_nl", 32, 18, true},
    {21, "IQ3_S", "iq3_s", 256, 110, true},
    {22, "IQ2_S", "iq2_s", 256, 82, true},
    {23, "IQ4_XS", "iq4_xs", 256, 136, true},
    {24, "I8", "i8", 1, 1, false},
    {25, "I16", "i16", 1, 2, false},
    {26, "I32", "i32", 1, 4, false},
    {27, "I64", "i64", 1, 8, false},
    {28, "F64", "f64", 1, 8, false},
    {29, "IQ1_M", "iq1_m", 256, 56, true},
    {30, "BF16", "bf16", 1, 2, false},
    {31, "Q4_0_4_4", "q4_0_4_4 (removed)", 0, 0, true},
    {32, "Q4_0_4_8", "q4_0_4_8 (removed)", 0, 0, true},
    {33, "Q4_0_8_8", "q4_0_8_8 (removed)", 0, 0, true},
    {34, "TQ1_0", "tq1_0", 256, 54, true},
    {35, "TQ2_0", "tq2_0", 256, 66, true},
    {36, "IQ4_NL_4_4", "iq4_nl_4_4 (removed)", 0, 0, true},
    {37, "IQ4_NL_4_8", "iq4_nl_4_8 (removed)", 0, 0, true},
    {38, "IQ4_NL_8_8", "iq4_nl_8_8 (removed)", 0, 0, true},
    {39, "MXFP4", "mxfp4", 32, 17, true},
    {40, "NVFP4", "nvfp4", 64, 36, true},
    {41, "Q1_0", "q1_0", 128, 18, true},
    {42, "Q2_0", "q2_0", 64, 18, true},
}};

constexpr bool table_is_indexed_by_id() {
  for (uint32_t i = 0; i < kTable.size(); ++i) {
    if (kTable[i].id != i) return false;
  }
  return true;
}
static_assert(table_is_indexed_by_id(), "row i must describe type id i");
static_assert(kTable.size() == kGgmlTypeCount);

}  // namespace

const GgmlTypeInfo* ggml_type_info(uint32_t id) {
  return id < kTable.size() ? &kTable[id] : nullptr;
}

std::optional<std::span<const uint16_t>> ggml_big_endian_f16_fields(uint32_t id) {
  // gguf_convert_endian.py (ngxson/llama.cpp at 3f545beccee6): byteswap_q4_0 / q8_0 / q1_0
  // swap the leading f16 d; byteswap_q4_k swaps d and dmin; byteswap_q6_k the d at 208;
  // byteswap_tq2_0 the d at 64; MXFP4 and NVFP4 are byteswap_noop (no multi-byte field).
  static constexpr uint16_t kFirst[] = {0};
  static constexpr uint16_t kQ4K[] = {0, 2};
  static constexpr uint16_t kQ6K[] = {208};
  static constexpr uint16_t kTQ20[] = {64};
  switch (id) {
    case 2: case 8: case 41: return std::span<const uint16_t>(kFirst);  // Q4_0, Q8_0, Q1_0
    case 12: return std::span<const uint16_t>(kQ4K);                    // Q4_K
    case 14: return std::span<const uint16_t>(kQ6K);                    // Q6_K
    case 35: return std::span<const uint16_t>(kTQ20);                   // TQ2_0
    case 39: case 40: return std::span<const uint16_t>();               // MXFP4, NVFP4
    default: return std::nullopt;
  }
}

std::optional<uint64_t> ggml_nbytes(const GgmlTypeInfo& t, uint64_t elements) {
  if (t.block_elements == 0 || elements % t.block_elements != 0) return std::nullopt;
  return checked_mul(elements / t.block_elements, t.block_bytes);
}

}  // namespace amn
