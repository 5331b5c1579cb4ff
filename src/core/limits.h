// Explicit bounds for every parser. A caller may tighten them; the built-in floors
// (kHard*) hold whatever the caller passes, so no input can make us allocate or loop
// without bound.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"

namespace amn {

struct ParseLimits {
  uint64_t max_single_alloc = uint64_t{1} << 30;  // one header-derived allocation
  uint64_t max_total_bytes = uint64_t{4} << 30;   // all header-derived allocations together
  uint64_t max_item_count = 1'000'000;            // tensors, keys, array items ...
  double max_decompression_ratio = 1000.0;        // inflated / deflated, for ZIP entries
};

// safetensors: the format authority (huggingface/safetensors, lib.rs MAX_HEADER_SIZE)
// rejects headers above 100,000,000 bytes.
inline constexpr uint64_t kHardMaxSafetensorsHeader = 100'000'000;
inline constexpr uint64_t kHardMaxItems = 10'000'000;
inline constexpr uint64_t kHardMaxDims = 64;            // rank of one tensor
inline constexpr uint64_t kHardMaxNameBytes = 64 * 1024;  // one tensor / key name
inline constexpr uint64_t kHardMaxShards = 100'000;

// The header-derived memory of one parse (texts read, parser tapes, records, names),
// charged as it is taken and checked against max_total_bytes. Each parser keeps one;
// a parser that hands over to another (pth to pickle) passes what is left
// (`remaining()`) as the other's max_total_bytes.
class MemoryBudget {
 public:
  // `who` prefixes messages ("safetensors", "npz", ...).
  MemoryBudget(const ParseLimits& limits, std::string who, uint64_t used = 0)
      : max_(limits.max_total_bytes), who_(std::move(who)), used_(used) {}
  // Adds `bytes` for `what` ("the header text"); a limit error once the total passes
  // max_total_bytes. `offset`: where in the file, for the error.
  Status charge(uint64_t bytes, std::string_view what, uint64_t offset = kNoOffset);
  uint64_t used() const { return used_; }
  uint64_t remaining() const { return used_ >= max_ ? 0 : max_ - used_; }

 private:
  uint64_t max_;
  std::string who_;
  uint64_t used_;
};

// The limits actually in force: the caller's, clamped by the floors above.
ParseLimits effective_limits(const ParseLimits& requested);

}  // namespace amn
