#include "session/command_line.h"

#include <algorithm>

#include <CLI/CLI.hpp>

#include "core/json.h"
#include "report/value_stats.h"
#include "schemes/forget_gguf.h"
#include "session/registry.h"

namespace amn {
namespace {

constexpr const char* kVerbHelp[] = {
    "List every stored tensor record with its byte range",
    "Summarise a model: dtypes, parameters, tensors (header only)",
    "Dequantize / cast to full precision, written as safetensors",
    "Convert a model to another format, streaming tensor by tensor",
    "Quantize a model as a producer would (bitsandbytes, ...), and say what was lost",
    "Per tensor value statistics: min/max/mean/std, NaN/Inf/zero counts, a histogram",
    "SHA-256 and XXH64 of every stored tensor and of the whole model (--gguf-hash: llama.cpp's lines)",
    "Compare two models tensor by tensor: equal or not, max |diff|, MAE, RMSE, cosine, SNR",
};

std::string footer() {
  // One text for both CLIs; URLs are the one input they differ on, said as such.
  return "PATH is a model file, a folder of shards, a *.index.json or ollama:<model>[:<tag>];\n"
         "npx amn (Node) also reads an http(s) URL, by HTTP Range requests.\n"
         "Output names: <stem>-<dtype|converted>.<format> beside the input. remember without --to\n"
         "is lossless (quantized weights: their natural dtype): <stem>.safetensors, or for a\n"
         "safetensors input <stem>-<dtype> (every float output one dtype) else <stem>-remembered.\n"
         "A sharded safetensors input gives a folder of shards and an index named the same way\n"
         "(same boundaries; --max-shard-size re-shards, --shards 1 or -o NAME.safetensors: one file).\n"
         "Formats:\n" + supported_formats_lines() + "Docs: docs/cli.md";
}

// The schemes, under `amn forget --help`.
std::string forget_footer() {
  std::string out = "Schemes:\n";
  for (const auto& row : forget_scheme_rows()) {
    std::string name(row.name);
    name.resize(std::max<size_t>(name.size(), 12), ' ');
    out += "  " + name + "  " + std::string(row.producer) + (row.available ? "" : " (not built yet)") + "\n";
  }
  out += "  --to gguf     a ggml type, as ggml_quantize_chunk writes it: " + gguf_forget_type_names() + "\n";
  return out + "Output: a folder <stem>-<scheme>/ (model.safetensors, or shards like the input's and their\n"
               "index, --max-shard-size re-sharding with each weight's companions kept beside it; and\n"
               "config.json with the producer's quantization_config when the input has one);\n"
               "-o NAME.safetensors writes one file alone; --to gguf: one file <stem>-<type>.gguf, or\n"
               "with --split-max-size / --split-max-tensors a folder of gguf-split's files.";
}

// One option of the table on a CLI11 command, storing into `text` (one value or a list).
template <class T>
CLI::Option* add(CLI::App* app, OptionId id, T& text) {
  const OptionRow& row = option_row(id);
  auto* o = app->add_option(std::string(row.flags), text, std::string(row.help));
  o->type_name(std::string(row.value));
  if (!row.choices.empty()) {
    std::vector<std::string> choices(row.choices.begin(), row.choices.end());
    o->check(CLI::IsMember(choices));
  }
  return o;
}

CLI::Option* add_flag(CLI::App* app, OptionId id, bool& flag) {
  const OptionRow& row = option_row(id);
  return app->add_flag(std::string(row.flags), flag, std::string(row.help));
}

// A positive whole number given as text, or 0 when not given.
Result<uint64_t> whole_number(const std::string& text, OptionId id) {
  if (text.empty()) return uint64_t{0};
  char* end = nullptr;
  const unsigned long long n = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || n == 0 || text[0] == '-') {
    return make_error(ErrorCode::invalid_argument, option_name(id, Surface::cli) + " must be a positive whole number");
  }
  return uint64_t{n};
}

struct Raw {
  std::string path, other, output, to, format, dtype, shards, max_shard_size, split_max_size, split_max_tensors, gguf_metadata, tensor_type_file, scheme, blocksize, torch_threads, threads, bits, group_size, mode, like,
      output_tensor_type, token_embedding_type, imatrix, prune_layers;
  std::vector<std::string> gguf_kv, skip, only, tensors, include_weights, exclude_weights, tensor_types;
  bool json = false, cast_all = false, force = false, no_sync = false, quiet = false, double_quant = false,
       strict = false, reuse_scales = false, pure = false, leave_output_tensor = false, gguf_hash = false,
       dequantized = false, allow_requantize = false, exact_names = false, keep_split = false;
  std::string limits[4];
};

void add_limits(CLI::App* app, Raw& raw) {
  const OptionId ids[] = {OptionId::max_single_alloc, OptionId::max_total_bytes, OptionId::max_item_count,
                          OptionId::max_decompression_ratio};
  for (int i = 0; i < 4; ++i) add(app, ids[i], raw.limits[i])->group("Limits");
}

// GGUF output's splitting (convert and forget; remember writes safetensors).
void add_gguf_split(CLI::App* app, Raw& raw) {
  add(app, OptionId::split_max_size, raw.split_max_size);
  add(app, OptionId::split_max_tensors, raw.split_max_tensors);
  add_flag(app, OptionId::keep_split, raw.keep_split);
}

void add_writing(CLI::App* app, Raw& raw) {
  add(app, OptionId::shards, raw.shards);
  add(app, OptionId::max_shard_size, raw.max_shard_size);
  add_flag(app, OptionId::force, raw.force);
  add_flag(app, OptionId::no_sync, raw.no_sync);
  add_flag(app, OptionId::quiet, raw.quiet);
  add(app, OptionId::threads, raw.threads);
}

Result<ParseLimits> limits_of(const Raw& raw) {
  std::string json = "{";
  const OptionId ids[] = {OptionId::max_single_alloc, OptionId::max_total_bytes, OptionId::max_item_count,
                          OptionId::max_decompression_ratio};
  for (int i = 0; i < 4; ++i) {
    if (raw.limits[i].empty()) continue;
    std::string number = raw.limits[i];
    if (i < 3) {  // sizes may be written as sizes: "2GB", "512MiB"
      auto n = parse_shard_size(number);
      if (!n) return make_error(ErrorCode::invalid_argument, option_name(ids[i], Surface::cli) + ": " + n.error().message);
      number = std::to_string(*n);
    } else {
      char* end = nullptr;
      const double d = std::strtod(number.c_str(), &end);
      if (end == number.c_str() || *end != '\0' || !(d > 0)) {
        return make_error(ErrorCode::invalid_argument, option_name(ids[i], Surface::cli) + " must be a positive number");
      }
    }
    if (json.size() > 1) json += ',';
    append_json_string(json, option_row(ids[i]).api_key);
    json += ":" + number;
  }
  return limits_from_json(json + "}", Surface::cli);
}

Result<ConvertRequest> request_of(Verb verb, const Raw& raw) {
  ConvertRequest r;
  r.verb = verb;
  if (verb == Verb::convert || verb == Verb::forget) {
    r.to = raw.format == "gguf" ? OutputFormat::gguf : OutputFormat::safetensors;
  }
  const std::string& dtype = verb == Verb::remember ? raw.to : raw.dtype;
  if (!dtype.empty()) {
    AMN_ASSIGN(r.dtype, float_target(dtype, verb == Verb::remember ? OptionId::to : OptionId::dtype, Surface::cli));
  }
  r.cast_all = raw.cast_all;
  if (raw.shards == "1") r.shards = ShardMode::one;
  if (raw.shards == "input") r.shards = ShardMode::input;
  if (!raw.max_shard_size.empty()) {
    AMN_ASSIGN(r.max_shard_bytes, parse_shard_size(raw.max_shard_size));
  }
  if (!raw.split_max_size.empty()) {
    AMN_ASSIGN(r.split_max_bytes, parse_split_size(raw.split_max_size));
  }
  AMN_ASSIGN(r.split_max_tensors, whole_number(raw.split_max_tensors, OptionId::split_max_tensors));
  r.keep_split = raw.keep_split;
  AMN_TRY(check_shard_request(r, Surface::cli));
  if (verb == Verb::forget) {
    r.scheme = raw.scheme;
    AMN_ASSIGN(r.blocksize, whole_number(raw.blocksize, OptionId::blocksize));
    AMN_ASSIGN(r.bits, whole_number(raw.bits, OptionId::bits));
    AMN_ASSIGN(r.group_size, whole_number(raw.group_size, OptionId::group_size));
    r.mode = raw.mode;
    r.double_quant = raw.double_quant;
    AMN_ASSIGN(r.torch_threads, whole_number(raw.torch_threads, OptionId::torch_threads));
    r.skip = raw.skip;
    r.only = raw.only;
    r.strict = raw.strict;
    r.like = raw.like;
    r.reuse_scales = raw.reuse_scales;
    r.pure = raw.pure;
    r.output_tensor_type = raw.output_tensor_type;
    r.token_embedding_type = raw.token_embedding_type;
    r.leave_output_tensor = raw.leave_output_tensor;
    r.imatrix = raw.imatrix;
    r.include_weights = raw.include_weights;
    r.exclude_weights = raw.exclude_weights;
    r.tensor_types = raw.tensor_types;
    r.tensor_type_file = raw.tensor_type_file;
    r.allow_requantize = raw.allow_requantize;
    if (!raw.prune_layers.empty()) {
      AMN_ASSIGN(r.prune_layers, parse_prune_layers(raw.prune_layers, Surface::cli));
    }
    AMN_TRY(forget_settings(r, Surface::cli));
  }
  r.gguf_kv = raw.gguf_kv;
  r.gguf_metadata_file = raw.gguf_metadata;
  r.output = raw.output;
  r.force = raw.force;
  r.sync = !raw.no_sync;
  AMN_ASSIGN(r.threads, whole_number(raw.threads, OptionId::threads));
  r.quiet = raw.quiet;
  return r;
}

// Each verb's other name (its subcommand alias), in Verb order; its name is verb_name's.
constexpr const char* kVerbAlias[] = {nullptr, "info", "dequantize", nullptr, "quantize", nullptr, nullptr, nullptr};

// The verb (index in Verb order) a word names, by name or alias; -1 for none.
int verb_index(const std::string& word) {
  for (int v = 0; v < 8; ++v) {
    if (word == verb_name(static_cast<Verb>(v)) || (kVerbAlias[v] && word == kVerbAlias[v])) return v;
  }
  return -1;
}

// A verb's operands, options and footer (forget's lists the schemes: only for a help).
void add_verb_options(Verb v, CLI::App* verb, Raw& raw, bool help) {
  if (v == Verb::diff) {
    verb->add_option("A", raw.path, "the first model (file, folder or *.index.json): the reference")->required();
    verb->add_option("B", raw.other, "the second model, compared with A")->required();
  } else {
    verb->add_option("PATH", raw.path, "model file, folder or *.index.json")->required();
  }
  switch (v) {
    case Verb::parse:
    case Verb::inspect:
      add_flag(verb, OptionId::json, raw.json);
      break;
    case Verb::remember:
      add(verb, OptionId::output, raw.output);
      add(verb, OptionId::to, raw.to);
      add_flag(verb, OptionId::cast_all, raw.cast_all);
      add_writing(verb, raw);
      break;
    case Verb::convert:
      add(verb, OptionId::format, raw.format)->required();
      add(verb, OptionId::dtype, raw.dtype);
      add(verb, OptionId::gguf_kv, raw.gguf_kv);
      add(verb, OptionId::gguf_metadata, raw.gguf_metadata);
      add(verb, OptionId::output, raw.output);
      add_flag(verb, OptionId::cast_all, raw.cast_all);
      add_writing(verb, raw);
      add_gguf_split(verb, raw);
      break;
    case Verb::forget:
      add(verb, OptionId::scheme, raw.scheme);
      add(verb, OptionId::format, raw.format);
      add_flag(verb, OptionId::pure, raw.pure);
      add(verb, OptionId::output_tensor_type, raw.output_tensor_type);
      add(verb, OptionId::token_embedding_type, raw.token_embedding_type);
      add_flag(verb, OptionId::leave_output_tensor, raw.leave_output_tensor);
      add(verb, OptionId::tensor_type, raw.tensor_types);
      add(verb, OptionId::tensor_type_file, raw.tensor_type_file);
      add(verb, OptionId::imatrix, raw.imatrix);
      add(verb, OptionId::include_weights, raw.include_weights);
      add(verb, OptionId::exclude_weights, raw.exclude_weights);
      add_flag(verb, OptionId::allow_requantize, raw.allow_requantize);
      add(verb, OptionId::prune_layers, raw.prune_layers);
      add(verb, OptionId::gguf_kv, raw.gguf_kv);
      add(verb, OptionId::output, raw.output);
      add(verb, OptionId::blocksize, raw.blocksize);
      add_flag(verb, OptionId::double_quant, raw.double_quant);
      add(verb, OptionId::torch_threads, raw.torch_threads);
      add(verb, OptionId::bits, raw.bits);
      add(verb, OptionId::group_size, raw.group_size);
      add(verb, OptionId::mode, raw.mode);
      add(verb, OptionId::skip, raw.skip);
      add(verb, OptionId::only, raw.only);
      add_flag(verb, OptionId::strict, raw.strict);
      add(verb, OptionId::like, raw.like);
      add_flag(verb, OptionId::reuse_scales, raw.reuse_scales);
      add_flag(verb, OptionId::json, raw.json);
      add_writing(verb, raw);
      add_gguf_split(verb, raw);
      if (help) verb->footer(forget_footer());
      break;
    case Verb::stats:
      verb->add_option("TENSOR", raw.tensors, "tensors to describe (default: every one; a quantized weight by its name)");
      add_flag(verb, OptionId::json, raw.json)->description("print the statistics as JSON (docs/json-schema.md \"stats\")");
      verb->footer("Values as the producer's dequantizer gives them (F32), streamed piece by piece:\n"
                   "two passes, the histogram (" + std::to_string(kStatsBins) + " bins) over the first pass's range.\n");
      break;
    case Verb::hash: {
      add_flag(verb, OptionId::json, raw.json)->description("print the digests as JSON (docs/json-schema.md \"hash\")");
      auto* gguf_lines = add_flag(verb, OptionId::gguf_hash, raw.gguf_hash);
      // gguf-hash's lines promise llama-gguf-hash's digests, which are of the stored bytes.
      add_flag(verb, OptionId::dequantized, raw.dequantized)->excludes(gguf_lines);
      verb->footer("Over the stored bytes of each tensor, as the file holds them (quantized: the blocks /\n"
                   "parts as stored); the model's digests over every tensor's bytes in order, metadata left\n"
                   "out. uuid: llama.cpp gguf-hash's UUIDv5 of those bytes. --dequantized: over the values\n"
                   "instead (each tensor amn stats lists, as F32 little-endian; docs/cli.md \"Hash\").\n");
      break;
    }
    case Verb::diff:
      add_flag(verb, OptionId::json, raw.json)->description("print the comparison as JSON (docs/json-schema.md \"diff\")");
      add_flag(verb, OptionId::exact_names, raw.exact_names);
      verb->footer("Tensors are matched by name (a quantized weight by its logical name) and read as F32,\n"
                   "both sides streamed piece by piece. A GGUF of a llama, qwen2 or qwen3 model against a\n"
                   "Hugging Face-named one is matched through llama.cpp's renaming (blk.0.attn_q.weight =\n"
                   "model.layers.0.self_attn.q_proj.weight), llama's q / k rows put back in one order.\n"
                   "Exit status: 0 every tensor identical, 3 something differs, 1 an error, 2 a misuse.\n");
      break;
  }
  add_limits(verb, raw);
}

}  // namespace

