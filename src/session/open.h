// Opening a model: detect the format of a FileSet's entry (file 0) and parse every
// header it needs. Sans-IO: may answer need_bytes / need_files; call again after
// supplying them. Never reads tensor data.
#pragma once
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/limits.h"
#include "core/model.h"
#include "core/source.h"

namespace amn {

Result<Model> open_model(FileSet& files, const ParseLimits& limits);

// A shell that looks for the config files only when they are needed (the npm package,
// for a model file given by path: three stats, more than parsing a small header) opens
// the model without them; when config_matters_at_open (schemes/detect.h) says they could
// change what the open finds, it declares those present and opens again. Otherwise it
// declares them on the model's first use and calls this: the files declared past
// model.files are added and read as open_model would have read them (the same fields,
// warnings in the same order), so the model equals one opened with them. May answer
// need_bytes (the model is left unchanged); call again after supplying them.
Status read_late_config(FileSet& files, const ParseLimits& limits, Model& model);

// Given the names in a folder, the files a model opened from that folder is made of,
// entry first: the *.safetensors.index.json if there is exactly one, else every
// *.safetensors file (sorted); then the config files present (kConfigFileNames order).
// Empty: nothing to open.
std::vector<std::string> model_files_in_folder(std::vector<std::string> names);

// An entry that names its shards (*.index.json): the shards are found when the parser
// asks for them (need_files), and the config files are declared after them.
bool entry_is_index(std::string_view name);

// The refusal of a folder holding no model file: "<folder> holds no model files
// (*.safetensors, ...)", the patterns from the format registry.
Error no_model_files(std::string_view folder);

// The refusal of an http(s) URL by a surface that reads local files only (the native amn
// and the C++ library): where URLs are read instead.
Error url_not_read_here(std::string_view url);

// Sibling files worth adding next to an entry file, by name, in the order they are
// declared: transformers' config.json, then the quantizers' own configs in GPTQModel's
// lookup order (QUANT_CONFIG_FILENAME_COMPAT in gptqmodel/quantization/config.py):
// AutoGPTQ / GPTQModel's quantize_config.json, AutoAWQ's (before 0.2) quant_config.json.
inline constexpr const char* kConfigFileName = "config.json";
inline constexpr std::array<const char*, 3> kConfigFileNames = {kConfigFileName, "quantize_config.json",
                                                                "quant_config.json"};
bool is_config_file_name(std::string_view name);

}  // namespace amn
