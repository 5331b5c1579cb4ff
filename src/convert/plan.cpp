#include "convert/plan.h"
#include "convert/plan_blocks.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "convert/plan_gguf.h"
#include "core/checked.h"
#include "formats/safetensors/write.h"
#include "kernels/ggml/dequantize.h"

namespace amn {
namespace {

// Big-endian input is swapped to little-endian element by element (a complex number is
// two floats) before its kernel runs.
uint8_t swap_width_for(const Model& model, const TensorRecord& r) {
  const auto& info = dtype_info(r.dtype);
  if (!(model.big_endian || r.big_endian) || info.block_elems != 1 || info.block_bytes < 2) return 0;
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

bool needs_gather(const TensorRecord& t) {
  if (t.deflated) return true;
  if (t.strides.empty()) return false;
  uint64_t expect = 1;
  for (size_t d = t.shape.size(); d-- > 0;) {
    if (t.shape[d] != 1 && t.strides[d] != expect) return true;  // a size-1 dim's stride is free
    expect *= t.shape[d];
  }
  return false;
}

// A record whose bytes need inflating or gathering. Pieces split it along dim 0 when its
// rows lie apart in storage (a C-order view), so memory stays near kMaxPieceBytes; a
// compressed entry or a Fortran-order array is one piece (memory ~ that tensor).
void add_gather_pieces(const TensorRecord& t, uint32_t index, DType to, uint8_t swap_width, Plan& plan) {
  const uint64_t in_size = dtype_info(t.dtype).block_bytes;
  const uint64_t out_size = dtype_info(to).block_bytes;
  std::vector<uint64_t> row_major(t.shape.size(), 1);
  for (size_t d = t.shape.size(); d-- > 1;) row_major[d - 1] = row_major[d] * t.shape[d];
  // Strides equal to row-major ones need no gathering (a compressed contiguous array).
  const bool contiguous = t.strides.empty() || t.strides == row_major;
  const std::vector<uint64_t>& strides = contiguous ? row_major : t.strides;
  // Storage elements spanned by one dim-0 slice (all later dims).
  uint64_t slice_span = 1;
  for (size_t d = 1; d < t.shape.size(); ++d) slice_span += (t.shape[d] - 1) * strides[d];
  // The caller has elements > 0; a 0-d tensor is one row of one element.
  const uint64_t rows_total = t.shape.empty() ? 1 : t.shape[0];
  const uint64_t row_elems = t.elements / rows_total;
  const uint64_t row_stride = t.shape.empty() ? 0 : strides[0];
  const bool split = !t.deflated && rows_total > 1 && row_stride >= slice_span;
  const uint64_t rows_per_piece =
      split ? std::max<uint64_t>(1, kMaxPieceBytes / (row_elems * std::max(in_size, out_size))) : rows_total;
  for (uint64_t r0 = 0; r0 < rows_total; r0 += rows_per_piece) {
    const uint64_t rows = std::min(rows_per_piece, rows_total - r0);
    Piece p;
    p.kind = PieceKind::gather;
    p.tensor = index;
    p.file = t.file;
    p.from = t.dtype;
    p.to = to;
    p.swap_width = swap_width;
    p.shape = t.shape;
    if (!p.shape.empty()) p.shape[0] = rows;
    if (!contiguous) p.strides = strides;
    p.count = rows * row_elems;
    if (t.deflated) {
      p.in_offset = t.offset;
      p.in_length = t.nbytes;
      p.inflated_size = t.inflated_size;
      p.inflated_skip = t.inflated_skip;
      p.crc32 = t.crc32;
    } else {
      p.in_offset = t.offset + r0 * row_stride * in_size;
      p.in_length = (slice_span + (rows - 1) * row_stride) * in_size;
    }
    p.out_length = p.count * out_size;
    plan.pieces.push_back(p);
    plan.data_bytes += p.out_length;
  }
}

// What this build can turn into the output's bytes: every DType, and the GGUF block
// types ggml can dequantize, in little-endian files (gguf-py's big-endian conversion
// rewrites the scales inside blocks; reading those is not done).
// The storage a strided or compressed record's elements occupy must lie inside what it
// stored; parsers promise this, and the planner checks again because a gather trusts it.
Status check_layout(const TensorRecord& t) {
  if (t.strides.empty() && !t.deflated) return {};
  const auto& info = dtype_info(t.dtype);
  auto bad = [&](const char* why) {
    return make_error(ErrorCode::parse, "tensor '" + t.name + "': " + why);
  };
  if (info.block_elems != 1) return bad("a sub-byte dtype cannot be strided or compressed");
  if (!t.strides.empty() && t.strides.size() != t.shape.size()) return bad("strides and shape differ in rank");
  if (t.elements == 0) return {};
  std::optional<uint64_t> span = 1;  // elements from the first to the last one, inclusive
  for (size_t d = 0; d < t.strides.size() && span; ++d) {
    auto step = checked_mul(t.shape[d] - 1, t.strides[d]);
    span = step ? checked_add(*span, *step) : std::nullopt;
  }
  if (t.strides.empty()) span = t.elements;
  auto bytes = span ? checked_mul(*span, info.block_bytes) : std::nullopt;
  if (!bytes) return bad("its strides overflow");
  if (t.deflated) {
    auto end = checked_add(*bytes, t.inflated_skip);
    if (!end || *end > t.inflated_size) return bad("its elements run past the end of its compressed entry");
  } else if (*bytes > t.nbytes) {
    return bad("its strides reach past its storage");
  }
  return {};
}

Status check_plannable(const Model& model, const TensorRecord& t) {
  AMN_TRY(check_layout(t));
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
  const GgmlTraits& info = *ggml_traits(t.ggml_type);
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
    const uint64_t block = ggml_traits(t.ggml_type)->block_bytes;
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

Error logical_error(const LogicalTensor& l) {
  return make_error(ErrorCode::parse, "tensor '" + l.name + "' (" + l.scheme + "): " + l.error);
}

// A logical tensor (a quantized weight): pieces of whole rows, each at most
// kMaxPieceBytes of output, starting on the op's row granularity.
void add_logical(const LogicalTensor& l, std::optional<DType> to, Plan& plan) {
  const DType out = to.value_or(l.natural);
  const uint32_t index = static_cast<uint32_t>(plan.tensors.size());
  plan.tensors.push_back(TensorSpec{l.name, out, l.shape, l.elements * dtype_info(out).block_bytes});
  const uint32_t op = static_cast<uint32_t>(plan.ops.size());
  plan.ops.push_back(l.op);
  const uint64_t cols = l.shape.empty() ? 1 : l.shape.back();
  if (cols == 0 || l.elements == 0) return;
  const uint64_t rows = l.elements / cols;
  const uint64_t gran = std::max<uint64_t>(1, l.op->row_granularity());
  // F32 staging may be needed for a cast, so count 4 bytes per element either way.
  uint64_t per_piece = std::max<uint64_t>(1, kMaxPieceBytes / (cols * 4));
  per_piece = std::max(gran, per_piece / gran * gran);
  for (uint64_t r0 = 0; r0 < rows; r0 += per_piece) {
    Piece p;
    p.kind = PieceKind::dequantize_scheme;
    p.tensor = index;
    p.op = op;
    p.to = out;
    p.row_begin = r0;
    p.row_end = std::min(rows, r0 + per_piece);
    p.count = (p.row_end - r0) * cols;
    p.inputs = l.op->inputs(p.row_begin, p.row_end);
    p.out_length = p.count * dtype_info(out).block_bytes;
    for (const auto& r : p.inputs) p.in_length += r.length;
    plan.pieces.push_back(std::move(p));
    plan.data_bytes += plan.pieces.back().out_length;
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
  if (t.elements == 0) return;
  if (needs_gather(t)) add_gather_pieces(t, index, out, swap_width_for(model, t), plan);
  else if (t.nbytes > 0) add_pieces(t, index, out, swap_width_for(model, t), plan);
}

// Where an output tensor comes from, in words, for a collision error.
std::string source_of_logical(const Model& model, const LogicalTensor& l) {
  std::string parts, files;
  for (const auto& [role, record] : l.parts) {
    const TensorRecord& t = model.tensors[record];
    parts += (parts.empty() ? "" : ", ") + t.name;
    const std::string& file = model.files[t.file].name;
    if (files.find(file) == std::string::npos) files += (files.empty() ? "" : ", ") + file;
  }
  return "the " + l.scheme + " weight made of " + parts + " (in " + files + ")";
}

std::string source_of_record(const Model& model, const TensorRecord& t) {
  return "the " + std::string(stored_type_name(t)) + " tensor " + t.name + " (in " + model.files[t.file].name + ")";
}

// Two outputs under one name would make a file no reader accepts. It happens when a
// quantized weight's logical name is also a stored tensor: most often a folder holding a
// quantized model and its dequantized copy (`amn remember` writes <stem>-bf16 beside
// its input), opened together as shards of one model.
// `only`: check that one name (a one-tensor plan), not every name.
Status check_output_names(const Model& model, std::optional<std::string_view> only = std::nullopt) {
  if (model.logical.empty()) return {};  // stored names are unique (the parsers check)
  std::unordered_map<std::string_view, std::string> seen;
  for (const auto& l : model.logical) seen.emplace(l.name, source_of_logical(model, l));
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    if (model.is_consumed(i)) continue;
    const TensorRecord& t = model.tensors[i];
    if (only && t.name != *only) continue;
    auto it = seen.find(t.name);
    if (it == seen.end()) continue;
    return make_error(ErrorCode::parse,
                      "two output tensors would be named '" + t.name + "': " + it->second + " and " +
                          source_of_record(model, t) +
                          ". Is a converted copy of the model in the same folder? Open the files apart.");
  }
  return {};
}

// cast_all without a target dtype: the quantized weights' natural dtype (a logical
// tensor's, and F32 for GGUF blocks dequantized to safetensors), when they share one.
// nullopt when nothing is quantized (nothing to follow: the re-write stays lossless).
Result<std::optional<DType>> natural_of_quantized(const Model& model, bool gguf_output) {
  std::vector<DType> seen;
  std::string named;  // "BF16 (a.weight), F16 (b.weight)": each dtype with its first weight
  auto meet = [&](DType d, std::string_view name) {
    if (std::find(seen.begin(), seen.end(), d) != seen.end()) return;
    seen.push_back(d);
    named += (named.empty() ? "" : ", ") + std::string(dtype_name(d)) + " (" + std::string(name) + ")";
  };
  for (const auto& l : model.logical) meet(l.natural, l.name);
  if (!gguf_output) {
    for (size_t i = 0; i < model.tensors.size(); ++i) {
      const auto& t = model.tensors[i];
      if (t.ggml_type != kNoGgmlType && !model.is_consumed(i)) meet(DType::F32, t.name);
    }
  }
  if (seen.size() > 1) {
    return make_error(ErrorCode::invalid_argument,
                      "the quantized weights' natural dtypes differ: " + named +
                          "; casting the other tensors too needs a target dtype");
  }
  return seen.empty() ? std::nullopt : std::optional<DType>(seen[0]);
}

}  // namespace

Result<Plan> plan_convert(const Model& model, const ConvertOptions& options) {
  if (options.dtype && *options.dtype != DType::BF16 && *options.dtype != DType::F16 &&
      *options.dtype != DType::F32) {
    return make_error(ErrorCode::invalid_argument, "target dtype must be bf16, f16 or f32");
  }
  AMN_TRY(check_output_names(model));
  Plan plan;
  plan.limits = model.limits;
  plan.metadata = model.metadata;
  const bool gguf = options.to == OutputFormat::gguf;
  // A quantized model's passthrough tensors keep their dtype unless cast_all says otherwise.
  // cast_all without a dtype: the quantized weights' natural dtype (docs/cli.md).
  std::optional<DType> passthrough = model.logical.empty() || options.cast_all ? options.dtype : std::nullopt;
  if (options.cast_all && !options.dtype) {
    AMN_ASSIGN(passthrough, natural_of_quantized(model, gguf));
  }
  std::vector<bool> emitted(model.logical.size(), false);
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    const auto& t = model.tensors[i];
    if (model.is_consumed(i) && !model.is_part(i)) continue;  // an activation scale
    if (model.is_part(i)) {
      // A logical tensor takes the place of its first part in the file.
      const auto l = static_cast<size_t>(model.part_of[i]);
      if (!model.logical[l].error.empty()) return logical_error(model.logical[l]);
      if (!emitted[l]) add_logical(model.logical[l], options.dtype, plan);
      emitted[l] = true;
      plan.tensor_files.resize(plan.tensors.size(), t.file);
      continue;
    }
    AMN_TRY(check_plannable(model, t));
    if (gguf && !options.dtype && t.ggml_type != kNoGgmlType) add_block_copy(model, t, plan);
    else add_tensor(model, t, passthrough, plan);
    plan.tensor_files.resize(plan.tensors.size(), t.file);
  }
  if (gguf) {
    AMN_TRY(finish_gguf_plan(model, options, plan));
  } else {
    plan.header = safetensors_header(plan.tensors, plan.metadata);
  }
  return plan;
}

Status plan_stored_tensor(const Model& model, const TensorRecord& t, std::optional<DType> to, Plan& plan) {
  AMN_TRY(check_plannable(model, t));
  add_tensor(model, t, to, plan);
  return {};
}

Status plan_stored_blocks(const Model& model, const TensorRecord& t, Plan& plan) {
  AMN_TRY(check_plannable(model, t));
  if (t.ggml_type == kNoGgmlType) add_tensor(model, t, std::nullopt, plan);
  else add_block_copy(model, t, plan);
  return {};
}

bool is_plain_record(const Model& model, const TensorRecord& t) {
  return t.size_known && t.block_type.empty() && !needs_gather(t) && swap_width_for(model, t) == 0;
}

bool is_plain_block_record(const Model& model, const TensorRecord& t) {
  return t.size_known && !t.block_type.empty() && t.ggml_type != kNoGgmlType && !needs_gather(t) && !model.big_endian &&
         !t.big_endian;
}

Result<Plan> plan_tensor(const Model& model, std::string_view name, std::optional<DType> to) {
  AMN_TRY(check_output_names(model, name));
  for (const auto& l : model.logical) {
    if (l.name != name) continue;
    if (!l.error.empty()) return logical_error(l);
    Plan plan;
    plan.limits = model.limits;
    add_logical(l, to, plan);
    return plan;
  }
  const TensorRecord* t = model.find(name);
  if (!t) return make_error(ErrorCode::not_found, "no tensor named '" + std::string(name) + "'");
  AMN_TRY(check_plannable(model, *t));
  Plan plan;
  plan.limits = model.limits;
  add_tensor(model, *t, to, plan);
  return plan;
}

}  // namespace amn
