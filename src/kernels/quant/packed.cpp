// compressed-tensors integer kernels and the helpers every integer family uses.
// Reference: compressed_tensors/compressors/quantized_compressors/pack_quantized.py
// (unpack_from_int32) and quantization/lifecycle/forward.py (dequantize, _dequantize).
#include "kernels/quant/packed.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/checked.h"
#include "kernels/cast.h"
#include "kernels/quant/packed_lut.h"

namespace amn::quant {

bool is_quant_float(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::F32; }

uint32_t load_u32(const uint8_t* bytes, uint64_t word) {
  uint32_t v;
  std::memcpy(&v, bytes + word * 4, 4);
  return v;  // little-endian hosts only (x86, aarch64, wasm32), as the rest of the core
}

float load_quant_float(DType t, const uint8_t* bytes, uint64_t i) {
  if (t == DType::F32) {
    float f;
    std::memcpy(&f, bytes + i * 4, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, bytes + i * 2, 2);
  return t == DType::F16 ? scalar::f16_to_f32(h) : scalar::bf16_to_f32(h);
}

void load_quant_floats(DType t, const uint8_t* bytes, uint64_t first, size_t count, float* out) {
  if (t == DType::F32) {
    std::memcpy(out, bytes + first * 4, count * 4);
    return;
  }
  const uint8_t* p = bytes + first * 2;
  for (size_t k = 0; k < count; ++k) {
    uint16_t h;
    std::memcpy(&h, p + 2 * k, 2);
    if (t == DType::BF16) {  // scalar::bf16_to_f32 inline: that function is out of line
      const uint32_t bits = uint32_t(h) << 16;
      std::memcpy(out + k, &bits, 4);
    } else {
      out[k] = scalar::f16_to_f32(h);
    }
  }
}

void store_rounded(DType canonical, DType out, const float* values, size_t count, uint8_t* dst) {
  const auto* in = reinterpret_cast<const uint8_t*>(values);
  const size_t out_size = dtype_info(out).block_bytes;
  if (canonical == DType::F32 || canonical == out) {
    cast_floats(DType::F32, out, in, dst, count);
    return;
  }
  // Round to the canonical 16-bit type first: the producer returns that, and the other
  // outputs are PyTorch casts of it (double rounding included, on purpose).
  uint16_t tmp[kQuantChunk];
  for (size_t done = 0; done < count; done += kQuantChunk) {
    const size_t n = count - done < kQuantChunk ? count - done : kQuantChunk;
    cast_floats(DType::F32, canonical, in + done * 4, reinterpret_cast<uint8_t*>(tmp), n);
    cast_floats(canonical, out, reinterpret_cast<const uint8_t*>(tmp), dst + done * out_size, n);
  }
}

std::optional<uint64_t> checked_mul3(uint64_t a, uint64_t b, uint64_t c) {
  const auto ab = checked_mul(a, b);
  return ab ? checked_mul(*ab, c) : std::nullopt;
}

Status check_tensor_bytes(std::string_view what, uint64_t actual, std::optional<uint64_t> expected) {
  if (!expected) return make_error(ErrorCode::parse, std::string(what) + ": its size overflows");
  if (actual != *expected) {
    return make_error(ErrorCode::parse, std::string(what) + " has " + std::to_string(actual) +
                                            " bytes where the quantization parameters need " +
                                            std::to_string(*expected));
  }
  return {};
}

Status check_rows_call(DType scale_dtype, DType out, uint64_t rows, uint64_t cols, uint64_t row_begin,
                       uint64_t row_end, size_t dst_bytes) {
  if (!is_quant_float(scale_dtype)) {
    return make_error(ErrorCode::parse, "scales must be F16, BF16 or F32, not " + std::string(dtype_name(scale_dtype)));
  }
  if (!is_quant_float(out)) {
    return make_error(ErrorCode::invalid_argument, "dequantized output must be F16, BF16 or F32, not " +
                                                       std::string(dtype_name(out)));
  }
  if (row_begin > row_end || row_end > rows) {
    return make_error(ErrorCode::invalid_argument, "row range [" + std::to_string(row_begin) + ", " +
                                                       std::to_string(row_end) + ") is outside the " +
                                                       std::to_string(rows) + " rows");
  }
  const auto need = checked_mul3(row_end - row_begin, cols, dtype_info(out).block_bytes);
  if (!need || *need > dst_bytes) {
    return make_error(ErrorCode::invalid_argument, "output buffer too small for the requested rows");
  }
  return {};
}

namespace {

uint32_t ct_pack_factor(const CtIntParams& p) { return 32 / p.bits; }

std::optional<uint64_t> scale_bytes(uint64_t rows, uint64_t cols, DType t) {
  return checked_mul3(rows, cols, dtype_info(t).block_bytes);
}

// Field `i` of a compressed-tensors packed run: pack_to_int32 puts 32 / bits values in
// each word from the low bits up (the top 32 % bits bits stay zero) and stores them
// offset by 2^(bits-1).
int32_t ct_field(const uint8_t* words, uint64_t word, uint32_t shift, uint32_t bits) {
  const uint32_t mask = (1u << bits) - 1u;
  return int32_t((load_u32(words, word) >> shift) & mask) - int32_t(1u << (bits - 1));
}

// Codes [e, e + n) of a pack-quantized row (fields, before the 2^(bits-1) offset).
void ct_row_codes(const CtIntParams& p, const uint8_t* row, uint64_t e, size_t n, uint8_t* codes) {
  const uint32_t pf = ct_pack_factor(p);
  if (p.bits == 4 && e % 2 == 0) return lut::unpack_nibbles(row + e / 2, n, codes);
  if (pf * p.bits == 32) return lut::unpack_bits(row, e * p.bits, p.bits, n, codes);
  const uint32_t mask = (1u << p.bits) - 1u;  // 3 bits: 10 fields a word, 2 bits unused
  for (size_t k = 0; k < n; ++k) {
    codes[k] = uint8_t((load_u32(row, (e + k) / pf) >> (uint32_t((e + k) % pf) * p.bits)) & mask);
  }
}

// The table-lookup path (packed_lut.h) for pack-quantized codes of 1 to 4 bits: each
// group's 16 outputs computed as dequantize_ct_int_rows computes them, then looked up
// per code. False (nothing written) leaves the rows to the reference loop.
bool dequantize_ct_lut(const CtIntParams& p, const CtIntTensors& t, uint64_t row_begin, uint64_t row_end,
                       bool use_g_idx, DType out, uint8_t* dst) {
  if (!p.packed || p.bits > 4 || !lut::lut_enabled()) return false;
  if (use_g_idx && p.scale_cols > lut::kMaxGroups) return false;
  const uint64_t in = p.in_features;
  const uint64_t gs = p.scale_cols > 1 ? in / p.scale_cols : std::max<uint64_t>(in, 1);
  const uint64_t n_groups = p.scale_cols;
  const uint32_t pf = ct_pack_factor(p);
  const uint64_t words_per_row = ceil_div(in, pf);
  const int32_t half = int32_t(1u << (p.bits - 1));
  const size_t out_size = dtype_info(out).block_bytes;
  lut::Tables tables;
  float values[lut::kMaxGroups * 16];
  uint8_t codes[lut::kWindowCodes + lut::kCodePad] = {};
  uint32_t groups[lut::kWindowCodes];
  const uint64_t per_window =
      use_g_idx ? n_groups
                : (gs >= lut::kWindowCodes ? 1 : std::min<uint64_t>(lut::kMaxGroups, lut::kWindowCodes / gs));
  for (uint64_t o = row_begin; o < row_end; ++o) {
    const uint64_t srow = p.scale_rows == 1 ? 0 : o;
    const uint8_t* row = t.weight.data() + o * words_per_row * 4;
    uint8_t* dst_row = dst + (o - row_begin) * in * out_size;
    for (uint64_t g0 = 0; g0 < n_groups; g0 += per_window) {
      const uint64_t g1 = std::min(n_groups, g0 + per_window);
      for (uint64_t g = g0; g < g1; ++g) {
        const int32_t z = p.has_zero_point
                              ? ct_field(t.zero_point.data(), (o / pf) * p.scale_cols + g, uint32_t(o % pf) * p.bits, p.bits)
                              : 0;
        const float scale = load_quant_float(p.scale_dtype, t.scale.data(), srow * p.scale_cols + g);
        // float(q - z) * scale, q = field - 2^(bits-1), as the reference loop
        for (int32_t c = 0; c < 16; ++c) values[(g - g0) * 16 + uint64_t(c)] = float(c - half - z) * scale;
      }
      lut::build_tables(tables, kRoundOnce, out, values, size_t(g1 - g0));
      const uint64_t e_begin = use_g_idx ? 0 : g0 * gs, e_end = use_g_idx ? in : std::min(in, g1 * gs);
      for (uint64_t e = e_begin; e < e_end; e += lut::kWindowCodes) {
        const size_t n = size_t(std::min<uint64_t>(lut::kWindowCodes, e_end - e));
        ct_row_codes(p, row, e, n, codes);
        if (use_g_idx) {
          std::memcpy(groups, t.g_idx.data() + e * 4, n * 4);
          lut::lookup_scattered(tables, codes, groups, n, dst_row + e * out_size);
        } else {
          lut::lookup_runs(tables, size_t(e / gs - g0), codes, n, size_t(gs - e % gs), size_t(gs),
                           dst_row + e * out_size);
        }
      }
    }
  }
  return true;
}

// The affine path (packed_lut.h) for what the tables do not take: pack-quantized codes
// of 5 to 8 bits and naive int8 weights, in column order (no g_idx). (q - z) * scale in
// vectors, q - z as code - offset: packed fields are q + 2^(bits-1), naive codes XOR 0x80
// are q + 128. False (nothing written) leaves the rows to the reference loop.
bool dequantize_ct_affine(const CtIntParams& p, const CtIntTensors& t, uint64_t row_begin, uint64_t row_end,
                          bool use_g_idx, DType out, uint8_t* dst) {
  if ((p.packed && p.bits <= 4) || use_g_idx || !lut::lut_enabled()) return false;
  const uint64_t in = p.in_features;
  const uint64_t gs = p.scale_cols > 1 ? in / p.scale_cols : std::max<uint64_t>(in, 1);
  const uint32_t pf = p.packed ? ct_pack_factor(p) : 1;
  const uint64_t row_bytes = p.packed ? ceil_div(in, pf) * 4 : in;
  const int32_t half = p.packed ? int32_t(1u << (p.bits - 1)) : 128;
  const size_t out_size = dtype_info(out).block_bytes;
  float offset[lut::kWindowCodes + 1], scale[lut::kWindowCodes + 1];
  uint8_t codes[lut::kWindowCodes];
  for (uint64_t o = row_begin; o < row_end; ++o) {
    const uint64_t srow = p.scale_rows == 1 ? 0 : o;
    const uint8_t* row = t.weight.data() + o * row_bytes;
    // Codes that are the bytes themselves (naive int8, packed 8-bit) are taken whole
    // groups of kWindowCodes at a time, not unpacked: a per-channel row in one call,
    // which long-run paths (the WASM table) need.
    const bool bytes = !p.packed || p.bits == 8;
    const uint64_t window = bytes ? lut::kWindowCodes * gs : lut::kWindowCodes;
    for (uint64_t e = 0; e < in; e += window) {
      const size_t n = size_t(std::min<uint64_t>(window, in - e));
      const uint64_t g0 = e / gs, g1 = (e + n - 1) / gs + 1;
      for (uint64_t g = g0; g < g1; ++g) {
        int32_t z = 0;
        if (p.has_zero_point) {
          z = p.packed ? ct_field(t.zero_point.data(), (o / pf) * p.scale_cols + g, uint32_t(o % pf) * p.bits, p.bits)
                       : int8_t(t.zero_point[srow * p.scale_cols + g]);
        }
        offset[g - g0] = float(half + z);
      }
      load_quant_floats(p.scale_dtype, t.scale.data(), srow * p.scale_cols + g0, size_t(g1 - g0), scale);
      const uint8_t* c = row + e;  // naive int8 and packed 8-bit: the codes are the bytes
      if (!bytes) {
        ct_row_codes(p, row, e, n, codes);
        c = codes;
      }
      const lut::AffineGroups ag{offset, scale, nullptr};
      // Only the first call can fail (Highway's one-lane fallback), before anything is written.
      if (!lut::affine_runs(kRoundOnce, out, ag, c, p.packed ? 0 : 0x80, n, size_t(gs - e % gs), size_t(gs),
                            dst + ((o - row_begin) * in + e) * out_size)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

uint64_t ct_packed_weight_bytes(const CtIntParams& p) {
  if (p.bits < 1 || p.bits > 8) return 0;
  return checked_mul3(p.out_features, ceil_div(p.in_features, ct_pack_factor(p)), 4).value_or(0);
}

uint64_t ct_packed_zero_point_bytes(const CtIntParams& p) {
  if (p.bits < 1 || p.bits > 8) return 0;
  return checked_mul3(ceil_div(p.out_features, ct_pack_factor(p)), p.scale_cols, 4).value_or(0);
}

Status validate_ct_int(const CtIntParams& p, const CtIntTensors& t) {
  if (p.bits < 1 || p.bits > 8) {
    return make_error(ErrorCode::parse, "compressed-tensors num_bits " + std::to_string(p.bits) + " is not 1..8");
  }
  if (!is_quant_float(p.scale_dtype)) {
    return make_error(ErrorCode::parse, "weight_scale must be F16, BF16 or F32, not " + std::string(dtype_name(p.scale_dtype)));
  }
  if (p.scale_rows != 1 && p.scale_rows != p.out_features) {
    return make_error(ErrorCode::parse, "weight_scale has " + std::to_string(p.scale_rows) +
                                            " rows; expected 1 or out_features (" + std::to_string(p.out_features) + ")");
  }
  if (p.scale_cols == 0 || (p.scale_cols > 1 && p.in_features % p.scale_cols != 0)) {
    // dequantize() infers group_size = in / scale_cols and needs whole groups
    return make_error(ErrorCode::parse, "weight_scale has " + std::to_string(p.scale_cols) +
                                            " groups, which do not divide in_features (" + std::to_string(p.in_features) + ")");
  }
  if (p.packed) {
    const uint64_t w = ct_packed_weight_bytes(p);
    AMN_TRY(check_tensor_bytes("weight_packed", t.weight.size(), w ? std::optional<uint64_t>(w) : std::nullopt));
  } else {
    AMN_TRY(check_tensor_bytes("weight", t.weight.size(), checked_mul(p.out_features, p.in_features)));
  }
  AMN_TRY(check_tensor_bytes("weight_scale", t.scale.size(), scale_bytes(p.scale_rows, p.scale_cols, p.scale_dtype)));
  if (p.has_zero_point) {
    if (p.packed) {
      // unpack_from_int32(zero_point, bits, (out, scale_cols), packed_dim=0)
      if (p.scale_rows != p.out_features) {
        return make_error(ErrorCode::parse, "a packed weight_zero_point needs one weight_scale row per output row");
      }
      const uint64_t z = ct_packed_zero_point_bytes(p);
      AMN_TRY(check_tensor_bytes("weight_zero_point", t.zero_point.size(), z ? std::optional<uint64_t>(z) : std::nullopt));
    } else {
      AMN_TRY(check_tensor_bytes("weight_zero_point", t.zero_point.size(), checked_mul(p.scale_rows, p.scale_cols)));
    }
  }
  if (p.has_g_idx) {
    AMN_TRY(check_tensor_bytes("weight_g_idx", t.g_idx.size(), checked_mul(p.in_features, 4)));
    for (uint64_t i = 0; i < p.in_features; ++i) {
      const int32_t g = int32_t(load_u32(t.g_idx.data(), i));
      // -1 marks an unset g_idx: dequantize() then uses column order
      if (g < -1 || (g >= 0 && uint64_t(g) >= p.scale_cols)) {
        return make_error(ErrorCode::parse, "weight_g_idx[" + std::to_string(i) + "] = " + std::to_string(g) +
                                                " is outside the " + std::to_string(p.scale_cols) + " groups");
      }
    }
  }
  return {};
}

Status dequantize_ct_int_rows(const CtIntParams& p, const CtIntTensors& t, uint64_t row_begin,
                              uint64_t row_end, DType out, std::span<uint8_t> dst) {
  AMN_TRY(validate_ct_int(p, t));
  AMN_TRY(check_rows_call(p.scale_dtype, out, p.out_features, p.in_features, row_begin, row_end, dst.size()));
  const uint64_t in = p.in_features;
  const uint64_t group_size = p.scale_cols > 1 ? in / p.scale_cols : in;
  const uint32_t pf = p.packed ? ct_pack_factor(p) : 1;
  const uint64_t words_per_row = p.packed ? ceil_div(in, pf) : 0;
  // "-1 in g_idx" makes dequantize() fall back to column order
  bool use_g_idx = p.has_g_idx && p.scale_cols > 1;
  if (use_g_idx) {
    for (uint64_t i = 0; i < in && use_g_idx; ++i) use_g_idx = int32_t(load_u32(t.g_idx.data(), i)) >= 0;
  }
  if (dequantize_ct_lut(p, t, row_begin, row_end, use_g_idx, out, dst.data()) ||
      dequantize_ct_affine(p, t, row_begin, row_end, use_g_idx, out, dst.data())) {
    return {};
  }
  const size_t out_size = dtype_info(out).block_bytes;
  uint8_t* dst_row = dst.data();
  float v[kQuantChunk];
  for (uint64_t o = row_begin; o < row_end; ++o) {
    const uint64_t srow = p.scale_rows == 1 ? 0 : o;
    for (uint64_t c0 = 0; c0 < in; c0 += kQuantChunk) {
      const uint64_t n = in - c0 < kQuantChunk ? in - c0 : kQuantChunk;
      uint64_t last_g = ~uint64_t{0};
      int32_t z = 0;
      float scale = 0;
      // word and slot of code c0 in its row, advanced without a division per code
      uint64_t word = o * words_per_row + c0 / pf;
      uint32_t slot = uint32_t(c0 % pf);
      uint64_t g_col = p.scale_cols > 1 ? c0 / group_size : 0, g_end = (g_col + 1) * group_size;
      for (uint64_t k = 0; k < n; ++k) {
        const uint64_t i = c0 + k;
        if (p.scale_cols > 1 && i == g_end) {
          ++g_col;
          g_end += group_size;
        }
        const uint64_t g = use_g_idx ? uint64_t(load_u32(t.g_idx.data(), i)) : g_col;
        if (g != last_g) {
          z = 0;
          if (p.has_zero_point) {
            z = p.packed ? ct_field(t.zero_point.data(), (o / pf) * p.scale_cols + g, uint32_t(o % pf) * p.bits, p.bits)
                         : int8_t(t.zero_point[srow * p.scale_cols + g]);
          }
          scale = load_quant_float(p.scale_dtype, t.scale.data(), srow * p.scale_cols + g);
          last_g = g;
        }
        int32_t q;
        if (p.packed) {
          q = ct_field(t.weight.data(), word, slot * p.bits, p.bits);
          if (++slot == pf) {
            slot = 0;
            ++word;
          }
        } else {
          q = int8_t(t.weight[o * in + i]);
        }
        // _dequantize: x_q.to(scale.dtype) - zero_point.to(scale.dtype), then * scale.
        // |q - z| <= 255 is exact in F16/BF16 and so is the integer difference; the
        // product is exact in F32 and rounded once, to the target (kRoundOnce).
        v[k] = float(q - z) * scale;
      }
      store_rounded(kRoundOnce, out, v, n, dst_row + c0 * out_size);
    }
    dst_row += in * out_size;
  }
  return {};
}

}  // namespace amn::quant
