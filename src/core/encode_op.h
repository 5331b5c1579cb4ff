// How one weight is forgotten (quantized): the tensors it becomes and the bytes of each.
// Core knows only this interface, as it knows LogicalOp for remembering: each scheme's
// encoder (src/schemes/forget_*.cpp) implements it, the planner cuts its outputs into
// pieces, and the executor hands it the source tensor's stored bytes.
#pragma once
#include <cmath>
#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "core/error.h"
#include "core/model.h"

namespace amn {

// What forgetting lost, summed over elements: the source values x against what the
// producer's own dequantizer gives back from the encoded bytes, y. Sums are combined in
// piece order, so the report is the same however pieces were scheduled.
struct LetheSums {
  uint64_t count = 0;
  uint64_t non_finite = 0;  // x or y not finite (left out of the sums below)
  double sum_abs = 0, sum_sq = 0, max_abs = 0;  // of e = y - x
  double sum_xx = 0, sum_yy = 0, sum_xy = 0;
  void add(double x, double y) {
    if (!std::isfinite(x) || !std::isfinite(y)) {
      ++non_finite;
      return;
    }
    const double e = y - x;
    ++count;
    sum_abs += std::fabs(e);
    sum_sq += e * e;
    if (std::fabs(e) > max_abs) max_abs = std::fabs(e);
    sum_xx += x * x;
    sum_yy += y * y;
    sum_xy += x * y;
  }
  void add(const LetheSums& o) {
    count += o.count;
    non_finite += o.non_finite;
    sum_abs += o.sum_abs;
    sum_sq += o.sum_sq;
    if (o.max_abs > max_abs) max_abs = o.max_abs;
    sum_xx += o.sum_xx;
    sum_yy += o.sum_yy;
    sum_xy += o.sum_xy;
  }
};

class EncodeOp {
 public:
  virtual ~EncodeOp() = default;
  // The tensors this weight is written as, in the order of their bytes in the file. The
  // first is the weight itself; the rest are its companions (scales, maps, states).
  virtual std::span<const TensorSpec> outputs() const = 0;
  // Pieces of output `part` start at multiples of this many bytes (a block's, a row's).
  virtual uint64_t granularity(size_t part) const = 0;
  // Writes bytes [begin, end) of output `part` from the source tensor's stored bytes
  // (the whole tensor, row-major, of dtype `from`). The weight part's pieces also add
  // their Lethe sums, kept by `begin` (distance()).
  virtual Status run(std::span<const uint8_t> source, DType from, size_t part, uint64_t begin, uint64_t end,
                     uint8_t* out) const = 0;
  // Some outputs' sizes depend on the values (a bitsandbytes quant_state's JSON holds the
  // mean of the absmax): such an op is prepared from the whole source before the output
  // header is written, and outputs() then gives the final sizes.
  virtual bool needs_prepare() const { return false; }
  virtual Status prepare(std::span<const uint8_t> source, DType from) const {
    (void)source, (void)from;
    return {};
  }
  // The weight's Lethe sums so far (after every piece of part 0 ran: the whole tensor).
  virtual LetheSums distance() const = 0;
};

}  // namespace amn
