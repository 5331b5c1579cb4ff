#include "convert/plan.h"

#include <algorithm>

#include "convert/plan_gguf.h"
#include "formats/gguf/types.h"
#include "formats/safetensors/write.h"
#include "kernels/ggml/dequantize.h"

namespace amn {
namespace {

// Big-endian input is swapped to little-endian element by element (a complex number is
// two floats) before its kernel runs.
uint8_t swap_width_for(const Model& model, DType t) {
  const auto& info = dtype_info(t);
  if (!model.big_endian || info.block_elems != 1 || info.block_bytes < 2) return 0;
  return static_cast<uint8_t>(info.kind == DTypeKind::complex ? info.block_bytes / 2 : info.block_bytes);
}

void add_pieces(const TensorRecord& t, uint32_t index, DType to, uint8_t swap_width, Plan& plan) {
  const bool cast = to != t.dtype;
  const uint64_t in_size = dtype_info(t.dtype).block_bytes;
  const uint64_t out_size = cast ? dtype_info(to).block_bytes : in_size;
  // Elementwise: split by whole elements so no piece exceeds kMaxPieceBytes either side.
  const uint64_t per_piece =
      cast ? std::max<uint64_t>(1, kMaxPieceBytes / std::max(in_size, out_size)) : kMaxPieceBytes;
  const uint64_t total = cast ? t.elements : t.nbytes;  // elements or bytes
  uint64_t done = 0;
  do {
    const uint64_t n = std::min(per_piece, total - done);
    Piece p;
    p.kind = cast ? PieceKind::cast : PieceKind::copy;
    p.tensor = index;
    p.file = t.file;
    p.from = t.dtype;
    p.to = to;
    p.count = n;
    p.swap_width = swap_width;
    p.in_offset = t.offset + (cast ? done * in_size : done);
    p.in_length = cast ? n * in_size : n;
    p.out_length = cast ? n * out_size : n;
    plan.pieces.push_back(p);
    plan.data_bytes += p.out_length;
    done += n;
  } while (done < total);
}

// What this build can turn into the output's bytes: every DType, and the GGUF block
// types ggml can dequantize, in little-endian files (gguf-py's big-endian conversion
// rewrites the scales inside blocks; reading those is not done).
Status check_plannable(const Model& model, const TensorRecord& t) {
  if (t.block_type.empty()) return {};
  if (t.ggml_type == kNoGgmlType || !ggml_can_dequantize(t.ggml_type)) {
    return make_error(ErrorCode::unsupported, "tensor '" + t.name + "' is stored as " + t.block_type +
                                                  ", which anamnesis cannot decode");
  }
  if (model.big_endian && !ggml_big_endian_f16_fields(t.ggml_type)) {
    return make_error(ErrorCode::unsupported, "tensor '" + t.name + "' is " + t.block_type +
                                                  " in a big-endian GGUF, a byte order gguf-py's endian converter does not define");
  }
  return {};
}

// A GGUF block type: whole blocks per piece, dequantized to F32 (ggml's to_float), then
// cast to the target when it is not F32.
void add_dequantize_pieces(const TensorRecord& t, uint32_t index, DType to, bool big_endian, Plan& plan) {
  const GgmlTypeInfo& info = *ggml_type_info(t.ggml_type);
  const uint64_t out_size = dtype_info(to).block_bytes;
  const uint64_t total = t.elements / info.block_elements;
  // F32 staging for a cast counts too: 4 bytes per element either way.
  const uint64_t per_piece = std::max<uint64_t>(1, kMaxPieceBytes / (uint64_t{info.block_elements} * 4));
  for (uint64_t done = 0; done < total;) {
    const uint64_t n = std::min(per_piece, total - done);
    Piece p;
    p.kind = PieceKind::dequantize_ggml;
    p.swap_block_fields = big_endian;
    p.tensor = index;
    p.file = t.file;
    p.ggml_type = t.ggml_type;
    p.blocks = n;
    p.count = n * info.block_elements;
    p.to = to;
    p.from = DType::F32;
    p.in_offset = t.offset + done * info.block_bytes;
    p.in_length = n * info.block_bytes;
    p.out_length = p.count * out_size;
    plan.pieces.push_back(p);
    plan.data_bytes += p.out_length;
    done += n;
  }
}

// A block type copied through as stored (GGUF output with no target dtype).
void add_block_copy(const Model& model, const TensorRecord& t, Plan& plan) {
  TensorSpec o{t.name, DType::U8, t.shape, t.nbytes, t.ggml_type};
  const uint32_t index = static_cast<uint32_t>(plan.tensors.size());
  plan.tensors.push_back(std::move(o));
  for (uint64_t done = 0; done < t.nbytes;) {
    // Whole blocks per piece, so a big-endian block's fields are swapped in one piece.
    const uint64_t block = ggml_type_info(t.ggml_type)->block_bytes;
    const uint64_t n = std::min<uint64_t>(kMaxPieceBytes / block * block, t.nbytes - done);
    Piece p;
    p.tensor = index;
    p.file = t.file;
    p.in_offset = t.offset + done;
    p.in_length = p.out_length = n;
    p.ggml_type = t.ggml_type;
    p.swap_block_fields = model.big_endian;  // the output is little-endian
    plan.pieces.push_back(p);
    plan.data_bytes += n;
    done += n;
  }
}

void add_tensor(const Model& model, const TensorRecord& t, std::optional<DType> to, Plan& plan) {
  if (t.ggml_type != kNoGgmlType) {
    const DType out = to.value_or(DType::F32);
    TensorSpec o{t.name, out, t.shape, dtype_nbytes(out, t.elements).value()};
    const uint32_t index = static_cast<uint32_t>(plan.tensors.size());
    plan.tensors.push_back(std::move(o));
    add_dequantize_pieces(t, index, out, model.big_endian, plan);
    return;
  }
  const DType out = (to && is_castable_float(t.dtype)) ? *to : t.dtype;
  TensorSpec o{t.name, out, t.shape, 0};
  // Same element count, so the size in the target dtype cannot fail where the input did not.
  o.nbytes = dtype_nbytes(out, t.elements).value();
  const uint32_t index = static_cast<uint32_t>(plan.tensors.size());
  plan.tensors.push_back(std::move(o));
  if (t.nbytes > 0) add_pieces(t, index, out, swap_width_for(model, t.dtype), plan);
}

}  // namespace

Result<Plan> plan_convert(const Model& model, const ConvertOptions& options) {
  if (options.dtype && *options.dtype != DType::BF16 && *options.dtype != DType::F16 &&
      *options.dtype != DType::F32) {
    return make_error(ErrorCode::invalid_argument, "target dtype must be bf16, f16 or f32");
  }
  Plan plan;
  plan.metadata = model.metadata;
  const bool gguf = options.to == OutputFormat::gguf;
  for (const auto& t : model.tensors) {
    AMN_TRY(check_plannable(model, t));
    if (gguf && !options.dtype && t.ggml_type != kNoGgmlType) add_block_copy(model, t, plan);
    else add_tensor(model, t, options.dtype, plan);
  }
  if (gguf) {
    AMN_TRY(finish_gguf_plan(model, options, plan));
  } else {
    plan.header = safetensors_header(plan.tensors, plan.metadata);
  }
  return plan;
}

Result<Plan> plan_tensor(const Model& model, std::string_view name, std::optional<DType> to) {
  const TensorRecord* t = model.find(name);
  if (!t) return make_error(ErrorCode::not_found, "no tensor named '" + std::string(name) + "'");
  AMN_TRY(check_plannable(model, *t));
  Plan plan;
  add_tensor(model, *t, to, plan);
  return plan;
}

}  // namespace amn
