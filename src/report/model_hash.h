// amn hash: SHA-256, XXH64 and SHA-1 of every stored tensor's bytes and of the whole
// model (every tensor's bytes in order, nothing else: metadata edits keep the hash),
// read in chunks of at most kHashChunk bytes (memory: one chunk). The model's UUID is
// llama.cpp gguf-hash's: UUIDv5 (SHA-1) under its namespace over the same bytes, so
// `amn hash --gguf-hash` prints what `llama-gguf-hash --all --uuid` prints for a GGUF.
//
// --dequantized (HashOf::values) hashes the remembered values instead: for each tensor
// `amn stats` lists (a quantized weight as its one logical tensor, in place of its parts),
// the bytes plan_tensor(name, F32) produces — npm's model.tensor(name, {to: 'f32'}):
// quantized weights and GGUF block types dequantized by the producer's own dequantizer,
// F16/BF16/F32/F64 as F32 (round to nearest even), every other dtype (integers, bool,
// F8/F6/F4 kept as such) as stored; all little-endian, row-major. Two files that store the
// same values differently (Q8_0 and Q4_0 blocks of small integers, or F32) hash the same.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "convert/execute.h"
#include "convert/plan.h"
#include "core/digest.h"
#include "core/error.h"
#include "core/model.h"
#include "core/source.h"

namespace amn {

inline constexpr uint64_t kHashChunk = 16ull << 20;

struct TensorHash {
  std::string name;
  uint64_t bytes = 0;
  std::string sha256, sha1, xxh64;
};

// What is hashed: the bytes as stored, or the values (--dequantized; see above).
enum class HashOf : uint8_t { stored, values };

struct ModelHash {
  HashOf of = HashOf::stored;
  std::vector<TensorHash> tensors;
  TensorHash model;  // name empty
  std::string uuid;
};

// The stored records in the model's order (file, then offset: for a GGUF written in
// header order, gguf-hash's order), or with HashOf::values the tensors amn stats lists, each
// through its plan_tensor pieces (memory: one piece, at most 16 MiB of output).
// steps(): one per chunk or piece, run in order (sans-IO: a step may answer need_bytes;
// call it again once the bytes are there).
class HashRun {
 public:
  static Result<HashRun> start(const Model& model, HashOf of = HashOf::stored);
  size_t steps() const { return chunks_.size(); }
  Status step(size_t i, FileSet& files, SchemeInputCache* cache = nullptr);
  const ModelHash& result() const { return result_; }  // complete after the last step

 private:
  struct Chunk {
    uint32_t tensor, file;
    uint64_t offset, length;  // stored bytes (plan < 0)
    bool last;                // of its tensor
    int32_t plan = -1;        // HashOf::values: piece `piece` of plans_[plan]
    size_t piece = 0;
  };
  struct State {
    Sha256 sha256;
    Sha1 sha1;
    Xxh64 xxh64;
  };
  void finish_model();
  std::vector<Chunk> chunks_;
  std::vector<Plan> plans_;  // HashOf::values: one per tensor
  std::vector<uint8_t> buffer_;  // one piece's output
  uint64_t tensor_bytes_ = 0;  // of the current tensor so far
  std::vector<std::string> names_;
  std::optional<State> tensor_, model_;
  std::optional<Sha1> uuid_;
  ModelHash result_;
};

Result<ModelHash> model_hash(const Model& model, FileSet& files, HashOf of = HashOf::stored);

// {"dequantized": bool, "tensors": [{name, bytes, sha256, xxh64, sha1}], "model": {tensors,
// bytes, sha256, xxh64, sha1, uuid}} (docs/json-schema.md "The hash document").
std::string hash_json(const ModelHash& h);
// amn hash's text: "<sha256>  <xxh64>  <name>" per tensor, then the model's line.
std::string render_hash(const ModelHash& h);
// llama.cpp gguf-hash --all --uuid's lines: "%-8s  %s  %s" with `path:name` per tensor
// (xxh64, sha1, sha256), then the model's (`path`) and its uuid.
std::string render_gguf_hash(const ModelHash& h, const std::string& path);

}  // namespace amn