CommandLine parse_command_line(const std::vector<std::string>& args) {
  CommandLine out;
  Raw raw;
  CLI::App app{"amn (anamnesis): inspect tensor files and recover full precision from them", "amn"};
  app.require_subcommand(1, 1);
  bool version = false;
  app.add_flag("--version", version, "Display program version information and exit");

  // When the first word names a verb, only that verb gets its options: CLI11 builds every
  // option it is given, and the Node CLI runs this in WASM on every start, where building
  // all eight verbs' ~80 options (and compiling the code that does) cost a cold
  // `npx amn inspect` ~10 ms. Options of other verbs would be refused under this verb
  // anyway. Otherwise (--help, --version, a misuse) everything is built, for the help.
  // The footers that list formats and schemes are written only when a help may be printed
  // (CLI11 prints one only for -h / --help / --help-all); a verb's help ends with the top
  // level's footer (a subcommand copies its parent's when added), unless it has its own.
  const int named = args.empty() ? -1 : verb_index(args[0]);
  const bool help = named < 0 || std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "-h" || a == "--help" || a == "--help-all";
  });
  if (help) app.footer(footer());
  CLI::App* verbs[8];
  for (int v = 0; v < 8; ++v) {
    verbs[v] = app.add_subcommand(std::string(verb_name(static_cast<Verb>(v))), kVerbHelp[v]);
    if (kVerbAlias[v]) verbs[v]->alias(kVerbAlias[v]);
    if (named < 0 || named == v) add_verb_options(static_cast<Verb>(v), verbs[v], raw, help);
  }

  // An unknown verb is named as such (CLI11 would only say a subcommand is required).
  if (!args.empty() && !args[0].empty() && args[0][0] != '-' && named < 0) {
    out.text = "unknown subcommand: " + args[0];
    return out;
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out.kind = CommandLine::Kind::help;
    out.text = app.help();
    return out;
  } catch (const CLI::CallForAllHelp&) {
    out.kind = CommandLine::Kind::help;
    out.text = app.help("", CLI::AppFormatMode::All);
    return out;
  } catch (const CLI::ParseError& e) {
    if (version) {
      out.kind = CommandLine::Kind::version;
      return out;
    }
    out.text = e.what();
    return out;
  }
  for (int v = 0; v < 8; ++v) {
    if (!verbs[v]->parsed()) continue;
    out.verb = static_cast<Verb>(v);
    out.open.input = raw.path;
    out.json = raw.json;
    out.tensors = raw.tensors;
    out.gguf_hash = raw.gguf_hash;
    out.dequantized = raw.dequantized;
    out.other = raw.other;
    out.exact_names = raw.exact_names;
    auto limits = limits_of(raw);
    if (!limits) {
      out.text = limits.error().message;
      return out;
    }
    out.open.limits = *limits;
    out.kind = CommandLine::Kind::run;
    if (v >= 2 && v <= 4) {
      auto request = request_of(out.verb, raw);
      if (!request && out.verb == Verb::forget && request.error().code == ErrorCode::invalid_argument) {
        out.kind = CommandLine::Kind::usage_error;  // a scheme setting it lacks: misuse
        out.text = request.error().message;
        return out;
      }
      if (!request) {  // well-formed but contradictory: an error of the run, not of usage
        out.kind = CommandLine::Kind::error;
        out.error = std::move(request).error();
        return out;
      }
      out.convert = std::move(request).value();
    }
  }
  return out;
}

