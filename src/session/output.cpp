#include "session/output.h"

#include <cstdio>

#include <simdjson.h>

#include "convert/plan.h"
#include "core/json.h"
#include "report/report.h"
#include "session/views.h"
#include "session/registry.h"

namespace amn {
namespace {

std::string join(std::string_view folder, std::string_view name) {
  std::string out(folder);
  if (out.empty()) out = ".";
  if (out.back() != '/') out += '/';
  return out + std::string(name);
}

// "-00001-of-00003" at the end: a shard number (transformers' and gguf-split's names).
bool strip_shard_number(std::string& s) {
  constexpr size_t kLen = 15;  // -00001-of-00003
  if (s.size() <= kLen) return false;
  const std::string_view t = std::string_view(s).substr(s.size() - kLen);
  for (size_t i = 0; i < kLen; ++i) {
    const bool digit = (i >= 1 && i <= 5) || (i >= 10);
    if (digit ? !(t[i] >= '0' && t[i] <= '9') : t[i] != "-00000-of-00000"[i]) return false;
  }
  s.resize(s.size() - kLen);
  return true;
}

std::string lower_name(DType dtype) {
  std::string d(dtype_name(dtype));
  for (auto& c : d) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return d;
}

// The one dtype every floating output tensor of this conversion has, if there is one: read
// from the plan itself, so the name says what is written.
std::optional<DType> single_float_dtype(const Model& model, const ConvertRequest& r) {
  ConvertOptions options;
  options.to = r.to;
  options.dtype = r.dtype;
  options.cast_all = r.cast_all;
  auto plan = plan_convert(model, options);
  if (!plan) return std::nullopt;  // converting fails too, and says why
  std::optional<DType> one;
  for (const auto& t : plan->tensors) {
    if (!is_castable_float(t.dtype)) continue;
    if (one && *one != t.dtype) return std::nullopt;
    one = t.dtype;
  }
  return one;
}

// The name's suffix: see default_output_name in output.h.
std::string suffix_of(const ConvertRequest& r, const Model* model, bool folder, bool folder_input) {
  if (r.verb == Verb::forget) {  // model-nf4, model-fp8-block
    std::string scheme = r.scheme.empty() ? std::string("like") : r.scheme;
    for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return "-" + scheme;
  }
  if (r.dtype) return "-" + lower_name(*r.dtype);
  if (r.verb != Verb::remember) return "-converted";
  if (!model) return "-remembered";
  const bool same_format = model->format == ModelFormat::safetensors && r.to == OutputFormat::safetensors;
  if (!same_format && !(folder && folder_input)) return "";
  if (auto one = single_float_dtype(*model, r)) return "-" + lower_name(*one);
  return "-remembered";
}

}  // namespace

std::string output_stem(std::string_view entry_name) {
  std::string name(entry_name);
  if (const auto slash = name.find_last_of('/'); slash != std::string::npos) name = name.substr(slash + 1);
  // The longest known suffix: ".safetensors.index.json" before ".index.json" before ".json".
  bool cut = false;
  for (std::string_view suffix : {".safetensors.index.json", ".bin.index.json", ".pth.index.json", ".pt.index.json",
                                  ".index.json"}) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      name.resize(name.size() - suffix.size());
      cut = true;
      break;
    }
  }
  if (!cut) {
    for (const FormatRow& row : format_rows()) {
      for (auto ext : row.extensions) {
        if (!cut && name.size() > ext.size() && name.ends_with(ext)) {
          name.resize(name.size() - ext.size());
          cut = true;
        }
      }
    }
  }
  if (!cut) {
    // An unknown extension (a GGUF blob named sha256-..., a model.ckpt2): drop the last one.
    const auto dot = name.find_last_of('.');
    if (dot != std::string::npos && dot > 0) name.resize(dot);
  }
  strip_shard_number(name);
  return name.empty() ? "model" : name;
}

bool is_url(std::string_view s) {
  auto starts = [&](std::string_view p) {
    if (s.size() < p.size()) return false;
    for (size_t i = 0; i < p.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(s[i])) != p[i]) return false;
    }
    return true;
  };
  return starts("http://") || starts("https://");
}

