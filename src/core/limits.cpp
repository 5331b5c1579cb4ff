#include "core/limits.h"

#include <algorithm>

namespace amn {

ParseLimits effective_limits(const ParseLimits& requested) {
  ParseLimits out = requested;
  out.max_item_count = std::min(out.max_item_count, kHardMaxItems);
  if (!(out.max_decompression_ratio > 0)) out.max_decompression_ratio = 1.0;
  return out;
}

Status MemoryBudget::charge(uint64_t bytes, std::string_view what, uint64_t offset) {
  used_ = bytes > UINT64_MAX - used_ ? UINT64_MAX : used_ + bytes;
  if (used_ <= max_) return {};
  return make_error(ErrorCode::limit,
                    who_ + ": the header's data needs more than max_total_bytes (" + std::to_string(max_) +
                        ") of memory, at " + std::string(what),
                    offset);
}

}  // namespace amn
