// Floating-point casts between F64, F32, F16 and BF16, on little-endian byte spans
// (tensor data in files is not necessarily aligned to its element size).
//
// Semantics follow PyTorch's CPU casts (the canonical producer of most checkpoints),
// as observed byte for byte with torch 1.13.1 `.to(dtype)` on contiguous tensors
// (fixtures/casts/README.md):
//  - F32 -> BF16: round to nearest even; every NaN becomes 0xFFFF. That is what
//    torch's vectorized x86 path writes for contiguous tensors (and newer torch still
//    does); c10::BFloat16's scalar round_to_nearest_even would give 0x7FC0, which
//    torch only uses for 0-d and strided tensors.
//  - F32 -> F16: round to nearest even, overflow to +-Inf, NaN becomes sign|0x7E00
//    (c10 fp16_ieee_from_fp32_value).
//  - F16 -> F32: exact, except that NaNs come out quiet: sign|0x7FC00000|(payload<<13)
//    (c10's conversion multiplies NaNs in floating point; F16C does the same).
//  - BF16 -> F32: exact (bits << 16), signalling NaNs included.
//  - F64 -> F32: round to nearest even (a C cast); NaN keeps its sign and the top 22
//    payload bits and becomes quiet: sign|0x7FC00000|(payload >> 29), what x86 and Arm
//    conversions produce. Computed with integer operations for NaNs, because WASM
//    leaves NaN bits of float arithmetic unspecified.
//  - F64 -> F16/BF16: through F32 (double rounding), as PyTorch does; so F64 NaN ->
//    BF16 is 0xFFFF. (Torch 1.13 itself writes 0x7FC0 for the last count % 16
//    elements of an F64 -> BF16 cast: its scalar tail. We do not copy that.)
//  - F16 -> BF16: through F32; NaN becomes 0x7FC0 (torch converts Half -> BFloat16
//    element by element with c10's scalar rounding).
//  - BF16 -> F16: through F32 (exact), then as F32 -> F16.
// Every cast has a scalar reference (the specification, namespace amn::scalar) and a
// Highway SIMD version; both must give identical bytes on every target. Float
// arithmetic (F32 -> F16 rounding, F64 -> F32) assumes the default IEEE environment:
// round to nearest, no flush-to-zero.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/dtype.h"
#include "core/error.h"

namespace amn {

// Casts `count` elements from `in` (dtype from) to `out` (dtype to). Both of from/to must
// be F16, BF16, F32 or F64 (to may not be F64); from == to is a copy. The spans must
// hold count * element size bytes. Dispatches to the best compiled implementation.
void cast_floats(DType from, DType to, const uint8_t* in, uint8_t* out, size_t count);

// True when cast_floats handles the pair (the rule above).
bool can_cast_floats(DType from, DType to);

namespace scalar {
void cast_floats(DType from, DType to, const uint8_t* in, uint8_t* out, size_t count);
uint16_t f32_to_bf16(float f);
uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);
float bf16_to_f32(uint16_t b);
// The remaining element casts, on bit patterns.
uint16_t f16_to_bf16(uint16_t h);
uint16_t bf16_to_f16(uint16_t b);
uint32_t f64_to_f32_bits(uint64_t d);
}  // namespace scalar

// Implementation selection (like simdjson's SIMDJSON_FORCE_IMPLEMENTATION). The
// environment variable AMN_FORCE_IMPL=scalar|<highway target name, lower case> picks one
// at start-up (read once, at first use; an unknown name leaves the default, and check_forced_impl
// reports it); tests call
// force_impl directly to run every compiled implementation. Highway target names are
// "avx3", "avx2", "sse4", "ssse3", "neon", "wasm", and "hwy_scalar" for Highway's
// one-lane fallback target (not the same code as "scalar", the reference). On x86 the
// choice applies to every Highway kernel of the process (it goes through
// hwy::SetSupportedTargetsForTest).
std::string_view active_impl_name();
// Names of every implementation this binary can run on this CPU, "scalar" first.
std::span<const std::string_view> available_impls();
// Returns false when the name is not available.
bool force_impl(std::string_view name);
// An invalid_argument error when AMN_FORCE_IMPL is set to a name that is not available
// (listing the ones that are), so a typo cannot silently leave the default in force;
// success when it is unset or valid. Surfaces call it before any work (the CLI at start).
Status check_forced_impl();
// True when "scalar" (the reference) is the implementation in use: what other kernels'
// dispatchers (kernels/ggml/dequantize.cpp) check, without active_impl_name's cost
// (on x86 that asks libhwy, which re-runs CPUID: tens of microseconds in a VM).
bool reference_impl_forced();

}  // namespace amn
