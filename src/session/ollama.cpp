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
#include "session/ollama.h"

#include <simdjson.h>

#include "core/json.h"
#include "session/views.h"

namespace amn {
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

// fs::path's operator/ on POSIX: one '/' between parts, nothing normalised.
std::string under(std::string dir, std::initializer_list<std::string_view> parts) {
  for (auto part : parts) {
    if (dir.empty() || dir.back() != '/') dir += '/';
    dir += part;
  }
  return dir;
}

Result<std::string> models_dir(const OllamaFacts& facts) {
  if (facts.models_env) {
    std::string dir = trim_env(*facts.models_env);
    if (!dir.empty()) return dir;
  }
  if (!facts.home || facts.home->empty()) {
    return make_error(ErrorCode::io, "cannot locate Ollama's models folder: set OLLAMA_MODELS (or HOME)");
  }
  return under(*facts.home, {".ollama", "models"});
}

std::string pull_hint(std::string_view name) { return "; run `ollama pull " + std::string(name) + "`"; }

bool is_sha256_digest(std::string_view d) {
  if (d.size() != 71 || d.substr(0, 6) != "sha256" || (d[6] != ':' && d[6] != '-')) return false;
  for (char c : d.substr(7)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  }
  return true;
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

// The probe of `path`, or nullptr when the surface has not looked yet.
const OllamaProbe* probed(const OllamaFacts& facts, const std::string& path) {
  auto it = facts.probes.find(path);
  return it == facts.probes.end() ? nullptr : &it->second;
}

Error cannot_read(const std::string& path, const std::string& why) {
  return make_error(ErrorCode::io, "cannot read " + path + ": " + why);
}

}  // namespace

bool is_ollama_spec(std::string_view path) { return path.substr(0, kOllamaPrefix.size()) == kOllamaPrefix; }

Result<OllamaStep> ollama_step(std::string_view spec, const OllamaFacts& facts) {
  if (!is_ollama_spec(spec)) return make_error(ErrorCode::invalid_argument, std::string(spec) + " is not an ollama: name");
  const std::string_view name = spec.substr(kOllamaPrefix.size());
  AMN_ASSIGN(auto n, parse_name(name));
  AMN_ASSIGN(std::string dir, models_dir(facts));
  OllamaStep step;
  const std::string manifest = under(dir, {"manifests", n.host, n.ns, n.model, n.tag});
  const OllamaProbe* m = probed(facts, manifest);
  if (!m) {
    step.probe = manifest;
    step.read = true;
    step.max_bytes = kMaxManifestBytes;
    return step;
  }
  if (!m->error.empty()) return cannot_read(manifest, m->error);
  if (!m->is_file) {
    return make_error(ErrorCode::not_found, "Ollama model " + std::string(name) + " not found in " + dir + pull_hint(name));
  }
  if (m->size > kMaxManifestBytes) {
    return make_error(ErrorCode::limit, manifest + ": an Ollama manifest of " + std::to_string(m->size) +
                                            " bytes is larger than " + std::to_string(kMaxManifestBytes));
  }
  if (!facts.manifest) return make_error(ErrorCode::internal, manifest + ": examined but not read");
  AMN_ASSIGN(auto digest, model_digest(*facts.manifest, manifest));
  if (digest.empty()) {
    return make_error(ErrorCode::unsupported, "Ollama model " + std::string(name) + " has no GGUF weights (no " +
                                                  std::string(kModelMediaType) + " layer in " + manifest +
                                                  "): a cloud model, or one stored as tensor layers");
  }
  const std::string hex = digest.substr(7);
  const std::string blobs = under(dir, {"blobs"});
  // Today's name, then the pre-2024 one; a probe error means "not this one", as
  // std::filesystem::is_regular_file(path, ec) answers.
  for (const std::string& blob : {under(blobs, {"sha256-" + hex}), under(blobs, {"sha256:" + hex})}) {
    const OllamaProbe* b = probed(facts, blob);
    if (!b) {
      step.probe = blob;
      return step;
    }
    if (b->is_file && b->error.empty()) {
      step.blob = blob;
      step.stem = n.model + "-" + n.tag;
      step.models_dir = dir;
      return step;
    }
  }
  return make_error(ErrorCode::not_found, "the weights of Ollama model " + std::string(name) + " (blob sha256-" + hex +
                                              ") not found in " + blobs + pull_hint(name));
}

std::string ollama_step_json(std::string_view facts_json, std::string_view manifest) {
  auto bad = [](const std::string& why) {
    const Error e = make_error(ErrorCode::invalid_argument, "ollama facts: " + why);
    return status_json(&e);
  };
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
  if (parser.parse(facts_json.data(), facts_json.size()).get(obj)) return bad("not a JSON object");
  std::string_view spec;
  if (obj["spec"].get_string().get(spec)) return bad("no spec string");
  OllamaFacts facts;
  std::string_view text;
  if (!obj["modelsEnv"].get_string().get(text)) facts.models_env = std::string(text);
  if (!obj["home"].get_string().get(text)) facts.home = std::string(text);
  simdjson::dom::object probes;
  if (!obj["probes"].get_object().get(probes)) {
    for (auto kv : probes) {
      OllamaProbe p;
      bool is_file = false;
      if (!kv.value["isFile"].get_bool().get(is_file)) p.is_file = is_file;
      double size = 0;
      if (!kv.value["size"].get_double().get(size) && size > 0) p.size = static_cast<uint64_t>(size);
      if (!kv.value["error"].get_string().get(text)) p.error = std::string(text);
      facts.probes.emplace(std::string(kv.key), std::move(p));
    }
  }
  bool has_manifest = false;
  if (!obj["hasManifest"].get_bool().get(has_manifest) && has_manifest) facts.manifest = std::string(manifest);
  auto step = ollama_step(spec, facts);
  if (!step) return status_json(&step.error());
  JsonWriter w;
  w.begin_object().key("ok").value(true);
  if (!step->probe.empty()) {
    w.key("probe").value(step->probe).key("read").value(step->read).key("maxBytes").value(step->max_bytes);
  } else {
    w.key("blob").value(step->blob).key("stem").value(step->stem).key("modelsDir").value(step->models_dir);
  }
  return w.end_object().take();
}

}  // namespace amn
