// Re-encoding ggml blocks with a reference's scales (`forget --like G --reuse-scales`):
// each output block keeps the scale fields of G's block at the same place (d, dmin, the
// sub-block scales and mins, E8M0 / UE4M3 exponents, the IQ scale nibbles, IQ1_S's
// delta sign) and only the codes are chosen for the input values. Re-encoding what
// ggml's dequantizer made of G (remember to F32) therefore gives G's bytes again
// (tests_native/test_ggml_requantize.cpp, every type on fixtures/ggml_quant).
//
// The rule for a code: the one whose value, computed with the dequantizer's own F32
// operations (kernels/ggml/dequant_*.cpp), is nearest the input (least |value - x|; for
// the grid types, the grid entry and signs with the least squared error over their group
// of 8, or of 4 + 4 sharing a sign byte, a parity-constrained sign set (IQ2_XXS, IQ2_XS,
// IQ3_XXS) flipping the cheapest sign; the lowest code among equals) — but G's own code
// stays unless that one is strictly nearer. So G's code is kept wherever the values
// cannot tell the codes apart: in a block or sub-block whose scale is zero (every code
// reads the same: ggml writes d = 0 with its search's codes when a tiny block's F16
// scale underflows, and its all-zero blocks differ by path, 8s from the plain
// quantizer, 0s from the importance-matrix one), between FP4's +0 and -0 codes, for a
// NaN input. Re-encoding G's own values therefore gives G's bytes: G's value is the input
// exactly, and nothing is nearer than exact.
//
// TQ2_0 codes are 0, 1, 2 (-1, 0, +1): ggml never writes 3 (+2), which the decoder
// would read (G's own 3 stays where no other code is nearer). A TQ1_0 byte (5 or 4
// trits) is packed again only when one of its trits changes. IQ1_M's delta sign (one per
// 8 elements, beside the grid index's high bits) is chosen with the grid entry, as a
// code; IQ1_S's (one per 32, beside the scale) is kept.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/ggml_type.h"

namespace amn {

// True when requantize_ggml can write this type: every type quantize_ggml writes.
bool ggml_can_requantize(GgmlType type);

// Re-encodes `blocks` blocks of `type`: `src` holds their values (block_elements each,
// F32), `ref` the reference's blocks (the same count), `dst` receives the blocks (may
// not overlap `ref`). F16 and BF16 have no scales: their values are converted as
// quantize_ggml does. Returns false for a type it cannot write (nothing written).
bool requantize_ggml(GgmlType type, const float* src, const uint8_t* ref, uint8_t* dst, size_t blocks);

namespace ggml {
// One block: `x` its values, `g` G's values (its block `ref` dequantized), `out` the
// block written: `ref` with the codes that something is strictly nearer than replaced.
using RequantizeBlockFn = void (*)(const float* x, const float* g, const uint8_t* ref, uint8_t* out);

// requantize_iq.cpp: the grid types.
void requantize_iq2_xxs(const float* x, const float* g, const uint8_t* ref, uint8_t* out);
void requantize_iq2_xs(const float* x, const float* g, const uint8_t* ref, uint8_t* out);
void requantize_iq2_s(const float* x, const float* g, const uint8_t* ref, uint8_t* out);
void requantize_iq3_xxs(const float* x, const float* g, const uint8_t* ref, uint8_t* out);
void requantize_iq3_s(const float* x, const float* g, const uint8_t* ref, uint8_t* out);
void requantize_iq1_s(const float* x, const float* g, const uint8_t* ref, uint8_t* out);
void requantize_iq1_m(const float* x, const float* g, const uint8_t* ref, uint8_t* out);
}  // namespace ggml

}  // namespace amn
