#include "session/request.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

#include <simdjson.h>

#include "core/ggml_type.h"
#include "core/json.h"
#include "formats/gguf/kv_input.h"
#include "schemes/forget_mlx.h"

namespace amn {
namespace {

using namespace std::string_view_literals;

constexpr std::array kFloatTargets = {"bf16"sv, "f16"sv, "f32"sv};
constexpr std::array kOutputFormats = {"safetensors"sv, "gguf"sv};
constexpr std::array kShardChoices = {"1"sv, "input"sv};
constexpr std::array<std::string_view, 0> kAny = {};

// One row per option of every verb: the help texts of both CLIs and the names in every
// message come from here.
const std::array<OptionRow, 47> kOptions = {{
    {OptionId::output, "output", "-o,--output", "OUT",
     "output file, or folder for a sharded output (default: see 'Output names' below)", kAny},
    {OptionId::to, "to", "--to", "DTYPE",
     "target dtype (default: none, lossless: every tensor keeps its dtype, quantized weights take their natural one)",
     kFloatTargets},
    {OptionId::format, "to", "--to", "FORMAT", "output format", kOutputFormats},
    {OptionId::dtype, "dtype", "--dtype", "DTYPE", "cast floating tensors to this dtype (default: keep)",
     kFloatTargets},
    {OptionId::cast_all, "castAll", "--cast-all", "",
     "quantized models: cast the unquantized tensors (norms, embeddings) to the target dtype as well "
     "(without one: to the quantized weights' natural dtype)", kAny},
    {OptionId::shards, "shards", "--shards", "N",
     "1: one file; input: the input's shard boundaries (default for a sharded input)", kShardChoices},
    {OptionId::max_shard_size, "maxShardSize", "--max-shard-size", "SIZE",
     "write a folder of shards of at most this size (5GB, 500MiB, bytes)", kAny},
    {OptionId::gguf_kv, "ggufKv", "--gguf-kv", "KV",
     "GGUF output: set a KV, key=value or key:TYPE=value (repeatable)", kAny},
    {OptionId::gguf_metadata, "ggufMetadata", "--gguf-metadata", "FILE",
     "GGUF output: KVs from a JSON file ({key: value} or {key: {type, value}})", kAny},
    {OptionId::force, "force", "--force", "", "replace an existing output file or folder", kAny},
    {OptionId::no_sync, "sync", "--no-sync", "",
     "scratch outputs: skip the fsyncs (still written to a temporary name and renamed into place)", kAny},
    {OptionId::threads, "threads", "--threads", "N",
     "pieces encoded at once, each on a thread of its own; the output's bytes are the same for any N (default: "
     "every core; the npm package and the page run one at a time: their WASM has no threads)", kAny},
    {OptionId::quiet, "quiet", "-q,--quiet", "", "print nothing on success (no progress bar either)", kAny},
    {OptionId::json, "json", "--json", "", "print the model-info JSON document (docs/json-schema.md)", kAny},
    {OptionId::max_single_alloc, "maxSingleAlloc", "--max-single-alloc", "BYTES",
     "limit: bytes of one header-derived allocation (default 1 GiB)", kAny},
    {OptionId::max_total_bytes, "maxTotalBytes", "--max-total-bytes", "BYTES",
     "limit: bytes of all header-derived allocations together (default 4 GiB)", kAny},
    {OptionId::max_item_count, "maxItemCount", "--max-item-count", "N",
     "limit: tensors, keys, array items per header (default 1,000,000)", kAny},
    {OptionId::max_decompression_ratio, "maxDecompressionRatio", "--max-decompression-ratio", "RATIO",
     "limit: inflated / deflated size of a ZIP entry (default 1000)", kAny},
    {OptionId::scheme, "scheme", "--scheme", "SCHEME", "what to quantize to (see 'Schemes' below)", kAny},
    {OptionId::blocksize, "blocksize", "--blocksize", "N",
     "nf4 / fp4: elements per absmax block, a power of two from 32 to 4096 (default 64)", kAny},
    {OptionId::double_quant, "doubleQuant", "--double-quant", "",
     "nf4 / fp4: quantize the absmax too (bitsandbytes' compress_statistics)", kAny},
    {OptionId::torch_threads, "torchThreads", "--torch-threads", "N",
     "nf4 / fp4 --double-quant: torch's thread count in the run to match (the absmax mean's last bits depend on it "
     "from 32768 blocks on; default 1)", kAny},
    {OptionId::bits, "bits", "--bits", "N", "mlx: bits per weight, 2, 3, 4, 5, 6 or 8 (default 4)", kAny},
    {OptionId::group_size, "groupSize", "--group-size", "N",
     "mlx: weights per scale and bias, 32, 64 or 128 (default 64)", kAny},
    {OptionId::mode, "mode", "--mode", "MODE",
     "mlx: mx.quantize's mode; mxfp4 (4 bits, group 32), nvfp4 (4 bits, group 16) and mxfp8 (8 bits, group 32) "
     "take only their own bits and group size (default affine)", kMlxModes},
    {OptionId::skip, "skip", "--skip", "GLOB", "keep tensors whose names match as stored (repeatable)", kAny},
    {OptionId::only, "only", "--only", "GLOB",
     "quantize exactly the tensors whose names match, instead of the producer's choice (repeatable)", kAny},
    {OptionId::strict, "strict", "--strict", "",
     "fail when a chosen tensor cannot be quantized, instead of keeping it with a warning", kAny},
    {OptionId::like, "like", "--like", "REF",
     "take the scheme, its settings and the quantized weights from the quantized model REF (a GGUF REF, "
     "with --to gguf: each tensor's ggml type in REF)", kAny},
    {OptionId::reuse_scales, "reuseScales", "--reuse-scales", "",
     "with --like: reuse REF's scales too (a GGUF REF's block scales), so forgetting what remember made of REF "
     "gives REF's bytes", kAny},
    {OptionId::pure, "pure", "--pure", "",
     "--to gguf: every tensor llama-quantize would quantize gets the one type, as llama-quantize --pure "
     "(without it a llama-quantize file type such as Q4_K_M picks a type per tensor)", kAny},
    {OptionId::output_tensor_type, "outputTensorType", "--output-tensor-type", "TYPE",
     "--to gguf: the ggml type of output.weight, as llama-quantize's option", kAny},
    {OptionId::token_embedding_type, "tokenEmbeddingType", "--token-embedding-type", "TYPE",
     "--to gguf: the ggml type of token_embd.weight, as llama-quantize's option", kAny},
    {OptionId::leave_output_tensor, "leaveOutputTensor", "--leave-output-tensor", "",
     "--to gguf: keep output.weight as stored, as llama-quantize's option", kAny},
    {OptionId::tensor_type, "tensorType", "--tensor-type", "NAME=TYPE",
     "--to gguf: the ggml type TYPE for the tensors whose names match the regular expression NAME (repeatable; "
     "the first that matches wins over the file type's choice), as llama-quantize's option", kAny},
    {OptionId::tensor_type_file, "tensorTypeFile", "--tensor-type-file", "FILE",
     "--to gguf: --tensor-type's NAME=TYPE entries read from FILE, separated by spaces or newlines (after the "
     "--tensor-type options), as llama-quantize's option", kAny},
    {OptionId::gguf_hash, "ggufHash", "--gguf-hash", "",
     "print llama.cpp gguf-hash's lines (its --all --uuid: xxh64, sha1, sha256 per tensor and model, uuid)", kAny},
    {OptionId::dequantized, "dequantized", "--dequantized", "",
     "hash the remembered values instead of the stored bytes: each tensor as F32 (a quantized weight "
     "dequantized, as amn stats reads it; integers as stored), little-endian", kAny},
    {OptionId::split_max_size, "splitMaxSize", "--split-max-size", "SIZE",
     "--to gguf: a folder of split files of at most this size of tensors each, as gguf-split (2G, 500M, bytes)", kAny},
    {OptionId::split_max_tensors, "splitMaxTensors", "--split-max-tensors", "N",
     "--to gguf: a folder of split files of at most N tensors each, as gguf-split", kAny},
    {OptionId::keep_split, "keepSplit", "--keep-split", "",
     "--to gguf: a split input gives a folder of split files, each holding the tensors of its input file, as "
     "llama-quantize --keep-split", kAny},
    {OptionId::prune_layers, "pruneLayers", "--prune-layers", "L0,L1,...",
     "--to gguf: leave out these layers (blk.N), renumber the later ones and set block_count, as llama-quantize's option",
     kAny},
    {OptionId::imatrix, "imatrix", "--imatrix", "FILE",
     "--to gguf: llama.cpp's importance matrix (llama-imatrix's GGUF or legacy .dat), as llama-quantize's option; "
     "IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M, IQ3_XXS and Q2_K_S need one", kAny},
    {OptionId::allow_requantize, "allowRequantize", "--allow-requantize", "",
     "--to gguf: quantize tensors that are already quantized (through F32), as llama-quantize's option", kAny},
    {OptionId::include_weights, "includeWeights", "--include-weights", "NAME",
     "with --imatrix: use the matrix only for the tensors whose names contain NAME (repeatable), as llama-quantize's option", kAny},
    {OptionId::exclude_weights, "excludeWeights", "--exclude-weights", "NAME",
     "with --imatrix: do not use the matrix for the tensors whose names contain NAME (repeatable), as llama-quantize's option", kAny},
    {OptionId::exact_names, "exactNames", "--exact-names", "",
     "match tensors by their names only: no GGUF <-> Hugging Face renaming, no q / k rows put back in order", kAny},
}};

Error bad(std::string message) { return make_error(ErrorCode::invalid_argument, std::move(message)); }

// The options that take a list of names (one string is a list of one), by request key.
struct NameList {
  OptionId id;
  std::vector<std::string> ConvertRequest::*field;
};
constexpr NameList kNameLists[] = {
    {OptionId::skip, &ConvertRequest::skip},
    {OptionId::only, &ConvertRequest::only},
    {OptionId::include_weights, &ConvertRequest::include_weights},
    {OptionId::exclude_weights, &ConvertRequest::exclude_weights},
    {OptionId::tensor_type, &ConvertRequest::tensor_types},
};
const NameList* name_list(std::string_view key) {
  for (const NameList& list : kNameLists) {
    if (option_row(list.id).api_key == key) return &list;
  }
  return nullptr;
}

// The long flag of a CLI11 spelling: "-o,--output" -> "--output".
std::string_view long_flag(std::string_view flags) {
  const auto comma = flags.rfind(',');
  return comma == std::string_view::npos ? flags : flags.substr(comma + 1);
}

std::string choices_text(const OptionRow& row) {
  std::string out;
  for (size_t i = 0; i < row.choices.size(); ++i) {
    out += i == 0 ? "" : (i + 1 == row.choices.size() ? " or " : ", ");
    out += row.choices[i];
  }
  return out;
}

// Positive sizes as JSON numbers: integral, at most 2^53 (what a double holds exactly).
Result<uint64_t> positive_integer(simdjson::dom::element v, OptionId id, Surface surface) {
  double d = 0;
  if (v.get_double().get(d) || !(d >= 1) || d > 9007199254740992.0 || std::floor(d) != d) {
    return bad(option_name(id, surface) + " must be a positive whole number");
  }
  return static_cast<uint64_t>(d);
}

}  // namespace

std::string_view verb_name(Verb verb) {
  switch (verb) {
    case Verb::parse: return "parse";
    case Verb::inspect: return "inspect";
    case Verb::remember: return "remember";
    case Verb::convert: return "convert";
    case Verb::forget: return "forget";
    case Verb::stats: return "stats";
    case Verb::hash: return "hash";
    case Verb::diff: return "diff";
  }
  return "?";
}

std::span<const OptionRow> option_rows() { return kOptions; }

const OptionRow& option_row(OptionId id) {
  for (const auto& row : kOptions) {
    if (row.id == id) return row;
  }
  return kOptions[0];
}

std::string option_name(OptionId id, Surface surface) {
  const OptionRow& row = option_row(id);
  return std::string(surface == Surface::cli ? long_flag(row.flags) : row.api_key);
}

Result<DType> float_target(std::string_view name, OptionId option, Surface surface) {
  auto t = float_target_from_name(name);
  if (!t) {
    return bad(option_name(option, surface) + ": unknown dtype '" + std::string(name) + "' (" +
               choices_text(option_row(option)) + ")");
  }
  return *t;
}

Result<ConvertOptions> convert_options(const ConvertRequest& request) {
  ConvertOptions options;
  options.to = request.to;
  options.dtype = request.dtype;
  options.cast_all = request.cast_all;
  if (!request.gguf_metadata.empty()) {
    AMN_ASSIGN(auto kv, parse_gguf_kv_json(request.gguf_metadata));
    merge_gguf_kv(options.gguf_kv, std::move(kv));
  }
  for (const auto& arg : request.gguf_kv) {
    AMN_ASSIGN(auto kv, parse_gguf_kv_arg(arg));
    merge_gguf_kv(options.gguf_kv, {std::move(kv)});
  }
  return options;
}

Status check_shard_request(const ConvertRequest& r, Surface surface) {
  if (r.max_shard_bytes > 0 && r.shards == ShardMode::one) {
    return bad(option_name(OptionId::max_shard_size, surface) + " and " + option_name(OptionId::shards, surface) +
               " 1 contradict each other");
  }
  if (r.to == OutputFormat::gguf && (r.max_shard_bytes > 0 || r.shards == ShardMode::input)) {
    return make_error(ErrorCode::unsupported, "sharded output is written as safetensors only (GGUF output is split with " +
                                                  option_name(OptionId::split_max_size, surface) + " or " +
                                                  option_name(OptionId::split_max_tensors, surface) + ")");
  }
  if (r.split_max_bytes > 0 && r.split_max_tensors > 0) {  // gguf-split refuses both too
    return bad(option_name(OptionId::split_max_size, surface) + " and " +
               option_name(OptionId::split_max_tensors, surface) + " contradict each other");
  }
  if (r.keep_split && (r.split_max_bytes > 0 || r.split_max_tensors > 0)) {
    const OptionId given = r.split_max_bytes > 0 ? OptionId::split_max_size : OptionId::split_max_tensors;
    return bad(option_name(OptionId::keep_split, surface) + " and " + option_name(given, surface) + " contradict each other");
  }
  if (r.keep_split && r.to != OutputFormat::gguf) {
    return bad(option_name(OptionId::keep_split, surface) + " splits GGUF output (" + option_name(OptionId::format, surface) +
               " gguf); safetensors output keeps the input's shards by default");
  }
  if ((r.split_max_bytes > 0 || r.split_max_tensors > 0) && r.to != OutputFormat::gguf) {
    const OptionId given = r.split_max_bytes > 0 ? OptionId::split_max_size : OptionId::split_max_tensors;
    return bad(option_name(given, surface) + " splits GGUF output (" + option_name(OptionId::format, surface) +
               " gguf); safetensors shards: " + option_name(OptionId::max_shard_size, surface));
  }
  return {};
}

Result<ConvertRequest> convert_request_from_json(std::string_view json, Verb verb, Surface surface) {
  ConvertRequest r;
  r.verb = verb;
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
  if (parser.parse(json.data(), json.size()).get_object().get(obj)) return bad("options must be a JSON object");
  for (auto kv : obj) {
    if (kv.value.is_null()) continue;
    const std::string_view key = kv.key;
    auto as_bool = [&](OptionId id, bool& out) -> Status {
      if (kv.value.get_bool().get(out)) return bad(option_name(id, surface) + " must be true or false");
      return {};
    };
    std::string_view text;
    if (key == "to") {
      if (kv.value.get_string().get(text) || (text != "safetensors" && text != "gguf")) {
        return make_error(ErrorCode::unsupported, option_name(OptionId::format, surface) + ": cannot write '" +
                                                      std::string(text) + "' (" +
                                                      choices_text(option_row(OptionId::format)) + ")");
      }
      r.to = text == "gguf" ? OutputFormat::gguf : OutputFormat::safetensors;
    } else if (key == "dtype") {
      const OptionId id = verb == Verb::remember ? OptionId::to : OptionId::dtype;
      if (kv.value.get_string().get(text)) return bad(option_name(id, surface) + " must be a string");
      if (text.empty() || text == "keep") continue;
      AMN_ASSIGN(r.dtype, float_target(text, id, surface));
    } else if (key == "castAll") {
      AMN_TRY(as_bool(OptionId::cast_all, r.cast_all));
    } else if (key == "shards") {
      int64_t one = 0;
      if (!kv.value.get_string().get(text) && (text == "input" || text == "1")) {
        r.shards = text == "input" ? ShardMode::input : ShardMode::one;
      } else if (!kv.value.get_int64().get(one) && one == 1) {
        r.shards = ShardMode::one;
      } else {
        return bad(option_name(OptionId::shards, surface) + " must be 'input' or 1");
      }
    } else if (key == "maxShardSize" || key == "splitMaxSize") {
      // A size as text ("5GB"; gguf-split's "2G" for splits) or a number of bytes.
      const bool split = key == "splitMaxSize";
      const OptionId id = split ? OptionId::split_max_size : OptionId::max_shard_size;
      uint64_t& bytes = split ? r.split_max_bytes : r.max_shard_bytes;
      if (!kv.value.get_string().get(text)) {
        AMN_ASSIGN(bytes, split ? parse_split_size(text) : parse_shard_size(text));
      } else {
        auto n = positive_integer(kv.value, id, surface);
        if (!n) return bad(option_name(id, surface) + " must be a size (\"" + (split ? "2G" : "5GB") + "\") or a number of bytes");
        bytes = *n;
      }
    } else if (key == "keepSplit") {
      AMN_TRY(as_bool(OptionId::keep_split, r.keep_split));
    } else if (key == "pruneLayers") {
      // "0,5,7" as llama-quantize takes it, or the numbers themselves.
      simdjson::dom::array items;
      if (!kv.value.get_string().get(text)) {
        AMN_ASSIGN(r.prune_layers, parse_prune_layers(text, surface));
      } else if (!kv.value.get_array().get(items)) {
        std::string list;
        for (auto item : items) {
          double d = 0;
          if (item.get_double().get(d) || !(d >= 0) || d > 4294967295.0 || std::floor(d) != d) {
            return bad(option_name(OptionId::prune_layers, surface) + " must be layer numbers (whole numbers from 0)");
          }
          list += (list.empty() ? "" : ",") + std::to_string(static_cast<uint64_t>(d));
        }
        if (!list.empty()) {  // []: none
          AMN_ASSIGN(r.prune_layers, parse_prune_layers(list, surface));
        }
      } else {
        return bad(option_name(OptionId::prune_layers, surface) + " must be an array of layer numbers or \"0,5,7\"");
      }
    } else if (key == "splitMaxTensors") {
      AMN_ASSIGN(r.split_max_tensors, positive_integer(kv.value, OptionId::split_max_tensors, surface));
    } else if (key == "ggufKv") {
      simdjson::dom::array args;
      const std::string msg = option_name(OptionId::gguf_kv, surface) + " must be an array of \"key=value\" strings";
      if (kv.value.get_array().get(args)) return bad(msg);
      for (auto a : args) {
        if (a.get_string().get(text)) return bad(msg);
        r.gguf_kv.emplace_back(text);
      }
    } else if (key == "ggufMetadata") {
      // JSON text (a file's contents), or the object itself.
      if (kv.value.get_string().get(text)) r.gguf_metadata = simdjson::to_string(kv.value);
      else r.gguf_metadata = std::string(text);
    } else if (key == "verb") {
      if (kv.value.get_string().get(text)) return bad("verb must be a string");
      if (text == "remember") r.verb = Verb::remember;
      if (text == "forget") r.verb = Verb::forget;
    } else if (key == "tensorTypeFile") {
      if (kv.value.get_string().get(text)) return bad(option_name(OptionId::tensor_type_file, surface) + " must be a string");
      r.tensor_type_file = std::string(text);
    } else if (key == "ggufMetadataFile") {
      if (kv.value.get_string().get(text)) return bad(option_name(OptionId::gguf_metadata, surface) + " must be a string");
      r.gguf_metadata_file = std::string(text);
    } else if (key == "output") {
      if (kv.value.get_string().get(text)) return bad(option_name(OptionId::output, surface) + " must be a string");
      r.output = std::string(text);
    } else if (key == "force") {
      AMN_TRY(as_bool(OptionId::force, r.force));
    } else if (key == "sync") {
      AMN_TRY(as_bool(OptionId::no_sync, r.sync));
    } else if (key == "threads") {
      AMN_ASSIGN(r.threads, positive_integer(kv.value, OptionId::threads, surface));
    } else if (key == "quiet") {
      AMN_TRY(as_bool(OptionId::quiet, r.quiet));
    } else if (key == "scheme") {
      if (kv.value.get_string().get(text)) return bad(option_name(OptionId::scheme, surface) + " must be a string");
      r.scheme = std::string(text);
    } else if (key == "blocksize") {
      AMN_ASSIGN(r.blocksize, positive_integer(kv.value, OptionId::blocksize, surface));
    } else if (key == "bits") {
      AMN_ASSIGN(r.bits, positive_integer(kv.value, OptionId::bits, surface));
    } else if (key == "groupSize") {
      AMN_ASSIGN(r.group_size, positive_integer(kv.value, OptionId::group_size, surface));
    } else if (key == "mode") {
      if (kv.value.get_string().get(text)) return bad(option_name(OptionId::mode, surface) + " must be a string");
      r.mode = std::string(text);
    } else if (key == "torchThreads") {
      AMN_ASSIGN(r.torch_threads, positive_integer(kv.value, OptionId::torch_threads, surface));
    } else if (key == "doubleQuant") {
      AMN_TRY(as_bool(OptionId::double_quant, r.double_quant));
    } else if (key == "strict") {
      AMN_TRY(as_bool(OptionId::strict, r.strict));
    } else if (key == "pure") {
      AMN_TRY(as_bool(OptionId::pure, r.pure));
    } else if (key == "leaveOutputTensor") {
      AMN_TRY(as_bool(OptionId::leave_output_tensor, r.leave_output_tensor));
    } else if (key == "outputTensorType" || key == "tokenEmbeddingType") {
      const OptionId id = key == "outputTensorType" ? OptionId::output_tensor_type : OptionId::token_embedding_type;
      if (kv.value.get_string().get(text)) return bad(option_name(id, surface) + " must be a ggml type name");
      (id == OptionId::output_tensor_type ? r.output_tensor_type : r.token_embedding_type) = std::string(text);
    } else if (key == "imatrix") {
      if (kv.value.get_string().get(text) || text.empty()) {
        return bad(option_name(OptionId::imatrix, surface) + " must be the importance matrix file's name");
      }
      r.imatrix = std::string(text);
    } else if (key == "allowRequantize") {
      AMN_TRY(as_bool(OptionId::allow_requantize, r.allow_requantize));
    } else if (key == "reuseScales") {
      AMN_TRY(as_bool(OptionId::reuse_scales, r.reuse_scales));
    } else if (key == "like") {
      if (kv.value.get_string().get(text)) return bad(option_name(OptionId::like, surface) + " must be a string");
      r.like = std::string(text);
    } else if (const NameList* list = name_list(key)) {
      auto& globs = r.*(list->field);
      simdjson::dom::array items;
      const std::string msg = option_name(list->id, surface) + " must be an array of name patterns";
      if (!kv.value.get_string().get(text)) {
        globs.emplace_back(text);
        continue;
      }
      if (kv.value.get_array().get(items)) return bad(msg);
      for (auto a : items) {
        if (a.get_string().get(text)) return bad(msg);
        globs.emplace_back(text);
      }
    } else {
      return bad("unknown option '" + std::string(key) + "'");
    }
  }
  AMN_TRY(check_shard_request(r, surface));
  return r;
}

std::string convert_request_json(const ConvertRequest& r) {
  JsonWriter w;
  w.begin_object();
  w.key("verb").value(verb_name(r.verb));
  w.key("to").value(r.to == OutputFormat::gguf ? "gguf" : "safetensors");
  w.key("dtype");
  if (r.dtype) {
    std::string d(dtype_name(*r.dtype));
    for (auto& c : d) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    w.value(d);
  } else {
    w.null();
  }
  w.key("castAll").value(r.cast_all);
  w.key("shards");
  if (r.shards == ShardMode::input) w.value("input");
  else if (r.shards == ShardMode::one) w.value(1);
  else w.null();
  w.key("maxShardSize");
  if (r.max_shard_bytes) w.value(r.max_shard_bytes);
  else w.null();
  w.key("splitMaxSize");
  if (r.split_max_bytes) w.value(r.split_max_bytes);
  else w.null();
  w.key("splitMaxTensors");
  if (r.split_max_tensors) w.value(r.split_max_tensors);
  else w.null();
  w.key("keepSplit").value(r.keep_split);
  w.key("ggufKv").strings(r.gguf_kv);
  w.key("ggufMetadata").string_or_null(r.gguf_metadata);
  w.key("ggufMetadataFile").string_or_null(r.gguf_metadata_file);
  w.key("output").string_or_null(r.output);
  w.key("force").value(r.force);
  w.key("sync").value(r.sync);
  w.key("quiet").value(r.quiet);
  w.key("threads");
  if (r.threads) w.value(r.threads);
  else w.null();
  if (r.verb == Verb::forget) {
    w.key("scheme").value(r.scheme);
    w.key("blocksize");
    if (r.blocksize) w.value(r.blocksize);
    else w.null();
    w.key("bits");
    if (r.bits) w.value(r.bits);
    else w.null();
    w.key("groupSize");
    if (r.group_size) w.value(r.group_size);
    else w.null();
    w.key("mode").string_or_null(r.mode);
    w.key("torchThreads");
    if (r.torch_threads) w.value(r.torch_threads);
    else w.null();
    w.key("doubleQuant").value(r.double_quant).key("skip").strings(r.skip).key("only").strings(r.only);
    w.key("strict").value(r.strict).key("like").string_or_null(r.like).key("reuseScales").value(r.reuse_scales);
    w.key("pure").value(r.pure).key("leaveOutputTensor").value(r.leave_output_tensor);
    w.key("outputTensorType").string_or_null(r.output_tensor_type);
    w.key("tokenEmbeddingType").string_or_null(r.token_embedding_type);
    w.key("imatrix").string_or_null(r.imatrix).key("allowRequantize").value(r.allow_requantize);
    w.key("includeWeights").strings(r.include_weights).key("excludeWeights").strings(r.exclude_weights);
    w.key("tensorType").strings(r.tensor_types).key("tensorTypeFile").string_or_null(r.tensor_type_file);
    w.key("pruneLayers");
    if (r.prune_layers.empty()) {
      w.null();
    } else {
      w.begin_array();
      for (uint32_t layer : r.prune_layers) w.value(layer);
      w.end_array();
    }
  }
  w.end_object();
  return w.take();
}

Error option_spelled(Error e, Surface surface) {
  for (OptionId id : {OptionId::output_tensor_type, OptionId::token_embedding_type, OptionId::imatrix, OptionId::allow_requantize,
                      OptionId::torch_threads, OptionId::tensor_type, OptionId::prune_layers}) {
    const std::string key(option_row(id).api_key);
    if (e.message.rfind(key + ":", 0) == 0) e.message = option_name(id, surface) + e.message.substr(key.size());
  }
  return e;
}

Status add_tensor_type_file(ConvertRequest& r, std::string_view text, Surface surface) {
  if (text.size() > kMaxTensorTypeFileBytes) {
    return make_error(ErrorCode::limit, option_name(OptionId::tensor_type_file, surface) + ": the file is over " +
                                            std::to_string(kMaxTensorTypeFileBytes >> 20) + " MiB");
  }
  // `file >> arg`: words between the C locale's white space.
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  for (size_t i = 0; i < text.size();) {
    while (i < text.size() && space(text[i])) ++i;
    const size_t start = i;
    while (i < text.size() && !space(text[i])) ++i;
    if (i > start) r.tensor_types.emplace_back(text.substr(start, i - start));
  }
  return {};
}

Result<std::vector<uint32_t>> parse_prune_layers(std::string_view text, Surface surface) {
  // llama-quantize's parse_layer_prune, but a word that is not a whole number is refused
  // (std::stoi would read "3x" as 3).
  std::vector<uint32_t> layers;
  size_t start = 0;
  while (true) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view word = text.substr(start, comma - start);
    uint64_t n = 0;
    bool ok = !word.empty() && word.size() <= 10;
    for (char c : word) ok = ok && c >= '0' && c <= '9' && ((n = n * 10 + static_cast<uint64_t>(c - '0')), true);
    if (!ok || n > INT32_MAX) {
      return bad(option_name(OptionId::prune_layers, surface) + ": invalid layer id '" + std::string(word) +
                 "' (a comma-separated list of layer numbers, e.g. 0,5,7)");
    }
    layers.push_back(static_cast<uint32_t>(n));
    if (comma == text.size()) break;
    start = comma + 1;
  }
  std::sort(layers.begin(), layers.end());
  layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
  return layers;
}

