// Floating-point casts between F64, F32, F16 and BF16, on little-endian byte spans
// (tensor data in files is not necessarily aligned to its element size).
//
// Semantics follow PyTorch's CPU casts (the canonical producer of most checkpoints):
//  - F32 -> BF16: round to nearest even; NaN becomes 0x7FC0 (c10::BFloat16's
//    round_to_nearest_even).
//  - F32 -> F16: round to nearest even, overflow to +-Inf, NaN becomes sign|0x7E00
//    (c10 fp16_ieee_from_fp32_value).
//  - F16/BF16 -> F32: exact.
//  - F64 -> F16/BF16: through F32, as PyTorch does (c10::Half / c10::BFloat16 are
//    constructed from float).
// Every cast has a scalar reference (the specification, namespace amn::scalar) and a
// Highway SIMD version; both must give identical bytes on every target.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/dtype.h"

namespace amn {

// Casts `count` elements from `in` (dtype from) to `out` (dtype to). Both of from/to must
// be F16, BF16, F32 or F64 (to may not be F64); from == to is a copy. The spans must
// hold count * element size bytes. Dispatches to the best compiled implementation.
void cast_floats(DType from, DType to, const uint8_t* in, uint8_t* out, size_t count);

namespace scalar {
void cast_floats(DType from, DType to, const uint8_t* in, uint8_t* out, size_t count);
uint16_t f32_to_bf16(float f);
uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);
float bf16_to_f32(uint16_t b);
}  // namespace scalar

// Implementation selection (like simdjson's SIMDJSON_FORCE_IMPLEMENTATION). The
// environment variable AMN_FORCE_IMPL=scalar|<highway target name, lower case> picks one
// at start-up; tests call force_impl directly to run every compiled implementation.
std::string_view active_impl_name();
// Names of every implementation this binary can run on this CPU, "scalar" first.
std::span<const std::string_view> available_impls();
// Returns false when the name is not available.
bool force_impl(std::string_view name);

}  // namespace amn
