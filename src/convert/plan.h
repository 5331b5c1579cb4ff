// Planning: Model + target -> Plan. A plan is the output's tensor list (so the output
// header is known before any data is produced) and an ordered list of pieces; each piece
// reads one input byte range and produces the next bytes of the output. Executing the
// pieces in order and concatenating their outputs after the header gives the file.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/model.h"
#include "formats/gguf/parse.h"
#include "core/encode_op.h"
#include "core/logical_op.h"

namespace amn {

// A piece's output is at most this many bytes, so memory stays bounded by a piece
// (elementwise work is split; a browser tab never holds a whole large tensor).
inline constexpr uint64_t kMaxPieceBytes = 16u << 20;

// gather: a tensor whose stored bytes are not a plain row-major run (a DEFLATE entry,
// a strided view, Fortran order): its input range is inflated and/or its elements are
// gathered into row-major order before the copy or cast.
// dequantize_scheme: rows of a logical tensor (a quantized weight and its companions),
// produced by its LogicalOp from several input ranges.
// encode: bytes [row_begin, row_end) of output `part` of Plan::encoders[op] (forget), from
// the whole source tensor (`inputs`, of dtype `from`).
enum class PieceKind : uint8_t { copy, cast, dequantize_ggml, zeros, gather, dequantize_scheme, encode };

struct Piece {
  PieceKind kind = PieceKind::copy;
  uint32_t tensor = 0;   // index into Plan::tensors
  uint32_t file = 0;     // input file
  uint64_t in_offset = 0;
  uint64_t in_length = 0;
  uint64_t out_length = 0;
  uint64_t count = 0;    // elements, for casts and dequantization
  uint64_t blocks = 0;   // ggml blocks, for dequantize_ggml
  GgmlType ggml_type = kNoGgmlType;  // dequantize_ggml, and block copies
  DType from = DType::U8, to = DType::U8;
  uint8_t swap_width = 0;  // byte-swap the input in units of this many bytes first (big-endian data)
  bool swap_block_fields = false;  // big-endian GGUF blocks: swap their f16 fields first
  // gather only. The input range is a DEFLATE stream when `inflated_size` > 0: it is
  // inflated (CRC checked) and the element data starts `inflated_skip` bytes in.
  uint64_t inflated_size = 0;
  uint64_t inflated_skip = 0;
  uint32_t crc32 = 0;
  std::vector<uint64_t> shape;    // the piece's output shape (row-major)
  std::vector<uint64_t> strides;  // element strides into the input; empty: contiguous
  // dequantize_scheme only: Plan::ops[op] writes rows [row_begin, row_end) from `inputs`.
  uint32_t op = 0;
  uint32_t part = 0;  // encode only: which of the op's outputs
  uint64_t row_begin = 0, row_end = 0;
  std::vector<ByteRange> inputs;
};

struct Plan {
  std::vector<uint8_t> header;  // the output file's header (empty for a one-tensor plan)
  std::vector<TensorSpec> tensors;
  std::vector<std::pair<std::string, std::string>> metadata;
  std::vector<Piece> pieces;
  std::vector<std::shared_ptr<const LogicalOp>> ops;  // for dequantize_scheme pieces
  std::vector<std::shared_ptr<const EncodeOp>> encoders;  // for encode pieces (forget)
  // Encoders whose output sizes wait for the values (EncodeOp::needs_prepare): each is
  // prepared from its source (prepare_plan, execute.h) before the header is written.
  struct Prepare {
    uint32_t encoder = 0;
    ByteRange source;
    DType from = DType::F32;
  };
  std::vector<Prepare> prepares;
  // plan_convert only: for each output tensor, the input file its (first) record lives
  // in, so a sharded input can be written back with the same shard boundaries (shard.h).
  std::vector<uint32_t> tensor_files;
  // GGUF output only: the KVs its header holds (finish_gguf_plan), so a split output can
  // give them to its first file (shard.h).
  std::vector<std::pair<std::string, GgufValue>> gguf_kv;
  uint64_t data_bytes = 0;  // sum of piece outputs
  ParseLimits limits;       // the model's (Model::limits): what executing may allocate
  uint64_t output_bytes() const { return header.size() + data_bytes; }
};

enum class OutputFormat : uint8_t { safetensors, gguf };

struct ConvertOptions {
  OutputFormat to = OutputFormat::safetensors;
  // Cast every floating tensor (F16, BF16, F32, F64) to this and dequantize GGUF block
  // types to it; others are copied as stored. nullopt keeps every dtype (a lossless
  // re-write) and dequantizes block types to F32, ggml's exact to_float output.
  // (GGUF output without a dtype copies block types through unchanged instead.)
  std::optional<DType> dtype;
  // GGUF output: KVs set as ggml's gguf_set_val_* sets them (llama-quantize's own:
  // general.file_type, the imatrix's): each removed where it stands and appended, in
  // order. Then gguf_kv.
  std::vector<std::pair<std::string, GgufValue>> gguf_kv_set;
  // GGUF output: KVs that replace or extend the source GGUF's (kv_input.h parses them).
  std::vector<std::pair<std::string, GgufValue>> gguf_kv;
  // A quantized model's other tensors (norms, embeddings) keep their dtype unless this is
  // set; `dtype` applies to its logical tensors. Models with no logical tensors cast every
  // float to `dtype` as before. Set without a dtype, the other floats are cast to the
  // quantized weights' natural dtype (logical tensors' `natural`, F32 for GGUF blocks
  // written to safetensors); an invalid_argument when those differ, nothing when nothing
  // is quantized.
  bool cast_all = false;
};

Result<Plan> plan_convert(const Model& model, const ConvertOptions& options);
// The common case: safetensors output, floats cast to `dtype` (nullopt: kept).
inline ConvertOptions cast_options(std::optional<DType> dtype) {
  ConvertOptions o;
  o.dtype = dtype;
  return o;
}

// One stored record appended to `plan` as convert writes it (cast to `to` when given and
// the record is a castable float): forget uses it for the tensors it keeps.
Status plan_stored_tensor(const Model& model, const TensorRecord& t, std::optional<DType> to, Plan& plan);
// True when the record's elements are one little-endian row-major run in its file (no
// inflating, gathering or swapping): what an encoder reads directly.
bool is_plain_record(const Model& model, const TensorRecord& t);

// One tensor's bytes, cast to `to` when given and the tensor is a castable float. A
// logical tensor's name gives its dequantized values (to: default its natural dtype).
Result<Plan> plan_tensor(const Model& model, std::string_view name, std::optional<DType> to);

}  // namespace amn
