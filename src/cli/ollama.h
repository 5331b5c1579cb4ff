// `ollama:<name>` sources on the native CLI: the file system half of session/ollama.h,
// whose steps hold every rule and message (npm/lib/ollama.js is the Node half).
#pragma once
#include <string>
#include <string_view>

#include "core/error.h"
#include "session/ollama.h"

namespace amn::cli {

using amn::is_ollama_spec;
using amn::kOllamaPrefix;

struct OllamaModel {
  std::string blob;        // the GGUF blob: <models>/blobs/sha256-<hex>
  std::string stem;        // "<model>-<tag>", for default output names
  std::string models_dir;  // $OLLAMA_MODELS or ~/.ollama/models
};

// Errors: those of amn::ollama_step.
Result<OllamaModel> resolve_ollama_model(std::string_view spec);

}  // namespace amn::cli
