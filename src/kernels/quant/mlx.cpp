// MLX affine: each weight row is one LSB-first bit stream (uint32 words for 2/4/8 bits,
// 3- and 5-byte packs for 3/5/6 bits: the same stream), value i at bit i * bits.
#include "kernels/quant/mlx.h"

#include <algorithm>
#include <string>

#include "kernels/cast.h"
#include "kernels/quant/packed.h"
#include "kernels/quant/packed_lut.h"

namespace amn::quant {
namespace {

// The result of one MLX array op in dtype t: F16/BF16 round to nearest even (through
// the cast kernels, so whole chunks at a time); F32 is already rounded.
void round_in_place(DType t, float* v, size_t n) {
  if (t == DType::F32) return;
  uint16_t tmp[kQuantChunk];
  for (size_t done = 0; done < n; done += kQuantChunk) {
    const size_t m = n - done < kQuantChunk ? n - done : kQuantChunk;
    cast_floats(DType::F32, t, reinterpret_cast<const uint8_t*>(v + done), reinterpret_cast<uint8_t*>(tmp), m);
    cast_floats(t, DType::F32, reinterpret_cast<const uint8_t*>(tmp), reinterpret_cast<uint8_t*>(v + done), m);
  }
}

// The table-lookup path (packed_lut.h) for codes of 2 to 4 bits: each group's 16
// outputs computed as dequantize_rows computes them, then looked up per code. False
// (nothing written) leaves the rows to dequantize_rows.
bool dequantize_rows_lut(const MlxParams& p, const MlxTensors& t, uint64_t row_begin, uint64_t row_end, DType out,
                         uint8_t* dst) {
  if (p.bits > 4 || !lut::lut_enabled()) return false;
  const uint64_t in = p.in_features, gs = p.group_size, groups = in / gs;
  const uint64_t row_bytes = in * p.bits / 8;
  const size_t out_size = dtype_info(out).block_bytes;
  const uint64_t per_window = gs >= lut::kWindowCodes ? 1 : std::min<uint64_t>(lut::kMaxGroups, lut::kWindowCodes / gs);
  lut::Tables tables;
  float values[lut::kMaxGroups * 16];
  uint8_t codes[lut::kWindowCodes + lut::kCodePad] = {};
  for (uint64_t o = row_begin; o < row_end; ++o) {
    const uint8_t* row = t.weight.data() + o * row_bytes;
    uint8_t* dst_row = dst + (o - row_begin) * in * out_size;
    for (uint64_t g0 = 0; g0 < groups; g0 += per_window) {
      const uint64_t g1 = std::min(groups, g0 + per_window);
      for (uint64_t g = g0; g < g1; ++g) {
        const float s = load_quant_float(p.scale_dtype, t.scales.data(), o * groups + g);
        for (uint32_t c = 0; c < 16; ++c) values[(g - g0) * 16 + c] = float(c) * s;
      }
      const size_t entries = size_t(g1 - g0) * 16;
      round_in_place(p.scale_dtype, values, entries);
      for (uint64_t g = g0; g < g1; ++g) {
        const float b = load_quant_float(p.scale_dtype, t.biases.data(), o * groups + g);
        for (uint32_t c = 0; c < 16; ++c) values[(g - g0) * 16 + c] += b;
      }
      lut::build_tables(tables, p.scale_dtype, out, values, size_t(g1 - g0));
      for (uint64_t e = g0 * gs; e < g1 * gs; e += lut::kWindowCodes) {
        const size_t n = size_t(std::min<uint64_t>(lut::kWindowCodes, g1 * gs - e));
        if (p.bits == 4 && e % 2 == 0) {
          lut::unpack_nibbles(row + e / 2, n, codes);
        } else {
          lut::unpack_bits(row, e * p.bits, p.bits, n, codes);
        }
        lut::lookup_runs(tables, size_t(e / gs - g0), codes, n, size_t(gs - e % gs), size_t(gs),
                         dst_row + e * out_size);
      }
    }
  }
  return true;
}

// The affine path (packed_lut.h) for 5, 6 and 8 bits: round(code * scale) + bias in
// vectors. False (nothing written) leaves the rows to dequantize_rows.
bool dequantize_rows_affine(const MlxParams& p, const MlxTensors& t, uint64_t row_begin, uint64_t row_end, DType out,
                            uint8_t* dst) {
  if (p.bits <= 4 || !lut::lut_enabled()) return false;
  const uint64_t in = p.in_features, gs = p.group_size, groups = in / gs;
  const uint64_t row_bytes = in * p.bits / 8;
  const size_t out_size = dtype_info(out).block_bytes;
  float scale[lut::kWindowCodes + 1], bias[lut::kWindowCodes + 1];
  uint8_t codes[lut::kWindowCodes];
  for (uint64_t o = row_begin; o < row_end; ++o) {
    const uint8_t* row = t.weight.data() + o * row_bytes;
    // 8-bit codes are the bytes themselves: whole groups of kWindowCodes at a time.
    const uint64_t window = p.bits == 8 ? lut::kWindowCodes * gs : lut::kWindowCodes;
    for (uint64_t e = 0; e < in; e += window) {
      const size_t n = size_t(std::min<uint64_t>(window, in - e));
      const uint64_t g0 = e / gs, g1 = (e + n - 1) / gs + 1;
      load_quant_floats(p.scale_dtype, t.scales.data(), o * groups + g0, size_t(g1 - g0), scale);
      load_quant_floats(p.scale_dtype, t.biases.data(), o * groups + g0, size_t(g1 - g0), bias);
      const uint8_t* c = row + e;  // 8 bits: the codes are the bytes
      if (p.bits != 8) {
        lut::unpack_bits(row, e * p.bits, p.bits, n, codes);
        c = codes;
      }
      const lut::AffineGroups ag{nullptr, scale, bias};
      // Only the first call can fail (Highway's one-lane fallback), before anything is written.
      if (!lut::affine_runs(p.scale_dtype, out, ag, c, 0, n, size_t(gs - e % gs), size_t(gs),
                            dst + ((o - row_begin) * in + e) * out_size)) {
        return false;
      }
    }
  }
  return true;
}

void dequantize_rows(const MlxParams& p, const MlxTensors& t, uint64_t row_begin, uint64_t row_end, DType out,
                     uint8_t* dst) {
  const uint64_t in = p.in_features, groups = in / p.group_size;
  const uint64_t row_words = in * p.bits / 32;
  const uint32_t mask = (1u << p.bits) - 1u;
  const size_t out_size = dtype_info(out).block_bytes;
  float v[kQuantChunk], bias[kQuantChunk];
  for (uint64_t o = row_begin; o < row_end; ++o) {
    const uint8_t* row = t.weight.data() + o * row_words * 4;
    for (uint64_t c0 = 0; c0 < in; c0 += kQuantChunk) {
      const uint64_t n = in - c0 < kQuantChunk ? in - c0 : kQuantChunk;
      uint64_t last_g = ~uint64_t{0};
      float s = 0, b = 0;
      for (uint64_t k = 0; k < n; ++k) {
        const uint64_t i = c0 + k, g = o * groups + i / p.group_size;
        if (g != last_g) {
          s = load_quant_float(p.scale_dtype, t.scales.data(), g);
          b = load_quant_float(p.scale_dtype, t.biases.data(), g);
          last_g = g;
        }
        const uint64_t bit = i * p.bits;
        const uint32_t shift = uint32_t(bit & 31);
        uint64_t w = load_u32(row, bit >> 5) >> shift;
        if (shift + p.bits > 32) w |= uint64_t(load_u32(row, (bit >> 5) + 1)) << (32 - shift);
        v[k] = float(uint32_t(w) & mask) * s;  // exact in F32
        bias[k] = b;
      }
      // affine_dequantize's fallback: multiply(w, scales) then add(w, biases), two array
      // ops, each rounded to the scales' dtype (no fused multiply-add)
      round_in_place(p.scale_dtype, v, n);
      for (uint64_t k = 0; k < n; ++k) v[k] += bias[k];
      store_rounded(p.scale_dtype, out, v, n, dst + c0 * out_size);
    }
    dst += in * out_size;
  }
}

}  // namespace

Status validate_mlx(const MlxParams& p, const MlxTensors& t) {
  if (p.bits < 2 || p.bits > 8 || p.bits == 7) {
    return make_error(ErrorCode::unsupported, "MLX affine quantization with " + std::to_string(p.bits) +
                                                  " bits (supported: 2, 3, 4, 5, 6, 8)");
  }
  if (!is_quant_float(p.scale_dtype)) {
    return make_error(ErrorCode::parse, "MLX scales must be F16, BF16 or F32, not " + std::string(dtype_name(p.scale_dtype)));
  }
  if (p.group_size == 0 || p.in_features % p.group_size != 0) {
    return make_error(ErrorCode::parse, "MLX group size " + std::to_string(p.group_size) +
                                            " does not divide in_features " + std::to_string(p.in_features));
  }
  if (p.in_features > (uint64_t{1} << 40) || (p.in_features * p.bits) % 32 != 0) {
    return make_error(ErrorCode::parse, "MLX rows of " + std::to_string(p.in_features) + " " + std::to_string(p.bits) +
                                            "-bit values do not fill whole 32-bit words");
  }
  const uint64_t groups = p.in_features / p.group_size;
  AMN_TRY(check_tensor_bytes("MLX weight", t.weight.size(), checked_mul3(p.out_features, p.in_features * p.bits / 32, 4)));
  const auto sb = checked_mul3(p.out_features, groups, dtype_info(p.scale_dtype).block_bytes);
  AMN_TRY(check_tensor_bytes("MLX scales", t.scales.size(), sb));
  AMN_TRY(check_tensor_bytes("MLX biases", t.biases.size(), sb));
  return {};
}

Status dequantize_mlx_rows(const MlxParams& p, const MlxTensors& t, uint64_t row_begin, uint64_t row_end, DType out,
                           std::span<uint8_t> dst) {
  AMN_TRY(validate_mlx(p, t));
  AMN_TRY(check_rows_call(p.scale_dtype, out, p.out_features, p.in_features, row_begin, row_end, dst.size()));
  if (!dequantize_rows_lut(p, t, row_begin, row_end, out, dst.data()) &&
      !dequantize_rows_affine(p, t, row_begin, row_end, out, dst.data())) {
    dequantize_rows(p, t, row_begin, row_end, out, dst.data());
  }
  return {};
}

}  // namespace amn::quant
