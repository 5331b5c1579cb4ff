// Explicit bounds for every parser. A caller may tighten them; the built-in floors
// (kHard*) hold whatever the caller passes, so no input can make us allocate or loop
// without bound.
#pragma once
#include <cstdint>

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

// The limits actually in force: the caller's, clamped by the floors above.
ParseLimits effective_limits(const ParseLimits& requested);

}  // namespace amn
