// `ollama:<name>` sources: a model pulled by Ollama, found through its local manifest and
// opened as the GGUF blob the manifest names. The rules and messages live here, once,
// without I/O: a surface calls ollama_step with what it has found so far, examines the
// path the step names (and reads the manifest when asked), and calls again until the
// step names the blob. The native CLI (src/cli/ollama.cpp) and npm (npm/lib/ollama.js)
// are those loops. docs/cli.md, "Ollama models".
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace amn {

inline constexpr std::string_view kOllamaPrefix = "ollama:";

bool is_ollama_spec(std::string_view path);

// What a surface found at a path a step named.
struct OllamaProbe {
  bool is_file = false;  // a regular file (after symlinks); false when it does not exist
  uint64_t size = 0;
  std::string error;     // not empty: the path could not be examined or read (the system's words)
};

struct OllamaFacts {
  std::optional<std::string> models_env;  // $OLLAMA_MODELS as set; nullopt when unset
  std::optional<std::string> home;        // $HOME ($USERPROFILE on Windows)
  std::map<std::string, OllamaProbe> probes;
  std::optional<std::string> manifest;    // the manifest's bytes, once a step asked to read them
};

struct OllamaStep {
  std::string probe;      // the path to examine next; empty when resolved
  bool read = false;      // also read its bytes into OllamaFacts::manifest, if a file of at most max_bytes
  uint64_t max_bytes = 0;
  std::string blob;        // resolved: the GGUF blob, <models>/blobs/sha256-<hex>
  std::string stem;        // "<model>-<tag>", for default output names
  std::string models_dir;  // $OLLAMA_MODELS or ~/.ollama/models
};

// spec: "ollama:[host/][namespace/]model[:tag]". Errors: parse (a name Ollama would not
// accept, a manifest that is not Ollama's JSON, a digest that is not sha256), not_found
// (no manifest for that name or its blob is missing, with the `ollama pull` hint), limit
// (a manifest over 4 MiB), unsupported (a manifest without a GGUF model layer: cloud or
// tensor-layer models), io (a probe's error).
Result<OllamaStep> ollama_step(std::string_view spec, const OllamaFacts& facts);

// The same for the bindings: facts as {"spec", "modelsEnv": string|null, "home":
// string|null, "probes": {path: {"isFile", "size", "error"}}, "hasManifest"} plus the
// manifest's bytes; the answer is {"ok":true,"probe","read","maxBytes"} or
// {"ok":true,"blob","stem","modelsDir"}, or an error status (views.h status_json).
std::string ollama_step_json(std::string_view facts_json, std::string_view manifest);

}  // namespace amn
