// anamnesis: the C++ library. Reads safetensors (single, sharded), GGUF, NumPy (.npy,
// .npz) and PyTorch (.pt/.pth/.bin) files by their headers, lists their tensors, reads one
// tensor, converts or dequantizes a model into safetensors or GGUF, bit-exact with the
// producers' own dequantizers, and compares, hashes and describes models' values. The
// same core as the `amn` command and the npm package.
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

// One tensor's value statistics, as `amn stats` reports them (docs/cli.md, "Stats"): the
// values read as F32 (a quantized weight dequantized, a GGUF block tensor as ggml's
// to_float gives it), min / max / mean / std over the finite ones.
struct TensorStats {
  std::string name;
  std::string dtype;  // as stored ("BF16", "Q4_K"), or a quantized weight's scheme ("gptq")
  std::vector<uint64_t> shape;
  // Why the values are not described (an F8/F6/F4 or complex dtype kept as stored); every
  // count is then 0. Else empty.
  std::string skipped;
  uint64_t count = 0, nan = 0, pos_inf = 0, neg_inf = 0, zeros = 0;
  // Over the finite values; NaN when there is none. `std` is the population standard deviation.
  double min = 0, max = 0, mean = 0, std = 0;
  // Counts of the finite values in equal bins over [min, max] (the maximum in the last);
  // all zero when there is no finite value.
  std::vector<uint64_t> histogram;
};

struct HashOptions {
  // false: the bytes as stored. true: the values (`amn hash --dequantized`): each tensor as
  // tensor(name, "f32") returns it, so two files storing the same values differently hash the same.
  bool dequantized = false;
  // Called after each chunk (at most 16 MiB) with the chunks done and their total; returning
  // false cancels (error "cancelled").
  std::function<bool(uint64_t done, uint64_t total)> progress;
};

// Digests as lowercase hex.
struct TensorHash {
  std::string name;   // empty for the whole model
  uint64_t bytes = 0; // hashed (stored bytes, or the F32 values' bytes when dequantized)
  std::string sha256, xxh64, sha1;
};

struct HashResult {
  bool dequantized = false;
  // The stored records in file order, each over its own bytes; dequantized: the tensors
  // `amn stats` lists (tensors()' names, and a consumed companion such as an FP8 k_scale).
  std::vector<TensorHash> tensors;
  TensorHash model;  // every tensor's bytes in order, nothing else (metadata edits keep it)
  std::string uuid;  // llama.cpp gguf-hash's UUIDv5 over the same bytes
};

struct DiffOptions {
  // Called after each piece read (of either model) with the pieces done and their total;
  // returning false cancels (error "cancelled").
  std::function<bool(uint64_t done, uint64_t total)> progress;
  // A GGUF of a known architecture (llama, qwen2, qwen3) against a model with Hugging Face
  // names is matched through llama.cpp's converter names, llama's q / k with their rows
  // unpermuted (`amn diff`'s default); true: plain names only (`--exact-names`).
  bool exact_names = false;
};

// One tensor of a comparison (docs/cli.md, "Diff" defines every number). A is the signal.
struct TensorDiff {
  std::string name;
  std::string name_b;          // B's name when matched through the GGUF <-> HF names; else empty
  bool rows_permuted = false;  // matched with llama.cpp's q / k row permutation undone
  // "identical" (same stored type and shape, every value bit-identical), "same_values"
  // (stored differently, every value equal), "different", "shape_mismatch" (values not
  // compared), "only_in_a", "only_in_b", "not_compared" (`skipped` says why).
  std::string status;
  std::string dtype_a, dtype_b;  // as stored (or a scheme's name); empty on the side it is missing from
  std::vector<uint64_t> shape_a, shape_b;
  uint64_t elements = 0;           // pairs of values compared
  uint64_t equal = 0;              // pairs equal (a == b, or both NaN)
  uint64_t nonfinite = 0;          // pairs with a NaN or ±Inf on either side, left out of the numbers below
  uint64_t nonfinite_mismatch = 0; // of those, pairs that are not the same NaN/±Inf on both sides
  // Over the finite pairs; NaN when values were not compared (or none was finite).
  // snr_db = 10 log10(Σa² / Σ(a-b)²): +Inf when nothing differs, -Inf when A is all zero.
  double max_abs_diff = 0, mae = 0, rmse = 0, cosine = 0, snr_db = 0;
  std::string skipped;  // why values were not compared, or were compared as bytes; else empty
};

struct DiffResult {
  bool identical = false;  // every tensor "identical", none missing on either side
  std::vector<TensorDiff> tensors;  // A's order, then the tensors only B has, in B's order
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

  // Returns one tensor's value statistics, streaming its values twice (never holding the
  // tensor). `name` is one of tensors()' names. Errors: not_found, unsupported, parse, io, limit.
  Result<TensorStats> stats(const std::string& name) const;

  // Returns SHA-256, XXH64 and SHA-1 of every tensor and of the whole model, read in chunks
  // (never a whole tensor): what `amn hash --json` reports. Errors: unsupported (a tensor
  // whose size cannot be told), cancelled, parse, io, limit.
  Result<HashResult> hash(const HashOptions& options = {}) const;

  struct Impl;  // the library's side; opaque here

 private:
  explicit Model(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
  friend ANAMNESIS_API Result<DiffResult> diff(const Model& a, const Model& b, const DiffOptions& options);
};

// Compares two models tensor by tensor, as `amn diff` does: tensors matched by name (a
// quantized weight by its own name), both read as values (dequantized, F32) piece by
// piece side by side, so memory is a few pieces, never a tensor. Returns the comparison
// (a difference is not an error). Errors: cancelled, parse, io, limit.
ANAMNESIS_API Result<DiffResult> diff(const Model& a, const Model& b, const DiffOptions& options = {});

// Returns the library's version, "0.1.0".
ANAMNESIS_API const char* version();

// Returns the SIMD implementation the kernels run on this machine ("AVX2", "NEON", ...,
// "scalar"), as `amn --version` reports it. AMN_FORCE_IMPL in the environment forces one.
ANAMNESIS_API const char* implementation();

}  // namespace anamnesis
