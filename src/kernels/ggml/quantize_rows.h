// The loops every ggml encoder shares (ggml-quants.c's quantize_<type>). Blocks are built
// in a local struct and copied out, so `dst` needs no alignment.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/ggml_type.h"

namespace amn::ggml {

// Encodes every block of `nrows` rows (a row a whole number of blocks). `for_row(row)`
// is called once per row (for the encoders whose search uses statistics of the whole
// row) and returns `block(x, b, i)`, which fills `b` from the values `x` of the row's
// block `i`. Returns the bytes written.
template <class Block, int kElements, class ForRow>
size_t each_block(const float* src, void* dst, int64_t nrows, int64_t n_per_row, ForRow for_row) {
  const int64_t per_row = n_per_row / kElements;
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t r = 0; r < nrows; ++r) {
    const float* row = src + r * n_per_row;
    auto block = for_row(row);
    for (int64_t i = 0; i < per_row; ++i) {
      Block b;
      std::memset(&b, 0, sizeof b);
      block(row + i * kElements, b, i);
      std::memcpy(out, &b, sizeof b);
      out += sizeof b;
    }
  }
  return static_cast<size_t>(nrows * per_row) * sizeof(Block);
}

// ggml's sigma2 of a row for the weighted legacy encoders: the mean of its squares.
inline float row_sigma2(const float* x, int64_t n_per_row) {
  float sum_x2 = 0;
  for (int64_t j = 0; j < n_per_row; ++j) sum_x2 += x[j] * x[j];
  return sum_x2 / n_per_row;
}

}  // namespace amn::ggml
