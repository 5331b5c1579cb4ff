// `ollama:<name>` sources: a model pulled by Ollama, found through its local manifest
// and opened as the GGUF blob the manifest names. npm/lib/ollama.js applies the same
// rules with the same messages (the Node surface); docs/cli.md, "Ollama models".
#pragma once
#include <string>
#include <string_view>

#include "core/error.h"

namespace amn::cli {

inline constexpr std::string_view kOllamaPrefix = "ollama:";

bool is_ollama_spec(std::string_view path);

struct OllamaModel {
  std::string blob;        // the GGUF blob: <models>/blobs/sha256-<hex>
  std::string stem;        // "<model>-<tag>", for default output names
  std::string models_dir;  // $OLLAMA_MODELS or ~/.ollama/models
};

// spec: "ollama:[host/][namespace/]model[:tag]". Errors: parse (a name Ollama would not
// accept, a manifest that is not Ollama's JSON, a digest that is not sha256), not_found
// (no manifest for that name or its blob is missing, with the `ollama pull` hint),
// unsupported (a manifest without a GGUF model layer: cloud or tensor-layer models), io.
Result<OllamaModel> resolve_ollama_model(std::string_view spec);

// The blob path alone.
Result<std::string> resolve_ollama(std::string_view spec);

}  // namespace amn::cli
