// Opening a model: detect the format of a FileSet's entry (file 0) and parse every
// header it needs. Sans-IO: may answer need_bytes / need_files; call again after
// supplying them. Never reads tensor data.
#pragma once
#include <string>
#include <vector>

#include "core/error.h"
#include "core/limits.h"
#include "core/model.h"
#include "core/source.h"

namespace amn {

Result<Model> open_model(FileSet& files, const ParseLimits& limits);

// Given the names in a folder, the files a model opened from that folder is made of,
// entry first: the *.safetensors.index.json if there is exactly one, else every
// *.safetensors file (sorted); then config.json when present. Empty: nothing to open.
std::vector<std::string> model_files_in_folder(std::vector<std::string> names);

// Sibling files worth adding next to an entry file (config.json), by name.
inline constexpr const char* kConfigFileName = "config.json";

}  // namespace amn
