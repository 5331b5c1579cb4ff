// torch 1.13's float32 sum loops (aten/src/ATen/native/cpu/SumKernel.cpp: multi_row_sum,
// row_sum), generic over the accumulator T (a float, or 8 lanes) and its `add(T&, const T&)`,
// for the reference (bnb_encode.cpp torch_mean_f32) and its SIMD kernel
// (bnb_blockwise_simd.cpp), which only change what T is: the same adds in the same order.
#pragma once
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

namespace amn::lethe::torch_sum {

inline int64_t ceil_log2(int64_t x) {  // utils::CeilLog2
  if (x <= 2) return 1;
  return 64 - std::countl_zero(static_cast<uint64_t>(x) - 1);
}

// multi_row_sum<T, nrows=4>: row i is load(4 * i + k) for k < 4, summed in cascading levels.
template <class T, class Load, class Add>
std::array<T, 4> multi_row_sum(const Load& load, int64_t size, T zero, const Add& add) {
  constexpr int64_t kLevels = 4;
  const int64_t level_power = std::max<int64_t>(4, ceil_log2(size) / kLevels);
  const int64_t level_step = int64_t{1} << level_power;
  const int64_t level_mask = level_step - 1;
  T acc[kLevels][4];
  for (auto& row : acc)
    for (auto& a : row) a = zero;
  int64_t i = 0;
  for (; i + level_step <= size;) {
    for (int64_t j = 0; j < level_step; ++j, ++i)
      for (int k = 0; k < 4; ++k) add(acc[0][k], load(4 * i + k));
    for (int64_t j = 1; j < kLevels; ++j) {
      for (int k = 0; k < 4; ++k) {
        add(acc[j][k], acc[j - 1][k]);
        acc[j - 1][k] = zero;
      }
      const int64_t mask = level_mask << (j * level_power);
      if ((i & mask) != 0) break;
    }
  }
  for (; i < size; ++i)
    for (int k = 0; k < 4; ++k) add(acc[0][k], load(4 * i + k));
  for (int64_t j = 1; j < kLevels; ++j)
    for (int k = 0; k < 4; ++k) add(acc[0][k], acc[j][k]);
  return {acc[0][0], acc[0][1], acc[0][2], acc[0][3]};
}

// row_sum<T> (ilp_factor 4).
template <class Load, class T, class Add>
T row_sum(const Load& load, int64_t size, T zero, const Add& add) {
  const int64_t size_ilp = size / 4;
  auto partial = multi_row_sum(load, size_ilp, zero, add);
  for (int64_t i = size_ilp * 4; i < size; ++i) add(partial[0], load(i));
  for (int k = 1; k < 4; ++k) add(partial[0], partial[k]);
  return partial[0];
}

}  // namespace amn::lethe::torch_sum
