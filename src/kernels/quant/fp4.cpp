#include "kernels/quant/fp4.h"

#include <cstring>
#include <string>

#include "kernels/cast.h"
#include "kernels/quant/fp4_values.h"
#include "kernels/quant/fp8.h"

namespace amn::quant {
namespace {

float bits_to_f32(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

void store16(uint8_t* out, uint64_t i, uint16_t v) {
  out[2 * i] = static_cast<uint8_t>(v);
  out[2 * i + 1] = static_cast<uint8_t>(v >> 8);
}

void store(DType to, uint8_t* out, uint64_t i, float v) {
  if (to == DType::F32) {
    std::memcpy(out + 4 * i, &v, 4);
    return;
  }
  store16(out, i, to == DType::BF16 ? scalar::f32_to_bf16(v) : scalar::f32_to_f16(v));
}

Error bad(std::string m) { return make_error(ErrorCode::invalid_argument, std::move(m)); }

}  // namespace

// fp4_simd.cpp: the Highway kernels of the current target (false, nothing written, where
// there are none). `lut`: the E2M1 values, from here so that fp4_simd.cpp cannot fold them.
bool dequantize_mxfp4_rows_simd(const Mxfp4Params& p, const float* lut, const uint8_t* blocks, const uint8_t* scales,
                                uint64_t row_begin, uint64_t row_end, DType to, uint8_t* out);
bool dequantize_nvfp4_rows_simd(const Nvfp4Params& p, const float* lut, const uint8_t* packed, const uint8_t* scales,
                                uint64_t row_begin, uint64_t row_end, DType to, uint8_t* out);

Status validate_mxfp4(const Mxfp4Params& p, uint64_t blocks_bytes, uint64_t scales_bytes) {
  if (p.rows == 0 || p.groups == 0) return bad("mxfp4: empty blocks tensor");
  if (p.rows > (uint64_t{1} << 36) / p.groups) return bad("mxfp4: blocks tensor too large");
  if (blocks_bytes != p.rows * p.groups * 16)
    return bad("mxfp4: blocks have " + std::to_string(blocks_bytes) + " bytes, expected rows * groups * 16 = " +
               std::to_string(p.rows * p.groups * 16));
  if (scales_bytes != p.rows * p.groups)
    return bad("mxfp4: scales have " + std::to_string(scales_bytes) + " bytes, expected one per 32 values (" +
               std::to_string(p.rows * p.groups) + ")");
  return {};
}

void dequantize_mxfp4_rows(const Mxfp4Params& p, const uint8_t* blocks, const uint8_t* scales, uint64_t row_begin,
                           uint64_t row_end, DType to, uint8_t* out) {
  // The SIMD kernel unless the reference is forced (kernels/cast.h: force_impl, AMN_FORCE_IMPL).
  if (!reference_impl_forced() &&
      dequantize_mxfp4_rows_simd(p, kE2M1Signed, blocks, scales, row_begin, row_end, to, out))
    return;
  const uint64_t n = row_end - row_begin;
  uint64_t i = 0;
  for (uint64_t r = 0; r < n; ++r) {
    for (uint64_t g = 0; g < p.groups; ++g) {
      const uint8_t s = scales[r * p.groups + g];
      const float d = e8m0_to_f32(s);
      const uint8_t* b = blocks + (r * p.groups + g) * 16;
      for (int j = 0; j < 16; ++j) {
        for (int half = 0; half < 2; ++half, ++i) {
          const uint8_t q = half ? (b[j] >> 4) : (b[j] & 0x0F);
          float v;
          if (s == 255 && (q & 7) == 0) {
            v = bits_to_f32(0xFFC00000u);  // 0 * inf: x86's default NaN, which torch wrote
          } else {
            v = kE2M1Signed[q] * d;
          }
          store(to, out, i, v);
        }
      }
    }
  }
}

Status validate_nvfp4(const Nvfp4Params& p, uint64_t packed_bytes, uint64_t scales_bytes) {
  if (p.rows == 0 || p.cols == 0) return bad("nvfp4: empty weight");
  if (p.cols % 16 != 0) return bad("nvfp4: in_features " + std::to_string(p.cols) + " is not a multiple of 16");
  if (p.rows > (uint64_t{1} << 40) / p.cols) return bad("nvfp4: weight too large");
  if (packed_bytes != p.rows * p.cols / 2)
    return bad("nvfp4: packed weight has " + std::to_string(packed_bytes) + " bytes, expected rows * cols / 2 = " +
               std::to_string(p.rows * p.cols / 2));
  if (scales_bytes != p.rows * p.cols / 16)
    return bad("nvfp4: weight_scale has " + std::to_string(scales_bytes) + " values, expected one per 16 (" +
               std::to_string(p.rows * p.cols / 16) + ")");
  if (!(p.global_scale == p.global_scale)) return bad("nvfp4: global scale is NaN");
  return {};
}

void dequantize_nvfp4_rows(const Nvfp4Params& p, const uint8_t* packed, const uint8_t* scales, uint64_t row_begin,
                           uint64_t row_end, DType to, uint8_t* out) {
  const bool mo = p.layout == Nvfp4Layout::modelopt;
  const float* lut = mo ? kE2M1ModelOpt : kE2M1Signed;
  if (!reference_impl_forced() && dequantize_nvfp4_rows_simd(p, lut, packed, scales, row_begin, row_end, to, out))
    return;
  const uint64_t n = row_end - row_begin, groups = p.cols / 16;
  uint64_t i = 0;
  for (uint64_t r = 0; r < n; ++r) {
    for (uint64_t g = 0; g < groups; ++g) {
      const float s = fp8_to_f32(DType::F8_E4M3, scales[r * groups + g]);
      const float bs = mo ? s * p.global_scale : s / p.global_scale;
      const uint8_t* b = packed + r * (p.cols / 2) + g * 8;
      for (int j = 0; j < 8; ++j) {
        for (int half = 0; half < 2; ++half, ++i) {
          const uint8_t q = half ? (b[j] >> 4) : (b[j] & 0x0F);
          const float v = lut[q] * bs;
          if (mo) {
            store(to, out, i, v);
            continue;
          }
          const uint16_t bf = scalar::f32_to_bf16(v);  // decompress returns BF16
          if (to == DType::BF16) store16(out, i, bf);
          else if (to == DType::F16) store16(out, i, scalar::bf16_to_f16(bf));
          else store(DType::F32, out, i, scalar::bf16_to_f32(bf));
        }
      }
    }
  }
}

}  // namespace amn::quant
