// Ollama's local store, as read from ollama/ollama at commit fb30760996871fa9460115c753afd2c60d4ab0f7
// (2026-08-21):
//  - envconfig/config.go Models(): the models folder is $OLLAMA_MODELS (Var(): surrounding
//    spaces, then quotes, trimmed) if non-empty, else $HOME/.ollama/models;
//  - types/model/name.go ParseNameBare / isValidPart: "[host/][namespace/]model[:tag]", a
//    ':' after the last '/' starts the tag; defaults registry.ollama.ai / library / latest;
//    each part starts with a letter, digit or '_' and continues with letters, digits, '_',
//    '-', '.' (no '.' in a namespace; ':' only in a host); host 1-350 bytes, others 1-80.
//    Ollama's earlier parser (same file, before the rewrite) also refused "..", which we
//    keep: no part can then be "." or "..", and no '/' or '\' can reach a path;
//  - types/model/name.go Filepath() + manifest/paths.go PathForName(): the manifest is
//    <models>/manifests/<host>/<namespace>/<model>/<tag>;
//  - manifest/manifest.go Manifest / manifest/layer.go Layer: JSON {"layers": [{"mediaType",
//    "digest", "size"}, ...]}; server/images.go GetModel(): the layer with mediaType
//    "application/vnd.ollama.image.model" is the weights (the last one, if several);
//  - manifest/paths.go BlobsPath(): digests match ^sha256[:-][0-9a-fA-F]{64}$ and the blob
//    is <models>/blobs/sha256-<hex>; before March 2024 (#3146; server/fixblobs.go renames
//    old blobs when the server starts) Ollama named it sha256:<hex> outside Windows, which
//    we look for second.
#include "cli/ollama.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include <simdjson.h>

namespace amn::cli {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kDefaultHost = "registry.ollama.ai";
constexpr std::string_view kDefaultNamespace = "library";
constexpr std::string_view kDefaultTag = "latest";
constexpr std::string_view kModelMediaType = "application/vnd.ollama.image.model";
constexpr uint64_t kMaxManifestBytes = 4u << 20;  // Ollama's are a few hundred bytes

struct OllamaName {
  std::string host, ns, model, tag;
};

enum class Part { host, ns, model, tag };

const char* part_label(Part p) {
  switch (p) {
    case Part::host: return "host";
    case Part::ns: return "namespace";
    case Part::model: return "model";
    case Part::tag: return "tag";
  }
  return "part";
}

bool alnum_or_underscore(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

// Empty when the part is valid, else why not.
std::string part_problem(Part kind, std::string_view s) {
  const std::string label = part_label(kind);
  if (s.empty()) return "the " + label + " is empty";
  const size_t max = kind == Part::host ? 350 : 80;
  if (s.size() > max) return "the " + label + " is longer than " + std::to_string(max) + " characters";
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    bool ok = alnum_or_underscore(c);
    if (i > 0) {
      ok = ok || c == '-' || (c == '.' && kind != Part::ns) || (c == ':' && kind == Part::host);
    }
    if (!ok) {
      const char* allowed = kind == Part::host ? "letters, digits, '_', '-', '.' and ':'"
                            : kind == Part::ns   ? "letters, digits, '_' and '-'"
                                                 : "letters, digits, '_', '-' and '.'";
      return "the " + label + " \"" + std::string(s) + "\" " +
             (i == 0 ? "must start with a letter, digit or '_'" : "holds a character Ollama does not allow") +
             " (" + allowed + ")";
    }
  }
  return {};
}

Error name_error(std::string_view name, const std::string& why) {
  return make_error(ErrorCode::parse, "invalid Ollama model name \"" + std::string(name) + "\": " + why +
                                          "; expected [host/][namespace/]model[:tag]");
}

Result<OllamaName> parse_name(std::string_view name) {
  if (name.empty()) return name_error(name, "the name is empty");
  if (name.find("..") != std::string_view::npos) return name_error(name, "\"..\" is not allowed");
  OllamaName n;
  std::string_view s = name;
  const size_t colon = s.rfind(':');
  const size_t slash = s.rfind('/');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    n.tag = std::string(s.substr(colon + 1));
    s = s.substr(0, colon);
  } else {
    n.tag = std::string(kDefaultTag);
  }
  size_t cut = s.rfind('/');
  if (cut == std::string_view::npos) {
    n.model = std::string(s);
    n.ns = std::string(kDefaultNamespace);
    n.host = std::string(kDefaultHost);
  } else {
    n.model = std::string(s.substr(cut + 1));
    s = s.substr(0, cut);
    cut = s.rfind('/');
    if (cut == std::string_view::npos) {
      n.ns = std::string(s);
      n.host = std::string(kDefaultHost);
    } else {
      n.ns = std::string(s.substr(cut + 1));
      n.host = std::string(s.substr(0, cut));  // a '/' left in it fails the check below
    }
  }
  for (auto [kind, part] : {std::pair{Part::host, &n.host}, std::pair{Part::ns, &n.ns},
                            std::pair{Part::model, &n.model}, std::pair{Part::tag, &n.tag}}) {
    if (auto why = part_problem(kind, *part); !why.empty()) return name_error(name, why);
  }
  return n;
}

// Go's strings.Trim(strings.TrimSpace(v), "\"'") (envconfig.Var), for ASCII space.
std::string trim_env(std::string_view v) {
  auto strip = [&](std::string_view set) {
    const size_t b = v.find_first_not_of(set);
    if (b == std::string_view::npos) return std::string_view{};
    return v.substr(b, v.find_last_not_of(set) - b + 1);
  };
  v = strip(" \t\n\v\f\r");
  v = strip("\"'");
  return std::string(v);
}

