// The fast paths of the integer kernels (GPTQ, AWQ, compressed-tensors, MLX): table
// lookups for codes of at most 4 bits, vector arithmetic for 5 to 8 bits (affine_runs);
// internal to kernels/quant.
//
// A code of b <= 4 bits with one (zero, scale[, bias]) per group can only give 16
// outputs per group. So each group's 16 outputs are computed first, by the reference's
// own arithmetic and store_rounded (so they are its bytes by construction), and every
// code is then a table lookup: per output byte, one 16-byte shuffle of 16 codes
// (packed-inl.h, compiled per Highway target by packed_simd.cpp). What is left to the
// SIMD code is moving bits: unpacking codes to one byte each, and the lookups.
//
// A family kernel walks its rows in windows of whole groups (at most kWindowCodes codes
// unpacked at a time, at most kMaxGroups tables). Scattered groups (GPTQ act-order,
// compressed-tensors g_idx) need every group's table at once, so at most kMaxGroups
// groups; beyond that the family kernel leaves the work to its reference loop.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace amn::quant::lut {

inline constexpr size_t kMaxGroups = 256;
inline constexpr size_t kWindowCodes = 2048;
// Codes are unpacked into buffers this much longer than the codes, zeroed, so that the
// last 16-code lookup of a run reads no uninitialized byte.
inline constexpr size_t kCodePad = 16;

// The output bytes of codes 0..15 of up to kMaxGroups groups.
struct Tables {
  size_t out_bytes = 2;  // 2 (F16, BF16) or 4 (F32)
  // [group][code] output elements, as store_rounded writes them
  alignas(16) uint8_t raw[kMaxGroups * 16 * 4];
  // [group][output byte][code]: the shuffle tables
  alignas(16) uint8_t planes[kMaxGroups * 4 * 16];
};

// Fills tables for `groups` groups from the f32 values the reference computes before
// its last rounding, values[g * 16 + code], rounded and cast by store_rounded.
void build_tables(Tables& t, DType canonical, DType out, const float* values, size_t groups);

// True when the Highway path is in use (not the reference: kernels/cast.h force_impl,
// AMN_FORCE_IMPL=scalar).
bool lut_enabled();

// Dispatched to the best Highway target (packed_simd.cpp):
// n 4-bit codes of an LSB-first stream starting at `bytes` (low nibble first).
void unpack_nibbles(const uint8_t* bytes, size_t n, uint8_t* codes);
// Nibble `nibble` (0..7) of each of n little-endian 32-bit words.
void nibble_of_words(const uint8_t* words, size_t n, uint32_t nibble, uint8_t* codes);
// Outputs of n codes whose groups are consecutive table groups: the first `first_run`
// codes belong to table group `group`, then every `group_size` codes to the next.
void lookup_runs(const Tables& t, size_t group, const uint8_t* codes, size_t n, size_t first_run,
                 size_t group_size, uint8_t* dst);

// The affine path for codes of 5 to 8 bits (a table per group would cost more than its
// codes): the reference's own float operations, repeated in vectors with its rounding
// (cast-inl.h), so the same bytes on every target. Per group, one of
//  - (code - offset) * scale                  (GPTQ, compressed-tensors; bias null)
//  - round(code * scale) + bias               (MLX: two array ops, each rounded)
// then rounded to `canonical` and cast to `out` as store_rounded does. Codes are one byte
// each, XOR-ed with code_xor first (0x80 turns int8 codes into code + 128).
struct AffineGroups {
  const float* offset = nullptr;
  const float* scale = nullptr;
  const float* bias = nullptr;
};
// Outputs of n codes whose groups are consecutive entries of g: the first `first_run`
// codes use entry 0, then every `group_size` codes the next. False (nothing written) on
// Highway's one-lane fallback target: the caller runs its reference loop.
bool affine_runs(DType canonical, DType out, const AffineGroups& g, const uint8_t* codes, uint8_t code_xor, size_t n,
                 size_t first_run, size_t group_size, uint8_t* dst);
// affine_runs' arguments, as the Highway half takes them.
struct AffineArgs {
  const AffineGroups& g;
  const uint8_t* codes;
  uint8_t code_xor;
  size_t n, first_run, group_size;
  uint8_t* dst;
};

// Portable helpers the family kernels share.
// n codes of `bits` (1..8) each from an LSB-first bit stream, the first at bit `bit`.
void unpack_bits(const uint8_t* bytes, uint64_t bit, uint32_t bits, size_t n, uint8_t* codes);
// Outputs of n codes whose group is groups[k] (scattered groups; every group < table size).
void lookup_scattered(const Tables& t, const uint8_t* codes, const uint32_t* groups, size_t n, uint8_t* dst);

}  // namespace amn::quant::lut
