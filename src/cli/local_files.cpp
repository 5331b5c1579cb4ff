#include "cli/local_files.h"

#include <filesystem>
#include <system_error>

#include "cli/ollama.h"
#include "session/open.h"
#include "session/output.h"
#include "session/registry.h"

namespace amn::cli {
namespace fs = std::filesystem;
namespace {

Status add_file(FileSet& files, const fs::path& path) {
  AMN_ASSIGN(auto source, MmapSource::open(path.string()));
  files.add(path.filename().string(), std::move(source));
  return {};
}

Result<LocalModel> open_path(const std::string& path, const ParseLimits& limits) {
  std::error_code ec;
  fs::path p(path);
  if (is_url(path)) return url_not_read_here(path);
  LocalModel out;
  out.files = std::make_unique<FileSet>();
  const auto status = fs::status(p, ec);
  if (ec || !fs::exists(status)) return make_error(ErrorCode::io, "cannot open " + path + ": no such file or folder");
  fs::path folder;
  if (fs::is_directory(status)) {
    folder = p;
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(p, ec)) {
      if (entry.is_regular_file(ec)) names.push_back(entry.path().filename().string());
    }
    if (ec) return make_error(ErrorCode::io, "cannot list " + path + ": " + ec.message());
    auto wanted = model_files_in_folder(names);
    if (wanted.empty() || is_config_file_name(wanted.front())) {
      return no_model_files(path);
    }
    for (const auto& name : wanted) AMN_TRY(add_file(*out.files, folder / name));
    out.place = input_place(path, true, fs::absolute(p, ec).lexically_normal().string());
  } else {
    folder = p.parent_path();
    AMN_TRY(add_file(*out.files, p));
    out.place = input_place(path, false, "");
  }
  out.folder = folder.empty() ? "." : folder.string();
  // Files in the order every surface uses (docs/session-protocol.md): the entry, the
  // shards an index names (added as the parser asks for them), then the config files
  // (config.json, quantize_config.json, quant_config.json) found beside it.
  std::vector<fs::path> configs;
  for (const char* name : kConfigFileNames) {
    const fs::path config = fs::path(out.folder) / name;
    if (!out.files->find(name) && p.filename() != name && fs::is_regular_file(config, ec)) configs.push_back(config);
  }
  auto add_configs = [&]() -> Status {
    for (const auto& config : configs) AMN_TRY(add_file(*out.files, config));
    configs.clear();
    return {};
  };
  const std::string& entry = out.files->name(0);
  const bool is_index = entry_is_index(entry);
  if (!is_index) AMN_TRY(add_configs());
  for (int round = 0; round < 2; ++round) {
    auto model = open_model(*out.files, limits);
    if (model) {
      out.model = std::move(model).value();
      return out;
    }
    if (model.error().code != ErrorCode::need_files || round == 1) return std::move(model).error();
    for (const auto& name : model.error().need_files) {
      const fs::path shard = fs::path(out.folder) / name;
      if (!fs::is_regular_file(shard, ec)) {
        return make_error(ErrorCode::io, "shard " + name + " named by " + out.files->name(0) + " is missing from " + out.folder);
      }
      AMN_TRY(add_file(*out.files, shard));
    }
    AMN_TRY(add_configs());
  }
  return make_error(ErrorCode::internal, "open did not converge");
}

}  // namespace

Result<LocalModel> open_local(const std::string& path, const ParseLimits& limits) {
  if (!is_ollama_spec(path)) return open_path(path, limits);
  // The GGUF blob, under its own name (sha256-<hex>: the core sniffs the content). Default
  // outputs go to the current folder, never into Ollama's blobs/ (it prunes files it does
  // not know).
  AMN_ASSIGN(auto ollama, resolve_ollama_model(path));
  AMN_ASSIGN(auto out, open_path(ollama.blob, limits));
  out.place.stem = ollama.stem;
  out.place.folder = out.place.folder_output_parent = std::string(".");  // (not = "." : GCC 12 -Wrestrict)
  return out;
}

}  // namespace amn::cli
