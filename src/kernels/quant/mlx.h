// MLX affine quantization (mlx-lm checkpoints: <base>.weight U32 + .scales + .biases)
// dequantization, bit-exact with mx.dequantize on the CPU (fixtures/quantized/mlx).
// Layout, per-layer config overrides and arithmetic: docs/formats/quantized/mlx.md.
// Shared conventions (output rows, canonical dtype, validation): kernels/quant/packed.h.
#pragma once
#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "core/error.h"

namespace amn::quant {

struct MlxParams {
  uint32_t bits = 4;          // 2, 3, 4, 5, 6 or 8
  uint64_t group_size = 64;   // 32, 64 or 128 (others accepted when they divide in_features)
  uint64_t out_features = 0;  // weight rows
  uint64_t in_features = 0;   // weight columns * 32 / bits
  DType scale_dtype = DType::BF16;  // scales and biases share it
};

struct MlxTensors {
  std::span<const uint8_t> weight;  // U32 [out, in * bits / 32]
  std::span<const uint8_t> scales;  // [out, in / group_size]
  std::span<const uint8_t> biases;  // [out, in / group_size]
};

Status validate_mlx(const MlxParams& p, const MlxTensors& t);

// Rows [row_begin, row_end) of the [out_features, in_features] weight, in `out` type:
// round(round(q * scale) + bias), both roundings to the scale dtype.
Status dequantize_mlx_rows(const MlxParams& p, const MlxTensors& t, uint64_t row_begin, uint64_t row_end,
                           DType out, std::span<uint8_t> dst);

}  // namespace amn::quant
