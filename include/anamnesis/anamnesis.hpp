// anamnesis: the C++ library. Reads safetensors (single, sharded), GGUF, NumPy (.npy,
// .npz) and PyTorch (.pt/.pth/.bin) files by their headers, lists their tensors, reads one
// tensor, and converts or dequantizes a model into safetensors or GGUF, bit-exact with the
// producers' own dequantizers. The same core as the `amn` command and the npm package.
//
// Stable surface: this header includes only the standard library, and nothing in it
// exposes the library's internals (a Model holds a pointer to them). No function throws;
// each returns a Result<T> or a Status that holds either its value or an Error.
// Documentation: docs/cpp-api.md.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#if defined(__GNUC__) || defined(__clang__)
#define ANAMNESIS_API __attribute__((visibility("default")))
#else
#define ANAMNESIS_API
#endif

namespace anamnesis {

// A failure. `code` is one of the stable code strings every anamnesis surface reports
// (never renamed): "parse" (the bytes do not follow the format), "unsupported" (valid, but
// not handled), "limit" (a Limits bound or a built-in floor was hit), "io" (a missing file,
// a short read, a full disk), "exists" (refusing to replace an output), "invalid_argument"
// (an option that makes no sense), "not_found" (no tensor of that name), "cancelled" (the
// progress callback returned false), "internal" (a bug), "disallowed_global" (a pickle
// names a global outside the allowlist; never called).
struct Error {
  std::string code;
  std::string message;
  int64_t offset = -1;  // the file offset the problem was found at; -1: none
};

// A value or an Error. Check ok() (or the bool conversion) before value(); value() of a
// failed Result, like error() of a successful one, is a programming error.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return *std::get_if<0>(&v_); }
  const T& value() const& { return *std::get_if<0>(&v_); }
  T&& value() && { return std::move(*std::get_if<0>(&v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return *std::get_if<1>(&v_); }

 private:
  std::variant<T, Error> v_;
};

// Success, or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), failed_(true) {}
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool failed_ = false;
};

// Bounds on what a file's headers may make the library allocate or count (a hostile file
// cannot exceed them). The defaults are the `amn` command's; built-in floors (a 100 MB
// safetensors header, 64 dimensions, 10 M items, ...) hold whatever is passed here. Every
// value must be positive.
struct Limits {
  uint64_t max_single_alloc = uint64_t{1} << 30;  // bytes of one header-derived allocation
  uint64_t max_total_bytes = uint64_t{4} << 30;   // bytes of all of them together
  uint64_t max_item_count = 1'000'000;            // tensors, keys, array items per header
  double max_decompression_ratio = 1000.0;        // inflated / deflated, of a ZIP entry (.npz, .pt)
};

// A tensor as a user counts it. A quantized weight (GPTQ, AWQ, bitsandbytes, FP8, MLX,
// ...) is one entry under its own name, as `amn inspect` lists it, not its parts.
struct TensorInfo {
  std::string name;
  // The stored type ("F32", "BF16", "I64", "Q4_K", ...); for a quantized weight, the
  // dtype its producer's dequantizer returns ("F16", "BF16", "F32").
  std::string dtype;
  std::vector<uint64_t> shape;
  uint64_t parameters = 0;  // elements
  uint64_t bytes = 0;       // as stored (a quantized weight: all its parts together)
  std::string scheme;       // a quantized weight's scheme ("gptq", "awq", "bnb-nf4", ...); else empty
  std::string variant;      // its parameters in words ("4 bits, group 128, ..."); else empty
  std::string error;        // why a quantized weight cannot be read (its parts do not add up); else empty
};

// One tensor's values, little-endian, row-major.
struct Tensor {
  std::string name;
  std::string dtype;  // "F32", "BF16", ...
  std::vector<uint64_t> shape;
  std::vector<uint8_t> data;
};

// How a sharded output is cut.
enum class Shards {
  automatic,  // a sharded safetensors input keeps its shard boundaries, unless `output` names a .safetensors file
  one,        // one file
  input,      // the input's shard boundaries (a folder)
};

struct ConvertOptions {
  std::string to = "safetensors";  // output format: "safetensors" or "gguf"
  // "bf16", "f16" or "f32": cast floating tensors and dequantize quantized weights to it.
  // Empty keeps every dtype (quantized weights: their producer's own dequantized dtype;
  // GGUF block types become F32, ggml's to_float output).
  std::string dtype;
  // Quantized models: cast the unquantized tensors (norms, embeddings) to `dtype` too; with
  // an empty `dtype`, to the quantized weights' natural dtype (invalid_argument when theirs differ).
  bool cast_all = false;
  // A file, or a folder for a sharded output. Empty: the default name beside the input,
  // as `amn convert` names it ("model-bf16.safetensors", or the folder "model-bf16").
  std::string output;
  bool overwrite = false;  // replace an existing output (never an input)
  bool sync = true;        // false: skip the fsyncs (scratch outputs; still renamed into place)
  Shards shards = Shards::automatic;
  uint64_t max_shard_bytes = 0;  // > 0: a folder of shards of at most this many bytes (transformers' rule)
  // GGUF output: a folder of llama.cpp gguf-split files (<folder>-00001-of-0000N.gguf) of
  // at most this many bytes of tensors, or tensors, each (at most one of the two).
  uint64_t split_max_bytes = 0, split_max_tensors = 0;
  std::vector<std::string> gguf_kv;  // GGUF output: "key=value" or "key:TYPE=value", applied in order
  std::string gguf_metadata;         // GGUF output: JSON text, {key: value | {type, value}}, applied first
  // Called as bytes are written, with the bytes done and the total of the whole output;
  // returning false cancels (error "cancelled", nothing left at the target).
  std::function<bool(uint64_t done, uint64_t total)> progress;
};

struct ConvertResult {
  std::string path;                 // the file, or the folder of a sharded output
  bool folder = false;
  std::vector<std::string> files;   // the files written (a folder: shards, then the index)
  uint64_t tensors = 0;
  uint64_t bytes = 0;               // of the output files (a folder: its shards, not the index)
};

// A model opened from local files. Opening reads headers only; tensor data is read (from
// memory-mapped files) when a tensor is read or the model converted. Copies share the
// same open files; a Model may be used from several threads (its reads are serialised).
class ANAMNESIS_API Model {
 public:
  // Opens `path` as `amn` opens it: a model file (.safetensors, .gguf, .npy, .npz, .pt,
  // .pth, .bin), a *.safetensors.index.json, a folder of shards (its index, or every
  // *.safetensors in it), or "ollama:<name>[:tag]" (a model pulled by Ollama). Sibling
  // config files (config.json, quantize_config.json, quant_config.json) are read too.
  // Returns the model. Errors: io (missing or unreadable file, a shard missing), parse,
  // unsupported, limit, invalid_argument (a limit that is not positive).
  static Result<Model> open(const std::string& path, const Limits& limits = {});

