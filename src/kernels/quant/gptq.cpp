// GPTQ: qweight packs input features down its rows and qzeros packs output features
// along its columns, each as one LSB-first bit stream of 32-bit words (for 3 bits a value
// may straddle two words: GPTQModel's pack_original / _unpack_rows_3bit).
#include "kernels/quant/gptq.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/checked.h"
#include "kernels/quant/packed.h"
#include "kernels/quant/packed_lut.h"

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

// What dequantize_gptq_rows needs of one (group, output row) pair.
struct GroupZeroScale {
  const GptqParams& p;
  const GptqTensors& t;
  uint64_t zero_words;
  uint32_t add;
  bool v1_fieldwise;
  // The zero point and scale of group g, output row o, as floats.
  void zero_scale(uint64_t g, uint64_t o, float& zero, float& scale) const {
    uint32_t z = stream_field(t.qzeros.data(), g * zero_words, 1, o, p.bits, add);
    if (v1_fieldwise) z = (z + 1) & ((1u << p.bits) - 1u);
    zero = float(z);
    scale = load_quant_float(p.scale_dtype, t.scales.data(), g * p.out_features + o);
  }
  // The 16 values (code - zero) * scale that codes 0..15 give, as the reference computes them.
  void values(uint64_t g, uint64_t o, float* v) const {
    float zero, scale;
    zero_scale(g, o, zero, scale);
    for (uint32_t c = 0; c < 16; ++c) v[c] = (float(c) - zero) * scale;
  }
};

// The group size that g_idx spells as g_idx[i] = i / group_size (AutoGPTQ and GPTQModel
// without act-order), or 0 when its groups are scattered.
uint64_t sequential_group_size(const GptqParams& p, const GptqTensors& t) {
  if (!p.has_g_idx) return p.group_size;
  uint64_t gs = 0;
  while (gs < p.in_features && load_u32(t.g_idx.data(), gs) == 0) ++gs;
  if (gs == 0) return 0;
  for (uint64_t i = gs; i < p.in_features; ++i) {
    if (load_u32(t.g_idx.data(), i) != i / gs) return 0;
  }
  return gs;
}

// Most qweight words that the codes of one window span (bits <= 8).
constexpr size_t kWindowWords = lut::kWindowCodes * 8 / 32 + 2;

// Copies qweight words [first, end) of columns o0 .. o0 + rows - 1 (output rows) into
// words[r * kWindowWords + w - first]: each qweight row is read once per tile of output
// rows (one cache line, one page) instead of once per output row.
void gather_words(const GptqParams& p, const GptqTensors& t, uint64_t o0, uint64_t rows, uint64_t first, uint64_t end,
                  uint32_t* words) {
  for (uint64_t w = first; w < end; ++w) {
    const uint8_t* line = t.qweight.data() + (w * p.out_features + o0) * 4;
    for (uint64_t r = 0; r < rows; ++r) words[r * kWindowWords + (w - first)] = load_u32(line, r);
  }
}

// Codes [e, e + n) of a row whose words from word e * bits / 32 on are at `words`.
void row_codes(uint32_t bits, const uint32_t* words, uint64_t e, size_t n, uint8_t* codes) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(words);
  const uint64_t bit = e * bits - (e * bits / 32) * 32;
  if (bits == 4 && bit % 8 == 0) {
    lut::unpack_nibbles(bytes + bit / 8, n, codes);
  } else {
    lut::unpack_bits(bytes, bit, bits, n, codes);
  }
}

