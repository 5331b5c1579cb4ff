// 16-byte table lookups (pshufb / tbl / i8x16.swizzle) shared by the ggml and the
// quantized-safetensors kernels. Highway 1.0.3's WASM TableLookupBytes goes through memory
// byte by byte (it avoids i8x16.swizzle, against a V8 bug fixed in 2021); every Node and
// browser we support has the instruction, so on WASM we emit it directly. The swizzle gives
// 0 for indices >= 16, which is what TableLookupBytesOr0 promises for indices with the top
// bit set; for indices below 16 both forms are the same lookup on every target.

// Per-target include guard (toggled by foreach_target.h).
#if defined(AMN_KERNELS_BYTE_LOOKUP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef AMN_KERNELS_BYTE_LOOKUP_INL_H_
#undef AMN_KERNELS_BYTE_LOOKUP_INL_H_
#else
#define AMN_KERNELS_BYTE_LOOKUP_INL_H_
#endif

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
// table[index[i]] for indices below 16 (one 128-bit vector of u8 lanes).
template <class V>
HWY_INLINE V LookupBytes16(V table, V index) {
#if HWY_TARGET == HWY_WASM
  return V{wasm_i8x16_swizzle(table.raw, index.raw)};
#else
  return hn::TableLookupBytes(table, index);
#endif
}

// table[index[i]], or 0 where index[i] has its top bit set (0x80).
template <class V>
HWY_INLINE V LookupBytes16Or0(V table, V index) {
#if HWY_TARGET == HWY_WASM
  return V{wasm_i8x16_swizzle(table.raw, index.raw)};
#else
  return hn::TableLookupBytesOr0(table, index);
#endif
}
#endif  // HWY_TARGET != HWY_SCALAR

}  // namespace HWY_NAMESPACE
}  // namespace amn
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
