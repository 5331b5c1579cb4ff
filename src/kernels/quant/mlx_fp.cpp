#include "kernels/quant/mlx_fp.h"

#include <vector>

#include "core/bytes.h"
#include "kernels/quant/fp4_values.h"
#include "kernels/quant/packed.h"

namespace amn::quant {
namespace {

// mlx/ops.cpp's bits, group sizes and maximum code values per mode (fp_quantize).
constexpr MlxFpFormat kFormats[] = {
    {"mxfp4", 4, 32, 6.0f},
    {"nvfp4", 4, 16, 6.0f},
    {"mxfp8", 8, 32, 448.0f},
};

}  // namespace

const MlxFpFormat& mlx_fp_format(MlxFpMode mode) { return kFormats[static_cast<int>(mode)]; }

// detail::FromFP8: the code's low 7 bits shifted into an F16's (exponent bias 15 for
// E4M3's 7, hence * 256), then the sign. 0x7F is 0x3F80 as F16, 1.875 * 256 = 480.
float mlx_e4m3_to_f32(uint8_t code) {
  const uint32_t e = (code >> 3) & 15, m = code & 7;
  float v;
  if (e == 0) v = static_cast<float>(m) * bit_cast<float>(0x3B000000u);  // m * 2^-9
  else v = bit_cast<float>(((e + 120) << 23) | (m << 20));                 // (1 + m/8) * 2^(e-7)
  return code & 0x80 ? -v : v;
}

// mlx/ops.cpp fp_dequantize: power(2, s - 127) in the output type; 2^-127 is subnormal
// and exact, 2^128 is +inf.
float mlx_e8m0_to_f32(uint8_t s) { return e8m0_to_f32(s); }

void dequantize_mlx_fp_rows(MlxFpMode mode, uint64_t cols, const uint8_t* codes, const uint8_t* scales,
                            uint64_t row_begin, uint64_t row_end, DType to, uint8_t* out) {
  const MlxFpFormat& f = mlx_fp_format(mode);
  const uint64_t groups = cols / f.group_size, code_row = cols * f.bits / 8;
  const size_t size = dtype_info(to).block_bytes;
  std::vector<float> row(cols);
  for (uint64_t r = 0; r < row_end - row_begin; ++r) {
    const uint8_t* c = codes + r * code_row;
    for (uint64_t g = 0; g < groups; ++g) {
      const uint8_t s = scales[r * groups + g];
      const float scale = mode == MlxFpMode::nvfp4 ? mlx_e4m3_to_f32(s) : mlx_e8m0_to_f32(s);
      for (uint64_t j = g * f.group_size; j < (g + 1) * f.group_size; ++j) {
        // MLX's FP4 table is kE2M1Signed: code 8 is -0.0.
        const float v = f.bits == 4 ? kE2M1Signed[(c[j / 2] >> (4 * (j % 2))) & 15] : mlx_e4m3_to_f32(c[j]);
        row[j] = v * scale;
      }
    }
    store_rounded(DType::F32, to, row.data(), cols, out + r * cols * size);
  }
}

}  // namespace amn::quant