  // Returns the container's name: "safetensors", "gguf", "npy", "npz" or "pth".
  std::string format() const;

  // Returns the tensors in storage order, a quantized weight once where its first part is
  // stored (its parts and consumed companions are not listed). Cannot fail.
  std::vector<TensorInfo> tensors() const;

  // Returns the model-info JSON document `amn inspect --json` prints (docs/json-schema.md),
  // every record with its offsets, the logical tensors, config and metadata. Cannot fail.
  std::string info_json() const;

  // Returns the human report `amn inspect` prints (summary, dtypes, tensor table).
  std::string inspect_text() const;

  // Returns the record listing `amn parse` prints (files, every record's byte range).
  std::string parse_text() const;

  // Returns one tensor's values, cast to `to` ("bf16", "f16", "f32") when given and the
  // tensor is floating; a quantized weight's name gives its dequantized values (default:
  // its producer's dtype) and a GGUF block tensor's gives F32. Empty `to` keeps the stored
  // dtype. The whole tensor is returned in memory. Errors: not_found (no such tensor),
  // invalid_argument (an unknown `to`), unsupported (a type that cannot be read or cast),
  // parse, io, limit.
  Result<Tensor> tensor(const std::string& name, const std::string& to = "") const;

  // Writes the model converted as `options` asks, atomically: into a temporary name beside
  // the target, renamed into place when complete; on any error nothing is left at the
  // target. Returns what was written. Errors: invalid_argument (a bad option, named as the
  // npm API names it, e.g. "maxShardSize"; an output that is or holds an input), unsupported
  // (e.g. GGUF output of a sharded layout), exists (the output exists and `overwrite` is
  // false), cancelled, io, parse, limit.
  Result<ConvertResult> convert(const ConvertOptions& options = {}) const;

  struct Impl;  // the library's side; opaque here

 private:
  explicit Model(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

// Returns the library's version, "0.1.0".
ANAMNESIS_API const char* version();

// Returns the SIMD implementation the kernels run on this machine ("AVX2", "NEON", ...,
// "scalar"), as `amn --version` reports it. AMN_FORCE_IMPL in the environment forces one.
ANAMNESIS_API const char* implementation();

}  // namespace anamnesis
