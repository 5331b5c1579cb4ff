// The per-format functions the registry's rows point to (defined in session/open.cpp).
// Internal to the session layer.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/limits.h"
#include "core/model.h"
#include "core/source.h"

namespace amn::detail {

Result<Model> open_safetensors_set(FileSet& files, const ParseLimits& limits);
Result<Model> open_gguf_set(FileSet& files, const ParseLimits& limits);
Result<Model> open_npy_file(FileSet& files, const ParseLimits& limits);
Result<Model> open_npz_file(FileSet& files, const ParseLimits& limits);
Result<Model> open_pth_file(FileSet& files, const ParseLimits& limits);
Result<Model> open_zip_or_legacy_pth(FileSet& files, const ParseLimits& limits);

bool sniff_safetensors(std::span<const uint8_t> head, uint64_t size);
bool sniff_gguf(std::span<const uint8_t> head, uint64_t size);
bool sniff_npy(std::span<const uint8_t> head, uint64_t size);
bool sniff_torch(std::span<const uint8_t> head, uint64_t size);

std::vector<std::string> pick_safetensors(const std::vector<std::string>& names);
std::vector<std::string> pick_gguf(const std::vector<std::string>& names);
std::vector<std::string> pick_torch(const std::vector<std::string>& names);
std::vector<std::string> pick_numpy(const std::vector<std::string>& names);

}  // namespace amn::detail
