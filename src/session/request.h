// Typed requests: what a surface asks the core to do, parsed once, here. The native CLI
// fills them from argv (session/command_line.h), the Node CLI gets the same from the
// WASM core, and the npm API passes its options object as JSON (request_from_json).
// Every option is one row of kOptions: its API key, its CLI flag, its help; messages
// name options the way the asking surface spells them.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "convert/plan.h"
#include "convert/shard.h"
#include "schemes/forget.h"
#include "core/error.h"
#include "core/limits.h"

namespace amn {

enum class Verb : uint8_t { parse, inspect, remember, convert, forget, stats, hash, diff };
std::string_view verb_name(Verb verb);

// How an option is spelled in a message: `--max-shard-size` on a command line,
// `maxShardSize` in the npm API.
enum class Surface : uint8_t { cli, api };

enum class OptionId : uint8_t {
  output, to, format, dtype, cast_all, shards, max_shard_size, gguf_kv, gguf_metadata, force, no_sync, quiet, json,
  max_single_alloc, max_total_bytes, max_item_count, max_decompression_ratio,
  scheme, blocksize, double_quant, skip, only, strict, like, reuse_scales, pure, bits, group_size,
  output_tensor_type, token_embedding_type, leave_output_tensor, gguf_hash, dequantized, split_max_size,
  split_max_tensors, imatrix, allow_requantize, include_weights, exclude_weights, torch_threads,
  exact_names, threads, mode, tensor_type, tensor_type_file, keep_split, prune_layers,
};

struct OptionRow {
  OptionId id;
  std::string_view api_key;  // the npm API's name (camelCase) and the request JSON's key
  std::string_view flags;    // CLI11 spelling: "-o,--output"
  std::string_view value;    // the value's name in help ("SIZE"), empty for a flag
  std::string_view help;
  std::span<const std::string_view> choices;  // empty: any value
};
std::span<const OptionRow> option_rows();
const OptionRow& option_row(OptionId id);
// "--max-shard-size" or "maxShardSize".
std::string option_name(OptionId id, Surface surface);

// What to open and the limits every later step of the session keeps using.
struct OpenRequest {
  std::string input;  // a path, a folder, an *.index.json, ollama:<model>, or a URL
  ParseLimits limits;
};

enum class ShardMode : uint8_t { automatic, one, input };

struct ConvertRequest {
  Verb verb = Verb::convert;
  OutputFormat to = OutputFormat::safetensors;
  std::optional<DType> dtype;  // nullopt: lossless, stored dtypes kept (quantized weights: their natural dtype)
  bool cast_all = false;
  ShardMode shards = ShardMode::automatic;
  uint64_t max_shard_bytes = 0;  // > 0: a folder of shards of at most this many bytes
  // GGUF output split as gguf-split splits it (convert/shard.h): a folder of
  // <name>-0000k-of-0000N.gguf files; at most one of the two is set.
  uint64_t split_max_bytes = 0, split_max_tensors = 0;
  // GGUF output in the input's split files, as llama-quantize --keep-split: file k holds
  // the tensors of the input's k-th file (a folder, named as a split output; an input of
  // one file gives one file).
  bool keep_split = false;
  std::vector<std::string> gguf_kv;  // "key[:TYPE]=value", later ones winning
  std::string gguf_metadata;         // JSON text: {key: value | {type, value}}
  std::string gguf_metadata_file;    // the CLI's --gguf-metadata path (read by the surface)
  std::string output;                // -o; empty: the default name (session/output.h)
  bool force = false, sync = true, quiet = false;
  // Pieces run at once (convert/execute.h); 0: default_threads(). WASM runs one.
  uint64_t threads = 0;
  // forget (schemes/forget.h): the scheme, its settings, and which tensors.
  std::string scheme;
  uint64_t blocksize = 0;  // 0: the scheme's default
  bool double_quant = false;
  uint64_t torch_threads = 0;  // nf4 / fp4 double quant; 0: the scheme's default (1)
  uint64_t bits = 0, group_size = 0;  // mlx; 0: the scheme's default
  std::string mode;                   // mlx: affine, mxfp4, nvfp4, mxfp8; empty: affine
  std::vector<std::string> skip, only;
  bool strict = false;
  std::string like;           // a reference model: its scheme, settings and weights
  bool reuse_scales = false;  // with like: its scales too
  bool pure = false;          // to gguf: llama-quantize --pure
  // to gguf: llama-quantize's --output-tensor-type, --token-embedding-type (ggml type
  // names; empty: the file type's choice) and --leave-output-tensor.
  std::string output_tensor_type, token_embedding_type;
  bool leave_output_tensor = false;
  // to gguf: llama-quantize's --imatrix FILE (the name as given: the output's
  // quantize.imatrix.file; its bytes reach the session apart from the request) and
  // --allow-requantize.
  std::string imatrix;
  bool allow_requantize = false;
  // to gguf: llama-quantize's --include-weights / --exclude-weights: the matrix's entries
  // whose names contain one of these (substrings, as llama-quantize matches them) are the
  // only ones used / are not used. At most one of the two.
  std::vector<std::string> include_weights, exclude_weights;
  // to gguf: llama-quantize's --tensor-type NAME=TYPE, in the order given (the first match wins).
  std::vector<std::string> tensor_types;
  // to gguf: llama-quantize's --tensor-type-file (the path as given; its text reaches the
  // session apart from the request, and add_tensor_type_file appends its entries).
  std::string tensor_type_file;
  // to gguf: llama-quantize's --prune-layers: the layers (blk.N) left out, the later ones
  // renumbered down and {arch}.block_count set to the layers kept. Sorted, no repeats.
  std::vector<uint32_t> prune_layers;
};

// llama-quantize's --prune-layers list, "0,5,7": whole numbers, sorted and made unique.
Result<std::vector<uint32_t>> parse_prune_layers(std::string_view text, Surface surface);

// A scheme's message that starts with an option's API key ("imatrix: ...") with the key
// as `surface` spells it ("--imatrix: ...").
Error option_spelled(Error e, Surface surface);

// llama-quantize's --tensor-type-file: the file's NAME=TYPE entries, separated by spaces or
// newlines, appended to the request's --tensor-type entries (after them: where both name a
// tensor, --tensor-type wins; llama-quantize keeps the command line's order). A file over
// kMaxTensorTypeFileBytes is refused (limit).
inline constexpr uint64_t kMaxTensorTypeFileBytes = 4u << 20;
Status add_tensor_type_file(ConvertRequest& request, std::string_view text, Surface surface);

// forget: the request's scheme settings; an error names the option as `surface` spells it.
Result<ForgetSettings> forget_settings(const ConvertRequest& request, Surface surface);

// The core's conversion options for a request: GGUF KVs parsed and merged (the metadata
// JSON first, then each key=value, later ones winning).
Result<ConvertOptions> convert_options(const ConvertRequest& request);
// The request's sharding options checked together, after the rest of the request:
// invalid_argument / unsupported naming the options as `surface` spells them.
Status check_shard_request(const ConvertRequest& request, Surface surface);

// The request JSON (camelCase keys, as the npm API names its options): {"to" (the
// format: safetensors | gguf), "dtype",
// "castAll", "shards" ("input" | 1), "maxShardSize" (bytes or "5GB"), "splitMaxSize" (bytes
// or "2G"), "splitMaxTensors", "keepSplit", "ggufKv" [..],
// "ggufMetadata" (text or object), "output", "force", "sync", "quiet", "threads"; forget: "scheme",
// "blocksize", "doubleQuant", "torchThreads", "skip" [globs], "only" [globs], "strict", "pure",
// "outputTensorType", "tokenEmbeddingType", "leaveOutputTensor", "imatrix" (the
// importance matrix file's name), "includeWeights" [..], "excludeWeights" [..], "allowRequantize", "pruneLayers" ([numbers] or "0,5")}. Unknown keys
// are refused; null means "not given".
Result<ConvertRequest> convert_request_from_json(std::string_view json, Verb verb, Surface surface);
std::string convert_request_json(const ConvertRequest& request);

// Limits from JSON: {"maxSingleAlloc": n, ...} (the snake_case keys of ParseLimits are
// accepted too). Every value a positive number.
Result<ParseLimits> limits_from_json(std::string_view json, Surface surface);
// The limits that differ from ParseLimits' defaults, in that JSON ("{}" when none does).
std::string limits_json(const ParseLimits& limits);

// "bf16" | "f16" | "f32" (any case) -> the dtype; else an invalid_argument naming `option`.
Result<DType> float_target(std::string_view name, OptionId option, Surface surface);

}  // namespace amn
