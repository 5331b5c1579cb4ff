#include "kernels/quant/fp8.h"

#include <cstring>
#include <string>

#include "kernels/cast.h"
#include "kernels/quant/fp4_values.h"

namespace amn::quant {
namespace {

float bits_to_f32(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

uint32_t f32_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

uint16_t load16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

float load_scale(DType t, const uint8_t* base, uint64_t index) {
  switch (t) {
    case DType::BF16: return scalar::bf16_to_f32(load16(base + 2 * index));
    case DType::F16: return scalar::f16_to_f32(load16(base + 2 * index));
    case DType::F8_E8M0: return e8m0_to_f32(base[index]);
    default: {
      uint32_t b;
      std::memcpy(&b, base + 4 * index, 4);
      return bits_to_f32(b);
    }
  }
}

void store16(uint8_t* out, uint64_t i, uint16_t v) {
  out[2 * i] = static_cast<uint8_t>(v);
  out[2 * i + 1] = static_cast<uint8_t>(v >> 8);
}
void store32(uint8_t* out, uint64_t i, uint32_t v) { std::memcpy(out + 4 * i, &v, 4); }

// An F32 result to the target dtype (PyTorch's casts).
void store_from_f32(DType to, uint8_t* out, uint64_t i, float v) {
  if (to == DType::BF16) return store16(out, i, scalar::f32_to_bf16(v));
  if (to == DType::F16) return store16(out, i, scalar::f32_to_f16(v));
  store32(out, i, f32_bits(v));
}

bool is_nan_code(DType t, uint8_t c) {
  return t == DType::F8_E4M3 ? (c & 0x7F) == 0x7F : (c & 0x7C) == 0x7C && (c & 0x03) != 0;
}

}  // namespace

// fp8_simd.cpp: the Highway kernel of the current target (false, nothing written, where
// there is none).
bool dequantize_fp8_rows_simd(const Fp8Params& p, const uint8_t* weight, const uint8_t* scales, uint64_t row_begin,
                              uint64_t row_end, DType to, uint8_t* out);

float fp8_to_f32(DType weight, uint8_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x80) << 24;
  if (weight == DType::F8_E5M2) {
    // E5M2 is the top byte of an F16.
    return scalar::f16_to_f32(static_cast<uint16_t>(code << 8));
  }
  if ((code & 0x7F) == 0x7F) return bits_to_f32(sign | 0x7FC00000u);
  const uint32_t e = (code >> 3) & 0xF, m = code & 0x7;
  if (e == 0) {
    // Subnormal: m * 2^-9, exact in f32; built from bits so no arithmetic rounding.
    const float v = static_cast<float>(m) * 0.001953125f;
    return bits_to_f32(f32_bits(v) | sign);
  }
  return bits_to_f32(sign | ((e + 120) << 23) | (m << 20));
}

Status validate_fp8(const Fp8Params& p, uint64_t weight_bytes, uint64_t scale_bytes) {
  auto bad = [](std::string m) { return make_error(ErrorCode::invalid_argument, "fp8: " + std::move(m)); };
  if (p.weight != DType::F8_E4M3 && p.weight != DType::F8_E5M2) return bad("weight dtype must be F8_E4M3 or F8_E5M2");
  if (p.scale != DType::F32 && p.scale != DType::BF16 && p.scale != DType::F16 && p.scale != DType::F8_E8M0)
    return bad("scale dtype must be F32, BF16, F16 or F8_E8M0");
  if (p.compute != DType::F32 && (p.compute != p.scale || p.scale == DType::F8_E8M0))
    return bad("compute dtype must be F32 or the (BF16 / F16) scale dtype");
  if (p.rows == 0 || p.cols == 0) return bad("empty weight");
  if (p.rows > (uint64_t{1} << 40) / p.cols) return bad("weight too large");
  if (weight_bytes != p.rows * p.cols)
    return bad("weight has " + std::to_string(weight_bytes) + " bytes, expected rows * cols = " +
               std::to_string(p.rows * p.cols));
  if (p.block_rows == 0 || p.block_cols == 0 || p.scale_rows == 0 || p.scale_cols == 0)
    return bad("zero block or scale grid size");
  // Every element needs a scale, and every scale row / column must cover some element.
  const uint64_t need_r = (p.rows + p.block_rows - 1) / p.block_rows;
  const uint64_t need_c = (p.cols + p.block_cols - 1) / p.block_cols;
  if (need_r != p.scale_rows || need_c != p.scale_cols)
    return bad("scale grid " + std::to_string(p.scale_rows) + "x" + std::to_string(p.scale_cols) + " does not fit a " +
               std::to_string(p.rows) + "x" + std::to_string(p.cols) + " weight in " + std::to_string(p.block_rows) +
               "x" + std::to_string(p.block_cols) + " blocks (needs " + std::to_string(need_r) + "x" +
               std::to_string(need_c) + ")");
  const uint64_t ssize = dtype_info(p.scale).block_bytes;
  if (scale_bytes != p.scale_rows * p.scale_cols * ssize)
    return bad("scale has " + std::to_string(scale_bytes) + " bytes, expected " +
               std::to_string(p.scale_rows * p.scale_cols * ssize));
  return {};
}

void dequantize_fp8_rows(const Fp8Params& p, const uint8_t* weight, const uint8_t* scales, uint64_t row_begin,
                         uint64_t row_end, DType to, uint8_t* out) {
  // The SIMD kernel unless the reference is forced (kernels/cast.h: force_impl, AMN_FORCE_IMPL).
  if (!reference_impl_forced() && dequantize_fp8_rows_simd(p, weight, scales, row_begin, row_end, to, out)) return;
  float table[256];
  for (int c = 0; c < 256; ++c) table[c] = fp8_to_f32(p.weight, static_cast<uint8_t>(c));
  uint64_t i = 0;
  for (uint64_t r = row_begin; r < row_end; ++r) {
    const uint8_t* w = weight + (r - row_begin) * p.cols;
    const uint64_t srow = (r / p.block_rows) * p.scale_cols;
    for (uint64_t c = 0; c < p.cols; ++c, ++i) {
      const float s = load_scale(p.scale, scales, srow + c / p.block_cols);
      const float prod = table[w[c]] * s;
      if (p.compute == DType::F32) {
        store_from_f32(to, out, i, is_nan_code(p.weight, w[c]) ? table[w[c]] : prod);
        continue;
      }
      // compressed-tensors: the product rounded to the scale dtype (BF16 / F16), then cast.
      if (p.compute == DType::BF16) {
        const uint16_t b = scalar::f32_to_bf16(prod);
        if (to == DType::BF16) store16(out, i, b);
        else if (to == DType::F16) store16(out, i, scalar::bf16_to_f16(b));
        else store32(out, i, f32_bits(scalar::bf16_to_f32(b)));
      } else {
        const uint16_t h = scalar::f32_to_f16(prod);
        if (to == DType::F16) store16(out, i, h);
        else if (to == DType::BF16) store16(out, i, scalar::f16_to_bf16(h));
        else store32(out, i, f32_bits(scalar::f16_to_f32(h)));
      }
    }
  }
}

}  // namespace amn::quant
