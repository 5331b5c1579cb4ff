#include "core/limits.h"

#include <algorithm>

namespace amn {

ParseLimits effective_limits(const ParseLimits& requested) {
  ParseLimits out = requested;
  out.max_item_count = std::min(out.max_item_count, kHardMaxItems);
  if (!(out.max_decompression_ratio > 0)) out.max_decompression_ratio = 1.0;
  return out;
}

}  // namespace amn
