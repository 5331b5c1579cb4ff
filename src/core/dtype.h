// One table of element types, read by every part (parsers, planner, kernels, reports)
// instead of a switch in each. Sizes are given as blocks, the way ggml's type_traits
// does, so sub-byte types (F4, F6) and, later, quantized block types fit the same rule:
//   nbytes = elements / block_elems * block_bytes   (elements must divide evenly).
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/error.h"

namespace amn {

enum class DType : uint8_t {
  BOOL, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ,
  F4, F6_E2M3, F6_E3M2,
  I16, U16, F16, BF16, I32, U32, F32, C64, F64, I64, U64,
};
inline constexpr int kDTypeCount = 22;

enum class DTypeKind : uint8_t { boolean, unsigned_int, signed_int, floating, complex };

struct DTypeInfo {
  DType dtype;
  std::string_view name;   // safetensors spelling, e.g. "BF16"
  uint32_t block_elems;    // logical elements per block
  uint32_t block_bytes;    // bytes per block
  DTypeKind kind;
};

const DTypeInfo& dtype_info(DType t);
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
// Lower-case user spelling for conversion targets: "bf16" | "f16" | "f32".
std::optional<DType> float_target_from_name(std::string_view name);

// Bytes occupied by `elements` values of type t, or an error when the count does not
// fill whole blocks or overflows.
Result<uint64_t> dtype_nbytes(DType t, uint64_t elements);

// Floating types the cast kernels read (F16, BF16, F32, F64).
bool is_castable_float(DType t);

}  // namespace amn
