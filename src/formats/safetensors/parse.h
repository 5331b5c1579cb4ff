// safetensors header parsing and validation, mirroring the format authority
// (huggingface/safetensors, safetensors/src/tensor.rs: read_metadata + validate).
// Spec: docs/formats/safetensors.md.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/limits.h"
#include "core/model.h"
#include "core/source.h"

namespace amn {

struct SafetensorsHeader {
  uint64_t header_bytes = 0;  // 8 + N: where the data section starts
  std::vector<TensorRecord> tensors;  // sorted by offset, `file` set to the parsed file
  std::vector<std::pair<std::string, std::string>> metadata;
};

// First read of a file whose format is not known yet: enough for a whole header in the
// common case, so a remote inspect is one request.
inline constexpr uint64_t kSafetensorsReadAhead = 64 * 1024;

// Parses and validates one safetensors file of `files`. Reads only the header.
Result<SafetensorsHeader> parse_safetensors(FileSet& files, uint32_t file,
                                            const ParseLimits& limits);

// True when the first bytes look like a safetensors file (plausible length, then '{').
bool looks_like_safetensors(std::span<const uint8_t> head, uint64_t file_size);

}  // namespace amn
