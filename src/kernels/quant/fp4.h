// FP4 (E2M1) weights with shared scales (scalar reference in fp4.cpp, Highway kernels with
// the same bytes in fp4-inl.h, chosen as kernels/cast.h says):
//  - MXFP4 as gpt-oss ships it: <proj>_blocks U8 [..., rows, groups, 16] (32 E2M1 codes per
//    group, low nibble = even column) and <proj>_scales U8 [..., rows, groups] (E8M0:
//    2^(s - 127)). Bit-exact with transformers' convert_moe_packed_tensors for every target
//    dtype (it takes the dtype as a parameter): lut[q] * 2^(s - 127) in f32 (exact but for
//    s = 255: 2^128 is +inf, so 0 * inf is NaN), rounded once to the target. Output is the
//    nn.Linear orientation [rows, groups * 32]; transformers returns it transposed.
//  - NVFP4, two layouts (docs/formats/quantized/nvfp4.md): packed U8 [rows, cols / 2] (low
//    nibble = even column), F8_E4M3 block scales [rows, cols / 16], one F32 global scale.
//    ModelOpt (NVFP4QTensor.dequantize): e2m1[q] * f32(scale * weight_scale_2) in f32, code
//    8 is +0.0, rounded once to the target. compressed-tensors (NVFP4PackedCompressor.
//    decompress): x * f32(scale / weight_global_scale) in f32 with code 8 = -0.0, rounded to
//    BF16 (decompress's fixed dtype); F16 / F32 are that BF16 cast.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "core/error.h"

namespace amn::quant {

struct Mxfp4Params {
  uint64_t rows = 0;    // experts * out_features (every leading dimension folded in)
  uint64_t groups = 0;  // in_features / 32
};

Status validate_mxfp4(const Mxfp4Params& p, uint64_t blocks_bytes, uint64_t scales_bytes);

// Rows [row_begin, row_end): `blocks` points at row row_begin's 16 * groups bytes,
// `scales` at its groups bytes. Writes (row_end - row_begin) * groups * 32 elements.
void dequantize_mxfp4_rows(const Mxfp4Params& p, const uint8_t* blocks, const uint8_t* scales, uint64_t row_begin,
                           uint64_t row_end, DType to, uint8_t* out);

enum class Nvfp4Layout : uint8_t { modelopt, compressed_tensors };

struct Nvfp4Params {
  Nvfp4Layout layout = Nvfp4Layout::modelopt;
  uint64_t rows = 0, cols = 0;  // cols a multiple of 16
  float global_scale = 1.0f;    // weight_scale_2 (multiplies) / weight_global_scale (divides)
};

Status validate_nvfp4(const Nvfp4Params& p, uint64_t packed_bytes, uint64_t scales_bytes);

// `packed` and `scales` point at row row_begin's cols / 2 and cols / 16 bytes.
void dequantize_nvfp4_rows(const Nvfp4Params& p, const uint8_t* packed, const uint8_t* scales, uint64_t row_begin,
                           uint64_t row_end, DType to, uint8_t* out);

}  // namespace amn::quant
