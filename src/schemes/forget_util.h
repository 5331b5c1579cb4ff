// What every encoder of src/schemes/forget_*.cpp shares: reading the source as F32 and
// keeping the Lethe sums of its pieces.
#pragma once
#include <cstring>
#include <map>
#include <mutex>
#include <span>
#include <string>

#include "core/dtype.h"
#include "core/encode_op.h"
#include "kernels/cast.h"

namespace amn {

// `n` source elements from element `first`, as F32 (exact for F16 / BF16 / F32).
inline void load_f32(std::span<const uint8_t> source, DType from, uint64_t first, uint64_t n, float* out) {
  const uint64_t size = dtype_info(from).block_bytes;
  if (from == DType::F32) {
    std::memcpy(out, source.data() + first * size, n * sizeof(float));
  } else {
    cast_floats(from, DType::F32, source.data() + first * size, reinterpret_cast<uint8_t*>(out), n);
  }
}

// amax |x| over the whole source tensor of `elements` values, read in chunks; NaN
// propagates (torch.amax).
float source_absmax(std::span<const uint8_t> source, DType from, uint64_t elements);

// Lethe sums kept by piece start, combined in that order.
class SumsByPiece {
 public:
  void put(uint64_t begin, const LetheSums& s) {
    std::lock_guard lock(mutex_);
    sums_[begin] = s;
  }
  LetheSums total() const {
    std::lock_guard lock(mutex_);
    LetheSums all;
    for (const auto& [_, s] : sums_) all.add(s);
    return all;
  }

 private:
  mutable std::mutex mutex_;
  std::map<uint64_t, LetheSums> sums_;
};

// transformers' quantizers (replace_with_bnb_linear, FineGrainedFP8's replace) convert
// nn.Linear layers but the output layer (get_keys_to_not_convert: lm_head); embeddings
// and norms are not nn.Linear. From a file, a Linear weight is a 2-D "*.weight" that is
// neither an embedding nor the head. Empty: quantize; else why the tensor is kept.
std::string linear_keep_reason(const TensorRecord& t);

// Empty when forget reads the tensor's values (F16, BF16 or F32 elements); else why not,
// for Forgetter::cannot_hold.
std::string not_forgettable(const TensorRecord& t);

// The tensor's name without ".weight" (a module's name), or the name itself.
std::string module_of(const std::string& name);

}  // namespace amn