// The table-lookup path (packed_lut.h) for 2-, 3- and 4-bit codes. False (nothing
// written) leaves the rows to the reference loop.
bool dequantize_gptq_lut(const GptqParams& p, const GptqTensors& t, uint64_t row_begin, uint64_t row_end, DType out,
                         uint8_t* dst) {
  if (p.bits > 4 || !lut::lut_enabled()) return false;
  const uint64_t in = p.in_features;
  const uint64_t gs = sequential_group_size(p, t);
  if (gs == 0 && p.groups > lut::kMaxGroups) return false;
  const GroupZeroScale zs{p, t, ceil_div(p.out_features * p.bits, 32), p.zeros == GptqZeros::v1 ? v1_word_add(p.bits) : 0,
                          p.zeros == GptqZeros::v1 && p.bits == 3};
  const size_t out_size = dtype_info(out).block_bytes;
  lut::Tables tables;
  float values[lut::kMaxGroups * 16];
  uint8_t codes[lut::kWindowCodes + lut::kCodePad] = {};
  constexpr uint64_t kTile = 16;
  uint32_t words[kTile * kWindowWords];
  if (gs == 0) {  // act-order: every group's table, each code looked up by its g_idx
    uint32_t groups[lut::kWindowCodes];
    for (uint64_t o = row_begin; o < row_end; ++o) {
      for (uint64_t g = 0; g < p.groups; ++g) zs.values(g, o, values + g * 16);
      lut::build_tables(tables, kRoundOnce, out, values, size_t(p.groups));
      uint8_t* dst_row = dst + (o - row_begin) * in * out_size;
      for (uint64_t e = 0; e < in; e += lut::kWindowCodes) {
        const size_t n = size_t(std::min<uint64_t>(lut::kWindowCodes, in - e));
        const uint64_t first = e * p.bits / 32;
        gather_words(p, t, o, 1, first, ceil_div((e + n) * p.bits, 32), words);
        row_codes(p.bits, words, e, n, codes);
        std::memcpy(groups, t.g_idx.data() + e * 4, n * 4);
        lut::lookup_scattered(tables, codes, groups, n, dst_row + e * out_size);
      }
    }
    return true;
  }
  // Output rows are qweight columns: a tile of 16 rows shares each cache line of qweight.
  const uint64_t n_groups = ceil_div(in, gs);
  const uint64_t per_window = gs >= lut::kWindowCodes ? 1 : std::min<uint64_t>(lut::kMaxGroups, lut::kWindowCodes / gs);
  for (uint64_t o0 = row_begin; o0 < row_end; o0 += kTile) {
    const uint64_t rows = std::min(row_end - o0, kTile);
    for (uint64_t g0 = 0; g0 < n_groups; g0 += per_window) {
      const uint64_t g1 = std::min(n_groups, g0 + per_window);
      const uint64_t e_end = std::min(in, g1 * gs);
      for (uint64_t e = g0 * gs; e < e_end; e += lut::kWindowCodes) {
        const size_t n = size_t(std::min<uint64_t>(lut::kWindowCodes, e_end - e));
        gather_words(p, t, o0, rows, e * p.bits / 32, ceil_div((e + n) * p.bits, 32), words);
        for (uint64_t r = 0; r < rows; ++r) {
          const uint64_t o = o0 + r;
          // (rebuilt per piece only when one group spans several pieces)
          for (uint64_t g = g0; g < g1; ++g) zs.values(g, o, values + (g - g0) * 16);
          lut::build_tables(tables, kRoundOnce, out, values, size_t(g1 - g0));
          row_codes(p.bits, words + r * kWindowWords, e, n, codes);
          lut::lookup_runs(tables, size_t(e / gs - g0), codes, n, size_t(gs - e % gs), size_t(gs),
                           dst + ((o - row_begin) * in + e) * out_size);
        }
      }
    }
  }
  return true;
}

// The affine path (packed_lut.h) for 8-bit codes in sequential groups: (code - zero) *
// scale in vectors. False (nothing written) leaves the rows to the reference loop.
bool dequantize_gptq_affine(const GptqParams& p, const GptqTensors& t, uint64_t row_begin, uint64_t row_end,
                            DType out, uint8_t* dst) {
  if (p.bits != 8 || !lut::lut_enabled()) return false;
  const uint64_t in = p.in_features;
  const uint64_t gs = sequential_group_size(p, t);
  if (gs == 0) return false;  // act-order: the reference loop
  const uint32_t add = p.zeros == GptqZeros::v1 ? v1_word_add(p.bits) : 0;
  const GroupZeroScale zs{p, t, ceil_div(p.out_features * p.bits, 32), add, false};
  const size_t out_size = dtype_info(out).block_bytes;
  constexpr uint64_t kTile = 16;
  uint32_t words[kTile * kWindowWords];
  float offset[lut::kWindowCodes + 1], scale[lut::kWindowCodes + 1];
  for (uint64_t o0 = row_begin; o0 < row_end; o0 += kTile) {
    const uint64_t rows = std::min(row_end - o0, kTile);
    for (uint64_t e = 0; e < in; e += lut::kWindowCodes) {
      const size_t n = size_t(std::min<uint64_t>(lut::kWindowCodes, in - e));
      gather_words(p, t, o0, rows, e / 4, ceil_div(e + n, 4), words);
      const uint64_t g0 = e / gs, g1 = (e + n - 1) / gs + 1;
      for (uint64_t r = 0; r < rows; ++r) {
        const uint64_t o = o0 + r;
        for (uint64_t g = g0; g < g1; ++g) zs.zero_scale(g, o, offset[g - g0], scale[g - g0]);
        const lut::AffineGroups ag{offset, scale, nullptr};
        // 8 bits: the codes are the bytes of the words, in order. Only the first call can
        // fail (Highway's one-lane fallback), before anything is written.
        if (!lut::affine_runs(kRoundOnce, out, ag, reinterpret_cast<const uint8_t*>(words + r * kWindowWords), 0, n,
                              size_t(gs - e % gs), size_t(gs), dst + ((o - row_begin) * in + e) * out_size)) {
          return false;
        }
      }
    }
  }
  return true;
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
  if (dequantize_gptq_lut(p, t, row_begin, row_end, out, dst.data()) ||
      dequantize_gptq_affine(p, t, row_begin, row_end, out, dst.data())) {
    return {};
  }
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
          // scales[g_idx] * (weight - zeros[g_idx]): the integer difference is exact
          // (also in F32), the product exact in F32 for F16 / BF16 scales, rounded once
          // to the target by store_rounded (convert_gptq_file's arithmetic)
          v[k] = (codes[r][k] - zero) * scale;
        }
        store_rounded(kRoundOnce, out, v, n, dst.data() + ((o - row_begin) * in + c0) * out_size);
      }
    }
  }
  return {};
}

}  // namespace amn::quant
