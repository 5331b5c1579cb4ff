// Opening models from the local file system (the native CLI's only I/O besides the
// output file): a file, a folder of shards, or an index; sibling config files are added
// (config.json, quantize_config.json, quant_config.json: formats/open.h).
#pragma once
#include <memory>
#include <string>

#include "core/error.h"
#include "core/limits.h"
#include "core/model.h"
#include "core/source.h"

namespace amn::cli {

struct LocalModel {
  std::unique_ptr<FileSet> files;  // stable address: plans keep reading through it
  Model model;
  std::string folder;              // where the entry lives
  std::string stem;                // for default output names: "model" of model.safetensors
  std::string output_folder;       // where default outputs go: `folder`, except "." for ollama:
};

Result<LocalModel> open_local(const std::string& path, const ParseLimits& limits);

}  // namespace amn::cli