std::string command_line_json(const CommandLine& c) {
  static constexpr const char* kKinds[] = {"run", "help", "version", "usage_error", "error"};
  JsonWriter w;
  w.begin_object().key("kind").value(kKinds[static_cast<int>(c.kind)]).key("text").value(c.text);
  if (c.kind == CommandLine::Kind::error) {
    w.key("code").value(error_code_name(c.error.code)).key("message").value(c.error.message);
  }
  if (c.kind == CommandLine::Kind::run) {
    w.key("verb").value(verb_name(c.verb)).key("input").value(c.open.input).key("json").value(c.json);
    w.key("limits").raw(limits_json(c.open.limits));
    if (c.verb == Verb::remember || c.verb == Verb::convert || c.verb == Verb::forget) w.key("request").raw(convert_request_json(c.convert));
    if (c.verb == Verb::stats) {
      w.key("tensors").begin_array();
      for (const auto& t : c.tensors) w.value(t);
      w.end_array();
    }
    if (c.verb == Verb::hash) w.key("ggufHash").value(c.gguf_hash).key("dequantized").value(c.dequantized);
    if (c.verb == Verb::diff) w.key("other").value(c.other).key("exactNames").value(c.exact_names);
  }
  return w.end_object().take();
}

std::string usage_error_text(const std::string& message) {
  return "amn: usage error: " + message + "\nRun 'amn --help' for usage.\n";
}

std::string version_text(std::string_view kernels) {
  return std::string("amn ") + AMN_VERSION + " (kernels: " + std::string(kernels) + ")\n";
}

}  // namespace amn
