// GPTQ: qweight packs input features down its rows and qzeros packs output features
// along its columns, each as one LSB-first bit stream of 32-bit words (for 3 bits a value
// may straddle two words: GPTQModel's pack_original / _unpack_rows_3bit).
#include "kernels/quant/gptq.h"

#include <string>

#include "core/checked.h"
#include "kernels/quant/packed.h"

namespace amn::quant {
namespace {

// Value `index` of a bit stream whose words are `stride` words apart.
uint32_t stream_field(const uint8_t* words, uint64_t first_word, uint64_t stride, uint64_t index, uint32_t bits,
                      uint32_t word_add) {
  const uint64_t bit = index * bits;
  const uint64_t w = bit >> 5;
  const uint32_t shift = uint32_t(bit & 31);
  uint64_t v = (load_u32(words, first_word + w * stride) + word_add) >> shift;
  if (shift + bits > 32) v |= uint64_t(load_u32(words, first_word + (w + 1) * stride) + word_add) << (32 - shift);
  return uint32_t(v) & ((1u << bits) - 1u);
}

// convert_gptq_v1_to_v2_format_module adds 1 to every field by adding this constant
// to whole 32-bit words: a field holding 2^bits - 1 (a zero point of 0 stored as -1)
// carries into the next field, and that is what GPTQModel then dequantizes.
uint32_t v1_word_add(uint32_t bits) {
  switch (bits) {
    case 2: return 0x55555555u;
    case 4: return 0x11111111u;
    case 8: return 0x01010101u;
    default: return 0;  // 3 bits: fields are shifted one by one (below)
  }
}

}  // namespace

Status validate_gptq(const GptqParams& p, const GptqTensors& t) {
  if (p.in_features > (uint64_t{1} << 56) || p.out_features > (uint64_t{1} << 56)) {
    return make_error(ErrorCode::limit, "GPTQ layer dimensions too large");
  }
  if (p.bits != 2 && p.bits != 3 && p.bits != 4 && p.bits != 8) {
    return make_error(ErrorCode::unsupported, "GPTQ with " + std::to_string(p.bits) +
                                                  " bits (supported: 2, 3, 4, 8; 5-7 are GPTQModel's planar format)");
  }
  if (!is_quant_float(p.scale_dtype)) {
    return make_error(ErrorCode::parse, "GPTQ scales must be F16, BF16 or F32, not " + std::string(dtype_name(p.scale_dtype)));
  }
  if (p.groups == 0 && p.in_features != 0) return make_error(ErrorCode::parse, "GPTQ scales have no rows");
  AMN_TRY(check_tensor_bytes("GPTQ qweight", t.qweight.size(),
                             checked_mul3(ceil_div(p.in_features * p.bits, 32), p.out_features, 4)));
  AMN_TRY(check_tensor_bytes("GPTQ qzeros", t.qzeros.size(),
                             checked_mul3(p.groups, ceil_div(p.out_features * p.bits, 32), 4)));
  AMN_TRY(check_tensor_bytes("GPTQ scales", t.scales.size(),
                             checked_mul3(p.groups, p.out_features, dtype_info(p.scale_dtype).block_bytes)));
  if (p.has_g_idx) {
    AMN_TRY(check_tensor_bytes("GPTQ g_idx", t.g_idx.size(), checked_mul(p.in_features, 4)));
    for (uint64_t i = 0; i < p.in_features; ++i) {
      const int32_t g = int32_t(load_u32(t.g_idx.data(), i));
      if (g < 0 || uint64_t(g) >= p.groups) {
        return make_error(ErrorCode::parse, "GPTQ g_idx[" + std::to_string(i) + "] = " + std::to_string(g) +
                                                " is outside the " + std::to_string(p.groups) + " groups");
      }
    }
  } else if (p.group_size == 0 || ceil_div(p.in_features, p.group_size) != p.groups) {
    return make_error(ErrorCode::parse, "GPTQ group size " + std::to_string(p.group_size) + " does not give the " +
                                            std::to_string(p.groups) + " groups of the scales for " +
                                            std::to_string(p.in_features) + " input features");
  }
  return {};
}

Status dequantize_gptq_rows(const GptqParams& p, const GptqTensors& t, uint64_t row_begin, uint64_t row_end,
                            DType out, std::span<uint8_t> dst) {
  AMN_TRY(validate_gptq(p, t));
  AMN_TRY(check_rows_call(p.scale_dtype, out, p.out_features, p.in_features, row_begin, row_end, dst.size()));
  const uint64_t in = p.in_features, n_out = p.out_features;
  const uint64_t zero_words = ceil_div(n_out * p.bits, 32);
  const uint32_t add = p.zeros == GptqZeros::v1 ? v1_word_add(p.bits) : 0;
  const bool v1_fieldwise = p.zeros == GptqZeros::v1 && p.bits == 3;
  const uint32_t mask = (1u << p.bits) - 1u;
  const size_t out_size = dtype_info(out).block_bytes;
  // Output rows are qweight columns: a tile of neighbouring rows reads neighbouring
  // words of each qweight row (one cache line for 16 rows) instead of one strided walk
  // per output row.
  constexpr uint64_t kTile = 16;
  float codes[kTile][kQuantChunk];
  float v[kQuantChunk];
  for (uint64_t o0 = row_begin; o0 < row_end; o0 += kTile) {
    const uint64_t rows = row_end - o0 < kTile ? row_end - o0 : kTile;
    for (uint64_t c0 = 0; c0 < in; c0 += kQuantChunk) {
      const uint64_t n = in - c0 < kQuantChunk ? in - c0 : kQuantChunk;
      for (uint64_t k = 0; k < n; ++k) {
        // column o of qweight is the bit stream of input features
        const uint64_t bit = (c0 + k) * p.bits;
        const uint32_t shift = uint32_t(bit & 31);
        const uint8_t* word = t.qweight.data() + ((bit >> 5) * n_out + o0) * 4;
        if (shift + p.bits <= 32) {
          for (uint64_t r = 0; r < rows; ++r) codes[r][k] = float((load_u32(word, r) >> shift) & mask);
        } else {
          const uint8_t* next = word + n_out * 4;
          for (uint64_t r = 0; r < rows; ++r) {
            const uint64_t w = load_u32(word, r) | uint64_t(load_u32(next, r)) << 32;
            codes[r][k] = float(uint32_t(w >> shift) & mask);
          }
        }
      }
      for (uint64_t r = 0; r < rows; ++r) {
        const uint64_t o = o0 + r;
        uint64_t last_g = ~uint64_t{0};
        float zero = 0, scale = 0;
        for (uint64_t k = 0; k < n; ++k) {
          const uint64_t i = c0 + k;
          const uint64_t g = p.has_g_idx ? load_u32(t.g_idx.data(), i) : i / p.group_size;
          if (g != last_g) {
            uint32_t z = stream_field(t.qzeros.data(), g * zero_words, 1, o, p.bits, add);
            if (v1_fieldwise) z = (z + 1) & mask;  // _correct_gptq_v1_qzeros
            zero = float(z);
            scale = load_quant_float(p.scale_dtype, t.scales.data(), g * n_out + o);
            last_g = g;
          }
          // dequantize_weight: scales[g_idx] * (weight - zeros[g_idx]); the integer
          // difference is exact (also in F32), the product exact in F32, rounded once to
          // the scale dtype by store_rounded
          v[k] = (codes[r][k] - zero) * scale;
        }
        store_rounded(p.scale_dtype, out, v, n, dst.data() + ((o - row_begin) * in + c0) * out_size);
      }
    }
  }
  return {};
}

}  // namespace amn::quant
