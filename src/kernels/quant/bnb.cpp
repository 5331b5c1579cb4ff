#include "kernels/quant/bnb.h"

#include <cstring>
#include <string>

#include "kernels/cast.h"

namespace amn::quant {
namespace {

// csrc/cpu_ops.cpp fp4_lut / nf4_lut (the CUDA kernel's fp4_dequantization_lut with its
// sign, nf4_dequantization_lut): the same float literals.
constexpr float kFp4[16] = {
    0.0f,  0.005208333333f,  0.66666667f,  1.0f,  0.33333333f,  0.5f,  0.16666667f,  0.25f,
    -0.0f, -0.005208333333f, -0.66666667f, -1.0f, -0.33333333f, -0.5f, -0.16666667f, -0.25f,
};
constexpr float kNf4[16] = {
    -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f, -0.28444138169288635f,
    -0.18477343022823334f, -0.09105003625154495f, 0.0f, 0.07958029955625534f, 0.16093020141124725f,
    0.24611230194568634f, 0.33791524171829224f, 0.44070982933044434f, 0.5626170039176941f,
    0.7229568362236023f, 1.0f,
};

float load_f32(const uint8_t* p, uint64_t i) {
  float f;
  std::memcpy(&f, p + 4 * i, 4);
  return f;
}

void store(DType to, uint8_t* out, uint64_t i, float v) {
  if (to == DType::F32) {
    std::memcpy(out + 4 * i, &v, 4);
    return;
  }
  const uint16_t h = to == DType::BF16 ? scalar::f32_to_bf16(v) : scalar::f32_to_f16(v);
  out[2 * i] = static_cast<uint8_t>(h);
  out[2 * i + 1] = static_cast<uint8_t>(h >> 8);
}

Error bad(std::string m) { return make_error(ErrorCode::invalid_argument, "bitsandbytes: " + std::move(m)); }

}  // namespace

// bnb_simd.cpp: the Highway kernels of the current target (false, nothing written, where
// there are none).
bool dequantize_bnb4_simd(const Bnb4Params& p, const uint8_t* packed, const float* absmax, uint64_t begin,
                          uint64_t end, DType to, uint8_t* out);
bool dequantize_bnb_int8_rows_simd(uint64_t cols, const uint8_t* weight, const uint8_t* scb, uint64_t row_begin,
                                   uint64_t row_end, DType to, uint8_t* out);

float bnb4_codebook(Bnb4Type type, uint8_t code) { return (type == Bnb4Type::fp4 ? kFp4 : kNf4)[code & 0x0F]; }

Status validate_bnb4(const Bnb4Params& p, uint64_t packed_bytes, uint64_t absmax_count) {
  if (p.blocksize < 32 || p.blocksize > 4096 || (p.blocksize & (p.blocksize - 1)) != 0)
    return bad("blocksize " + std::to_string(p.blocksize) + " is not a power of two in 32..4096");
  if (p.elements == 0) return bad("empty quant_state shape");
  if (p.elements > (uint64_t{1} << 42)) return bad("quant_state shape too large");
  const uint64_t need_packed = (p.elements + 1) / 2;
  if (packed_bytes != need_packed)
    return bad("packed weight has " + std::to_string(packed_bytes) + " bytes, the shape needs " +
               std::to_string(need_packed));
  const uint64_t need_absmax = (p.elements + p.blocksize - 1) / p.blocksize;
  if (absmax_count != need_absmax)
    return bad("absmax has " + std::to_string(absmax_count) + " values, the shape needs " +
               std::to_string(need_absmax) + " (one per " + std::to_string(p.blocksize) + ")");
  return {};
}

void dequantize_bnb4(const Bnb4Params& p, const uint8_t* packed, std::span<const float> absmax, uint64_t begin,
                     uint64_t end, DType to, uint8_t* out) {
  // The SIMD kernel unless the reference is forced (kernels/cast.h: force_impl, AMN_FORCE_IMPL).
  if (!reference_impl_forced() && dequantize_bnb4_simd(p, packed, absmax.data(), begin, end, to, out)) return;
  const float* lut = p.type == Bnb4Type::fp4 ? kFp4 : kNf4;
  for (uint64_t i = begin; i < end; ++i) {
    const uint8_t byte = packed[i / 2];
    const uint8_t code = (i & 1) ? (byte & 0x0F) : (byte >> 4);  // high nibble first
    store(to, out, i - begin, lut[code] * absmax[i / p.blocksize]);
  }
}

Status validate_bnb_nested(uint64_t count, uint64_t nested_blocksize, uint64_t nested_absmax_count,
                           uint64_t nested_map_count) {
  if (nested_blocksize == 0 || nested_blocksize > 4096) return bad("nested_blocksize out of range");
  if (nested_map_count != 256)
    return bad("nested_quant_map has " + std::to_string(nested_map_count) + " values, expected 256");
  const uint64_t need = (count + nested_blocksize - 1) / nested_blocksize;
  if (nested_absmax_count != need)
    return bad("nested_absmax has " + std::to_string(nested_absmax_count) + " values, expected " +
               std::to_string(need));
  return {};
}

void resolve_bnb_nested_absmax(const uint8_t* codes, uint64_t count, const uint8_t* nested_map_f32,
                               const uint8_t* nested_absmax_f32, uint64_t nested_blocksize, float offset,
                               float* absmax) {
  for (uint64_t j = 0; j < count; ++j) {
    const float v = load_f32(nested_map_f32, codes[j]) * load_f32(nested_absmax_f32, j / nested_blocksize);
    absmax[j] = v + offset;
  }
}

Status validate_bnb_int8(uint64_t rows, uint64_t cols, uint64_t weight_bytes, uint64_t scb_bytes) {
  if (rows == 0 || cols == 0) return bad("empty int8 weight");
  if (rows > (uint64_t{1} << 40) / cols) return bad("int8 weight too large");
  if (weight_bytes != rows * cols) return bad("int8 weight has " + std::to_string(weight_bytes) + " bytes, expected rows * cols");
  if (scb_bytes != rows * 4)
    return bad("SCB has " + std::to_string(scb_bytes / 4) + " values, expected one per row (" + std::to_string(rows) + ")");
  return {};
}

void dequantize_bnb_int8_rows(uint64_t cols, const uint8_t* weight, const uint8_t* scb, uint64_t row_begin,
                              uint64_t row_end, DType to, uint8_t* out) {
  if (!reference_impl_forced() && dequantize_bnb_int8_rows_simd(cols, weight, scb, row_begin, row_end, to, out))
    return;
  // torch: A * stats.view(-1, 1) * 7.874015718698502e-3, the scalar taken as float.
  constexpr float kInv127 = static_cast<float>(7.874015718698502e-3);
  uint64_t i = 0;
  for (uint64_t r = row_begin; r < row_end; ++r) {
    const float s = load_f32(scb, r);
    const uint8_t* w = weight + (r - row_begin) * cols;
    for (uint64_t c = 0; c < cols; ++c, ++i) {
      const float q = static_cast<float>(static_cast<int8_t>(w[c]));
      const float a = q * s;
      store(to, out, i, a * kInv127);
    }
  }
}

}  // namespace amn::quant