Result<ForgetSettings> forget_settings(const ConvertRequest& r, Surface surface) {
  if (r.reuse_scales && r.like.empty()) {
    return bad(option_name(OptionId::reuse_scales, surface) + " needs " + option_name(OptionId::like, surface));
  }
  ForgetSettings s;
  s.scheme = r.scheme;
  for (auto& c : s.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  s.blocksize = r.blocksize;
  s.double_quant = r.double_quant;
  // Beyond any machine's core count: torch would run it, and the sums follow it.
  s.torch_threads = r.torch_threads ? static_cast<uint32_t>(std::min<uint64_t>(r.torch_threads, 1u << 16)) : 1;
  // Beyond any scheme's range (mlx's largest is 8 bits, 128 a group): the scheme says so.
  s.bits = static_cast<uint32_t>(std::min<uint64_t>(r.bits, 1000));
  s.group_size = std::min<uint64_t>(r.group_size, 1u << 30);
  s.mode = r.mode;
  s.gguf = r.to == OutputFormat::gguf;
  s.pure = r.pure;
  s.output_tensor_type = r.output_tensor_type;
  s.token_embedding_type = r.token_embedding_type;
  s.leave_output_tensor = r.leave_output_tensor;
  s.tensor_types = r.tensor_types;
  s.imatrix_file = r.imatrix;
  s.allow_requantize = r.allow_requantize;
  for (auto [given, id] : {std::pair{r.pure, OptionId::pure}, std::pair{!r.imatrix.empty(), OptionId::imatrix},
                           std::pair{r.allow_requantize, OptionId::allow_requantize}, std::pair{!r.output_tensor_type.empty(), OptionId::output_tensor_type},
                           std::pair{!r.token_embedding_type.empty(), OptionId::token_embedding_type},
                           std::pair{r.leave_output_tensor, OptionId::leave_output_tensor},
                           std::pair{!r.tensor_types.empty(), OptionId::tensor_type},
                           std::pair{!r.tensor_type_file.empty(), OptionId::tensor_type_file},
                           std::pair{!r.prune_layers.empty(), OptionId::prune_layers}}) {
    if (given && !s.gguf) {
      return bad(option_name(id, surface) + " needs GGUF output (" + option_name(OptionId::format, surface) + " gguf)");
    }
  }
  // llama-quantize's usage() for both; without a matrix they would silently do nothing.
  if (!r.include_weights.empty() || !r.exclude_weights.empty()) {
    const OptionId given = r.include_weights.empty() ? OptionId::exclude_weights : OptionId::include_weights;
    if (!r.include_weights.empty() && !r.exclude_weights.empty()) {
      return bad(option_name(OptionId::include_weights, surface) + " and " + option_name(OptionId::exclude_weights, surface) +
                 " cannot be used together (as in llama-quantize)");
    }
    if (r.imatrix.empty()) return bad(option_name(given, surface) + " needs " + option_name(OptionId::imatrix, surface));
  }
  if (r.leave_output_tensor && !r.output_tensor_type.empty()) {
    return bad(option_name(OptionId::leave_output_tensor, surface) + " and " + option_name(OptionId::output_tensor_type, surface) +
               " contradict each other");
  }
  // A ggml type name that is no safetensors scheme's (mxfp4 and nvfp4 are both).
  const auto rows = forget_scheme_rows();
  const bool safetensors_scheme =
      std::any_of(rows.begin(), rows.end(), [&](const ForgetSchemeRow& row) { return row.name == s.scheme; });
  if (!s.gguf && ggml_type_from_name(r.scheme) && !safetensors_scheme) {
    return bad("scheme '" + r.scheme + "' is a GGUF type: write GGUF (" + option_name(OptionId::format, surface) +
               " gguf)");
  }
  if (!r.like.empty()) {  // the settings are REF's (schemes/forget_like.h checks the scheme)
    if (r.blocksize || r.double_quant || r.torch_threads || r.bits || r.group_size || !r.mode.empty()) {
      const OptionId given = r.blocksize ? OptionId::blocksize
                             : r.double_quant ? OptionId::double_quant
                             : r.torch_threads ? OptionId::torch_threads
                             : r.bits         ? OptionId::bits
                             : r.group_size   ? OptionId::group_size
                                              : OptionId::mode;
      return bad(option_name(OptionId::like, surface) + " takes the settings from the reference: leave out " +
                 option_name(given, surface));
    }
    return s;
  }
  if (r.scheme.empty()) return bad(option_name(OptionId::scheme, surface) + " is required");
  auto made = make_forgetter(s);
  if (!made) {
    Error e = std::move(made).error();
    // The scheme names a bad setting by its request key; say it as the surface spells it.
    if (e.message.rfind("blocksize ", 0) == 0) {
      e.message = option_name(OptionId::blocksize, surface) + e.message.substr(9);
    } else if (e.message.rfind("bits", 0) == 0) {
      e.message = option_name(OptionId::bits, surface) + e.message.substr(4);
    } else if (e.message.rfind("group size", 0) == 0) {
      e.message = option_name(OptionId::group_size, surface) + e.message.substr(10);
    } else if (e.message.rfind("mode", 0) == 0) {
      e.message = option_name(OptionId::mode, surface) + e.message.substr(4);
    }
    return option_spelled(std::move(e), surface);
  }
  return s;
}

Result<ParseLimits> limits_from_json(std::string_view json, Surface surface) {
  ParseLimits limits;
  // No limit given (nearly every open, and every command line without a limit option):
  // the defaults, with no JSON parser. In WASM simdjson's parser is compiled on its first
  // call, ~3 ms of a cold `amn inspect` of a GGUF, which parses no other JSON.
  if (json == "{}") return limits;
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
  if (parser.parse(json.data(), json.size()).get_object().get(obj)) return bad("limits must be an object of positive numbers");
  for (auto kv : obj) {
    const std::string_view key = kv.key;
    const OptionRow* row = nullptr;
    for (const auto& r : kOptions) {
      if (r.id < OptionId::max_single_alloc) continue;
      // the API's camelCase, or ParseLimits' own snake_case ("max_single_alloc")
      std::string snake(long_flag(r.flags).substr(2));
      for (auto& c : snake) c = c == '-' ? '_' : c;
      if (key == r.api_key || key == snake) row = &r;
    }
    if (!row) return bad("unknown limit '" + std::string(key) + "'");
    double d = 0;
    if (kv.value.get_double().get(d) || !(d > 0)) return bad("limit " + option_name(row->id, surface) + " must be a positive number");
    switch (row->id) {
      case OptionId::max_single_alloc: limits.max_single_alloc = static_cast<uint64_t>(std::min(d, 1.8e19)); break;
      case OptionId::max_total_bytes: limits.max_total_bytes = static_cast<uint64_t>(std::min(d, 1.8e19)); break;
      case OptionId::max_item_count: limits.max_item_count = static_cast<uint64_t>(std::min(d, 1.8e19)); break;
      default: limits.max_decompression_ratio = d; break;
    }
  }
  return limits;
}

std::string limits_json(const ParseLimits& limits) {
  const ParseLimits defaults;
  JsonWriter w;
  w.begin_object();
  if (limits.max_single_alloc != defaults.max_single_alloc) w.key("maxSingleAlloc").value(limits.max_single_alloc);
  if (limits.max_total_bytes != defaults.max_total_bytes) w.key("maxTotalBytes").value(limits.max_total_bytes);
  if (limits.max_item_count != defaults.max_item_count) w.key("maxItemCount").value(limits.max_item_count);
  if (!(limits.max_decompression_ratio == defaults.max_decompression_ratio)) {
    w.key("maxDecompressionRatio").value(limits.max_decompression_ratio);
  }
  w.end_object();
  return w.take();
}

}  // namespace amn