namespace {

std::string_view trim_slashes(std::string_view s) {
  while (s.size() > 1 && s.back() == '/') s.remove_suffix(1);
  return s;
}

std::string_view base_name(std::string_view s) {
  s = trim_slashes(s);
  const auto slash = s.find_last_of('/');
  return slash == std::string_view::npos ? s : s.substr(slash + 1);
}

std::string dir_name(std::string_view s) {
  s = trim_slashes(s);
  const auto slash = s.find_last_of('/');
  if (slash == std::string_view::npos) return ".";
  return slash == 0 ? "/" : std::string(s.substr(0, slash));
}

std::string percent_decoded(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10 : -1; };
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

InputPlace input_place(std::string_view path, bool is_folder, std::string_view absolute_folder) {
  InputPlace place;
  if (is_url(path)) {
    std::string_view rest = path.substr(path.find("//") + 2);
    rest = rest.substr(0, rest.find_first_of("?#"));
    const auto slash = rest.find('/');
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    place.stem = output_stem(percent_decoded(base_name(rest)));
    place.folder = place.folder_output_parent = ".";
  } else if (is_folder) {
    place.folder_input = true;
    place.stem = std::string(base_name(absolute_folder));
    if (place.stem.empty() || place.stem == "/") place.stem = "model";
    place.folder = std::string(path);
    place.folder_output_parent = dir_name(absolute_folder);
  } else {
    place.stem = output_stem(base_name(path));
    place.folder = place.folder_output_parent = dir_name(path);
  }
  return place;
}

Result<Destination> destination_from_name(std::string_view name) {
  if (name == "path") return Destination::path;
  if (name == "per_file") return Destination::per_file;
  if (name == "single") return Destination::single;
  std::string message = "destination \"";  // appended, not "literal" + string: GCC 12 -Wrestrict
  message.append(name).append("\": path, per_file or single");
  return make_error(ErrorCode::invalid_argument, message);
}

Result<OutputLayout> output_layout(const ConvertRequest& r, bool sharded_input, Destination destination,
                                   Surface surface) {
  OutputLayout out;
  const bool asked = r.max_shard_bytes > 0 || r.shards == ShardMode::input;
  // --keep-split splits only a split input (llama-quantize would name one file as a split).
  const bool split = r.split_max_bytes > 0 || r.split_max_tensors > 0 || (r.keep_split && sharded_input);
  const bool names_file =
      destination == Destination::path && r.output.ends_with(r.to == OutputFormat::gguf ? ".gguf" : ".safetensors");
  if ((asked || split) && destination == Destination::single) {
    return make_error(ErrorCode::invalid_argument,
                      "a sharded output needs a folder: openShard, or in Node a folder path as sink");
  }
  if (split) {  // a folder of gguf-split files (check_shard_request: GGUF output only)
    if (names_file) {
      return make_error(ErrorCode::invalid_argument, r.output + " names a file: a split GGUF output is a folder");
    }
    out.folder = out.sharded = true;
    return out;
  }
  if (r.verb == Verb::forget && r.to == OutputFormat::gguf) return out;  // one file, as llama-quantize writes
  if (asked && names_file) {
    return make_error(ErrorCode::invalid_argument, r.output + " names a file: a sharded output is a folder (or pass " +
                                                       option_name(OptionId::shards, surface) + " 1)");
  }
  if (r.verb == Verb::forget) {
    // A folder a user can load (the model and its config), unless the output is named as
    // a file or must be one stream; its model is sharded like the input unless asked otherwise.
    out.folder = destination == Destination::per_file || (destination == Destination::path && !names_file);
    out.sharded = out.folder && r.shards != ShardMode::one && (asked || sharded_input);
    return out;
  }
  if (r.to != OutputFormat::safetensors) {
    if (asked || destination == Destination::per_file) {
      return make_error(ErrorCode::unsupported, "sharded output is written as safetensors only (GGUF output is split with " +
                                                    option_name(OptionId::split_max_size, surface) + " or " +
                                                    option_name(OptionId::split_max_tensors, surface) + ")");
    }
    return out;
  }
  if (destination == Destination::per_file) {
    out.folder = true;
    out.single = r.shards == ShardMode::one;
    out.sharded = !out.single && (asked || sharded_input);
    return out;
  }
  if (r.shards == ShardMode::one) return out;
  out.folder = out.sharded = destination == Destination::path && (asked || (sharded_input && !names_file));
  return out;
}

ShardOptions shard_options(const ConvertRequest& request, std::string_view folder) {
  ShardOptions s;
  s.max_shard_bytes = request.max_shard_bytes;
  s.one = request.shards == ShardMode::one;
  s.split_max_bytes = request.split_max_bytes;
  s.split_max_tensors = request.split_max_tensors;
  s.keep_split = request.keep_split;
  const std::string_view name = base_name(folder);
  s.split_prefix = name.empty() || name == "/" || name == "." || name == ".." ? std::string("model") : std::string(name);
  return s;
}

std::string default_output_name(const ConvertRequest& r, std::string_view stem, bool folder, const Model* model,
                                bool folder_input) {
  std::string name = std::string(stem) + suffix_of(r, model, folder, folder_input);
  if (!folder) name += r.to == OutputFormat::gguf ? ".gguf" : ".safetensors";
  return name;
}

std::string default_output(const ConvertRequest& r, const InputPlace& place, bool folder, const Model* model) {
  return join(folder ? place.folder_output_parent : place.folder,
              default_output_name(r, place.stem, folder, model, place.folder_input));
}

std::string output_plan_json(std::string_view json, const Model* model) {
  auto fail = [](const Error& e) { return status_json(&e); };
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
  if (parser.parse(json.data(), json.size()).get_object().get(obj)) {
    return fail(make_error(ErrorCode::invalid_argument, "output plan: not a JSON object"));
  }
  std::string_view text;
  const Surface surface = !obj["surface"].get_string().get(text) && text == "cli" ? Surface::cli : Surface::api;
  // The verb, when the request names none, follows from its options: a request that
  // names a scheme is a forget (npm outputName({ scheme }) / outputLayout({ scheme })).
  Verb verb = Verb::convert;
  if (!obj["request"]["verb"].get_string().get(text)) {
    if (text == "remember") verb = Verb::remember;
    if (text == "forget") verb = Verb::forget;
  } else if (!obj["request"]["scheme"].get_string().get(text)) {
    verb = Verb::forget;
  }
  simdjson::dom::element request_json;
  const std::string request_text = obj["request"].get(request_json) ? "{}" : simdjson::to_string(request_json);
  auto request = convert_request_from_json(request_text, verb, surface);
  if (!request) return fail(request.error());
  bool sharded = false;
  if (obj["shardedInput"].get_bool().get(sharded)) {}
  Destination destination = Destination::path;
  if (!obj["destination"].get_string().get(text)) {
    auto named = destination_from_name(text);
    if (!named) return fail(named.error());
    destination = *named;
  }
  auto layout = output_layout(*request, sharded, destination, surface);
  if (!layout) return fail(layout.error());
  JsonWriter w;
  w.begin_object().key("ok").value(true).key("folder").value(layout->folder).key("single").value(layout->single);
  w.key("sharded").value(layout->sharded);
  simdjson::dom::object place;
  std::string stem = "model";
  bool folder_input = false;
  if (!obj["place"].get_object().get(place)) {
    InputPlace where;
    if (!place["entry"].get_string().get(text)) {
      stem = output_stem(text);
    } else if (!place["stem"].get_string().get(text)) {  // a place the surface decided (ollama:)
      where.stem = stem = std::string(text);
      where.folder = where.folder_output_parent = ".";
      if (!place["folder"].get_string().get(text)) where.folder = std::string(text);
      if (!place["folderOutputParent"].get_string().get(text)) where.folder_output_parent = std::string(text);
      w.key("target").value(request->output.empty() ? default_output(*request, where, layout->folder, model)
                                                   : request->output);
    } else {
      std::string_view path, absolute;
      bool folder = false;
      if (place["path"].get_string().get(path)) {}
      if (place["absolute"].get_string().get(absolute)) {}
      if (place["isFolder"].get_bool().get(folder)) {}
      where = input_place(path, folder, absolute);
      stem = where.stem;
      folder_input = where.folder_input;
      w.key("target").value(request->output.empty() ? default_output(*request, where, layout->folder, model)
                                                   : request->output);
    }
  }
  w.key("name").value(default_output_name(*request, stem, layout->folder, model, folder_input));
  return w.end_object().take();
}

Error output_is_input(std::string_view target) {
  return make_error(ErrorCode::invalid_argument, std::string(target) + " is an input of this conversion");
}

Error output_holds_input(std::string_view target, std::string_view input_name) {
  return make_error(ErrorCode::invalid_argument,
                    std::string(target) + " holds an input of this conversion (" + std::string(input_name) + ")");
}

Error output_exists(std::string_view target, Surface surface) {
  return make_error(ErrorCode::exists, std::string(target) + " already exists (" +
                                           (surface == Surface::cli ? "use --force" : "pass { overwrite: true }") +
                                           " to replace it)");
}

std::string wrote_line(std::string_view target, bool folder, uint64_t shards, uint64_t tensors, uint64_t bytes) {
  std::string shown(target);
  if (!folder) return "wrote " + shown + " (" + std::to_string(tensors) + " tensors, " + human_bytes(bytes) + ")\n";
  while (shown.size() > 1 && shown.back() == '/') shown.pop_back();
  return "wrote " + shown + "/ (" + std::to_string(shards) + " shard" + (shards == 1 ? "" : "s") + ", " +
         std::to_string(tensors) + " tensors, " + human_bytes(bytes) + ")\n";
}

std::string progress_line(std::string_view label, uint64_t done, uint64_t total) {
  const int permille = total ? static_cast<int>(done * 1000 / total) : 0;
  constexpr int kWidth = 30;
  const int filled = permille * kWidth / 1000;
  std::string bar(filled, '#');
  bar.append(kWidth - filled, ' ');
  char pct[16];
  std::snprintf(pct, sizeof pct, "%3d", permille / 10);
  std::string line = "\r";  // appended, not "literal" + string: GCC 12 -Wrestrict
  line.append(label).append(" [").append(bar).append("] ").append(pct).append("%  ");
  return line.append(human_bytes(done)).append(" / ").append(human_bytes(total)).append("\x1b[K");
}

}  // namespace amn