Result<std::string> models_dir() {
  if (const char* env = std::getenv("OLLAMA_MODELS")) {
    std::string dir = trim_env(env);
    if (!dir.empty()) return dir;
  }
#ifdef _WIN32
  const char* home = std::getenv("USERPROFILE");
#else
  const char* home = std::getenv("HOME");
#endif
  if (!home || !*home) {
    return make_error(ErrorCode::io, "cannot locate Ollama's models folder: set OLLAMA_MODELS (or HOME)");
  }
  return (fs::path(home) / ".ollama" / "models").string();
}

std::string pull_hint(std::string_view name) { return "; run `ollama pull " + std::string(name) + "`"; }

bool is_sha256_digest(std::string_view d) {
  if (d.size() != 71 || d.substr(0, 6) != "sha256" || (d[6] != ':' && d[6] != '-')) return false;
  for (char c : d.substr(7)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  }
  return true;
}

Result<std::string> read_manifest(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return make_error(ErrorCode::io, "cannot read " + path.string() + ": " + ec.message());
  if (size > kMaxManifestBytes) {
    return make_error(ErrorCode::limit, path.string() + ": an Ollama manifest of " + std::to_string(size) +
                                            " bytes is larger than " + std::to_string(kMaxManifestBytes));
  }
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) return make_error(ErrorCode::io, "cannot read " + path.string());
  return text;
}

// The digest of the manifest's model layer ("" when it has none).
Result<std::string> model_digest(const std::string& text, const std::string& where) {
  auto bad = [&](const std::string& why) { return make_error(ErrorCode::parse, where + ": not an Ollama manifest: " + why); };
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(text.data(), text.size()).get(root)) return bad("not valid JSON");
  if (!root.is_object()) return bad("not a JSON object");
  simdjson::dom::element layers_el;
  if (root["layers"].get(layers_el)) return std::string();  // Go decodes a missing field as no layers
  if (layers_el.is_null()) return std::string();
  simdjson::dom::array layers;
  if (layers_el.get_array().get(layers)) return bad("\"layers\" is not an array");
  std::string digest;
  for (auto layer : layers) {
    if (!layer.is_object()) return bad("a layer is not an object");
    std::string_view media_type;
    simdjson::dom::element mt;
    if (!layer["mediaType"].get(mt) && !mt.is_null()) {
      if (mt.get_string().get(media_type)) return bad("a layer's \"mediaType\" is not a string");
    }
    if (media_type != kModelMediaType) continue;
    std::string_view d;
    if (layer["digest"].get_string().get(d)) return bad("the model layer has no \"digest\" string");
    if (!is_sha256_digest(d)) return bad("the model layer's digest \"" + std::string(d) + "\" is not sha256:<64 hex digits>");
    digest = std::string(d);  // the last model layer wins, as in Ollama's GetModel
  }
  return digest;
}

}  // namespace

bool is_ollama_spec(std::string_view path) { return path.substr(0, kOllamaPrefix.size()) == kOllamaPrefix; }

Result<OllamaModel> resolve_ollama_model(std::string_view spec) {
  if (!is_ollama_spec(spec)) return make_error(ErrorCode::invalid_argument, std::string(spec) + " is not an ollama: name");
  const std::string_view name = spec.substr(kOllamaPrefix.size());
  AMN_ASSIGN(auto n, parse_name(name));
  AMN_ASSIGN(std::string dir, models_dir());
  const fs::path manifest = fs::path(dir) / "manifests" / n.host / n.ns / n.model / n.tag;
  std::error_code ec;
  const auto status = fs::status(manifest, ec);
  if (!fs::is_regular_file(status)) {
    if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
      return make_error(ErrorCode::io, "cannot read " + manifest.string() + ": " + ec.message());
    }
    return make_error(ErrorCode::not_found, "Ollama model " + std::string(name) + " not found in " + dir + pull_hint(name));
  }
  AMN_ASSIGN(auto text, read_manifest(manifest));
  AMN_ASSIGN(auto digest, model_digest(text, manifest.string()));
  if (digest.empty()) {
    return make_error(ErrorCode::unsupported, "Ollama model " + std::string(name) + " has no GGUF weights (no " +
                                                  std::string(kModelMediaType) + " layer in " + manifest.string() +
                                                  "): a cloud model, or one stored as tensor layers");
  }
  const std::string hex = digest.substr(7);
  const fs::path blobs = fs::path(dir) / "blobs";
  fs::path blob = blobs / ("sha256-" + hex);
  if (!fs::is_regular_file(blob, ec)) {
    const fs::path older = blobs / ("sha256:" + hex);
    if (!fs::is_regular_file(older, ec)) {
      return make_error(ErrorCode::not_found, "the weights of Ollama model " + std::string(name) + " (blob sha256-" + hex +
                                                  ") not found in " + blobs.string() + pull_hint(name));
    }
    blob = older;
  }
  OllamaModel out;
  out.blob = blob.string();
  out.stem = n.model + "-" + n.tag;
  out.models_dir = dir;
  return out;
}

Result<std::string> resolve_ollama(std::string_view spec) {
  AMN_ASSIGN(auto m, resolve_ollama_model(spec));
  return m.blob;
}

}  // namespace amn::cli
