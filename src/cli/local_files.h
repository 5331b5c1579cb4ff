// Opening models from the local file system (the native CLI's only I/O besides the
// output file): a file, a folder of shards, or an index; sibling config files are added
// (config.json, quantize_config.json, quant_config.json: session/open.h).
#pragma once
#include <memory>
#include <string>

#include "core/error.h"
#include "core/limits.h"
#include "core/model.h"
#include "core/source.h"
#include "session/output.h"

namespace amn::cli {

struct LocalModel {
  std::unique_ptr<FileSet> files;  // stable address: plans keep reading through it
  Model model;
  std::string folder;              // where the entry lives
  InputPlace place;                // stem and folders for default output names (session/output.h)
};

Result<LocalModel> open_local(const std::string& path, const ParseLimits& limits);

}  // namespace amn::cli
