// The safetensors header for a list of tensors laid out back to back, as the reference
// writer produces it (safetensors/src/tensor.rs, prepare + serialize): 8-byte
// little-endian length, the JSON header, spaces up to a multiple of 8 bytes.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"

namespace amn {

std::vector<uint8_t> safetensors_header(std::span<const TensorSpec> tensors,
                                        std::span<const std::pair<std::string, std::string>> metadata);

}  // namespace amn
