// How a logical tensor's output rows are made from byte ranges of its parts. Core knows
// only this interface (as it knows FormatState for formats): each quantization scheme
// (src/schemes) implements it, the planner asks it which ranges a run of rows needs,
// and the executor hands it those bytes.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"

namespace amn {

class LogicalOp {
 public:
  virtual ~LogicalOp() = default;
  // Output rows are the logical shape without its last dim (rows * cols = elements).
  // Pieces start at multiples of this many rows (a scale block's height, say).
  virtual uint64_t row_granularity() const { return 1; }
  // The input byte ranges rows [row_begin, row_end) need, in the order run() gets them.
  virtual std::vector<ByteRange> inputs(uint64_t row_begin, uint64_t row_end) const = 0;
  // Writes rows [row_begin, row_end) as `to` (BF16, F16 or F32) into out.
  virtual Status run(std::span<const std::span<const uint8_t>> in, uint64_t row_begin, uint64_t row_end,
                     DType to, uint8_t* out) const = 0;
};

}  // namespace amn
