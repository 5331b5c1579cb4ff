// AWQ GEMM: qweight is [in, out/8]; each int32 holds 8 output features of one input
// feature, interleaved: output feature 8c + j sits in nibble kNibbleOf[j]
// (WQLinear_GEMM.from_linear packs order_map [0, 2, 4, 6, 1, 3, 5, 7]; dequantize_gemm
// undoes it with AWQ_REVERSE_ORDER [0, 4, 1, 5, 2, 6, 3, 7]). qzeros the same per group.
#include "kernels/quant/awq.h"

#include <algorithm>
#include <string>

#include "kernels/quant/packed.h"
#include "kernels/quant/packed_lut.h"

namespace amn::quant {
namespace {

constexpr uint32_t kNibbleOf[8] = {0, 4, 1, 5, 2, 6, 3, 7};

uint32_t awq_field(const uint8_t* words, uint64_t row, uint64_t words_per_row, uint64_t o) {
  return (load_u32(words, row * words_per_row + o / 8) >> (4 * kNibbleOf[o % 8])) & 0xFu;
}

// The table-lookup path (packed_lut.h): each group's 16 outputs per row computed as the
// reference computes them, then looked up per code. The 8 rows of a qweight column
// share each gathered word. False (nothing written) leaves the rows to the reference loop.
bool dequantize_awq_lut(const AwqParams& p, const AwqTensors& t, uint64_t row_begin, uint64_t row_end, DType out,
                        uint8_t* dst) {
  if (!lut::lut_enabled()) return false;
  const uint64_t in = p.in_features, n_out = p.out_features, wpr = n_out / 8, gs = p.group_size;
  const uint64_t groups = in / gs;
  const size_t out_size = dtype_info(out).block_bytes;
  const uint64_t per_window = gs >= lut::kWindowCodes ? 1 : std::min<uint64_t>(lut::kMaxGroups, lut::kWindowCodes / gs);
  lut::Tables tables;
  float values[lut::kMaxGroups * 16];
  uint8_t codes[lut::kWindowCodes + lut::kCodePad] = {};
  uint32_t words[lut::kWindowCodes];
  for (uint64_t col = row_begin / 8; col * 8 < row_end; ++col) {
    const uint64_t o0 = std::max(row_begin, col * 8), o1 = std::min(row_end, col * 8 + 8);
    for (uint64_t g0 = 0; g0 < groups; g0 += per_window) {
      const uint64_t g1 = std::min(groups, g0 + per_window);
      for (uint64_t e = g0 * gs; e < g1 * gs; e += lut::kWindowCodes) {
        const size_t n = size_t(std::min<uint64_t>(lut::kWindowCodes, g1 * gs - e));
        for (size_t k = 0; k < n; ++k) words[k] = load_u32(t.qweight.data(), (e + k) * wpr + col);
        for (uint64_t o = o0; o < o1; ++o) {
          for (uint64_t g = g0; g < g1; ++g) {
            // (iweight - izeros) * scales, as the reference loop
            const float zero = float(awq_field(t.qzeros.data(), g, wpr, o));
            const float scale = load_quant_float(p.scale_dtype, t.scales.data(), g * n_out + o);
            for (uint32_t c = 0; c < 16; ++c) values[(g - g0) * 16 + c] = (float(c) - zero) * scale;
          }
          lut::build_tables(tables, kRoundOnce, out, values, size_t(g1 - g0));
          lut::nibble_of_words(reinterpret_cast<const uint8_t*>(words), n, kNibbleOf[o % 8], codes);
          lut::lookup_runs(tables, size_t(e / gs - g0), codes, n, size_t(gs - e % gs), size_t(gs),
                           dst + ((o - row_begin) * in + e) * out_size);
        }
      }
    }
  }
  return true;
}

}  // namespace

Status validate_awq(const AwqParams& p, const AwqTensors& t) {
  if (p.bits != 4) {
    return make_error(ErrorCode::unsupported, "AWQ with " + std::to_string(p.bits) + " bits (AutoAWQ GEMM packs 4)");
  }
  if (!is_quant_float(p.scale_dtype)) {
    return make_error(ErrorCode::parse, "AWQ scales must be F16, BF16 or F32, not " + std::string(dtype_name(p.scale_dtype)));
  }
  if (p.out_features % 8 != 0) {
    return make_error(ErrorCode::parse, "AWQ out_features " + std::to_string(p.out_features) + " is not a multiple of 8");
  }
  if (p.group_size == 0 || p.in_features % p.group_size != 0) {
    // dequantize_gemm repeats each group group_size times and needs whole groups
    return make_error(ErrorCode::parse, "AWQ group size " + std::to_string(p.group_size) +
                                            " does not divide in_features " + std::to_string(p.in_features));
  }
  const uint64_t groups = p.in_features / p.group_size;
  AMN_TRY(check_tensor_bytes("AWQ qweight", t.qweight.size(), checked_mul3(p.in_features, p.out_features / 8, 4)));
  AMN_TRY(check_tensor_bytes("AWQ qzeros", t.qzeros.size(), checked_mul3(groups, p.out_features / 8, 4)));
  AMN_TRY(check_tensor_bytes("AWQ scales", t.scales.size(),
                             checked_mul3(groups, p.out_features, dtype_info(p.scale_dtype).block_bytes)));
  return {};
}

Status dequantize_awq_rows(const AwqParams& p, const AwqTensors& t, uint64_t row_begin, uint64_t row_end,
                           DType out, std::span<uint8_t> dst) {
  AMN_TRY(validate_awq(p, t));
  AMN_TRY(check_rows_call(p.scale_dtype, out, p.out_features, p.in_features, row_begin, row_end, dst.size()));
  if (dequantize_awq_lut(p, t, row_begin, row_end, out, dst.data())) return {};
  const uint64_t in = p.in_features, n_out = p.out_features, wpr = n_out / 8;
  const size_t out_size = dtype_info(out).block_bytes;
  // A tile of output rows shares the words of each qweight row (8 rows per word).
  constexpr uint64_t kTile = 16;
  float codes[kTile][kQuantChunk];
  float v[kQuantChunk];
  for (uint64_t o0 = row_begin; o0 < row_end; o0 += kTile) {
    const uint64_t rows = row_end - o0 < kTile ? row_end - o0 : kTile;
    for (uint64_t c0 = 0; c0 < in; c0 += kQuantChunk) {
      const uint64_t n = in - c0 < kQuantChunk ? in - c0 : kQuantChunk;
      for (uint64_t k = 0; k < n; ++k) {
        for (uint64_t r = 0; r < rows; ++r) codes[r][k] = float(awq_field(t.qweight.data(), c0 + k, wpr, o0 + r));
      }
      for (uint64_t r = 0; r < rows; ++r) {
        const uint64_t o = o0 + r;
        uint64_t last_g = ~uint64_t{0};
        float zero = 0, scale = 0;
        for (uint64_t k = 0; k < n; ++k) {
          const uint64_t g = (c0 + k) / p.group_size;
          if (g != last_g) {
            zero = float(awq_field(t.qzeros.data(), g, wpr, o));
            scale = load_quant_float(p.scale_dtype, t.scales.data(), g * n_out + o);
            last_g = g;
          }
          // (iweight - izeros) * scales: an exact difference, an exact F32 product,
          // one rounding to the target (store_rounded)
          v[k] = (codes[r][k] - zero) * scale;
        }
        store_rounded(kRoundOnce, out, v, n, dst.data() + ((o - row_begin) * in + c0) * out_size);
      }
    }
  }
  return {};
}

}  // namespace amn::quant
