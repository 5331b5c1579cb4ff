// The file system half of `ollama:` sources: examine and read what session/ollama.h's
// steps name, until one names the blob.
#include "cli/ollama.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

namespace amn::cli {
namespace fs = std::filesystem;
namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

OllamaProbe probe(const std::string& path, bool read, uint64_t max_bytes, std::optional<std::string>& bytes) {
  OllamaProbe p;
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
    p.error = ec.message();
    return p;
  }
  p.is_file = fs::is_regular_file(status);
  if (!p.is_file) return p;
  p.size = fs::file_size(path, ec);
  if (ec) {
    p.error = ec.message();
    return p;
  }
  if (!read || p.size > max_bytes) return p;
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) {
    p.error = std::error_code(errno, std::generic_category()).message();
    return p;
  }
  bytes = std::move(text);
  return p;
}

}  // namespace

Result<OllamaModel> resolve_ollama_model(std::string_view spec) {
  OllamaFacts facts;
  facts.models_env = env("OLLAMA_MODELS");
#ifdef _WIN32
  facts.home = env("USERPROFILE");
#else
  facts.home = env("HOME");
#endif
  for (;;) {
    AMN_ASSIGN(auto step, ollama_step(spec, facts));
    if (step.probe.empty()) return OllamaModel{step.blob, step.stem, step.models_dir};
    facts.probes[step.probe] = probe(step.probe, step.read, step.max_bytes, facts.manifest);
  }
}

}  // namespace amn::cli
