// GGUF output: the plan's tensors mapped to ggml types, the KVs (the source GGUF's, then
// the caller's), the aligned layout, and zero pieces for the padding between tensors.
#include "convert/plan_gguf.h"

#include <algorithm>

#include "core/ggml_type.h"
#include "formats/gguf/describe.h"
#include "formats/gguf/kv_input.h"
#include "formats/gguf/write.h"

namespace amn {

Status finish_gguf_plan(const Model& model, const ConvertOptions& options, Plan& plan) {
  // KVs: the source's (a split model's shard bookkeeping does not describe the output),
  // then the caller's, which replace same-named ones.
  std::vector<std::pair<std::string, GgufValue>> kv;
  if (model.format == ModelFormat::gguf && model.format_state) {
    const auto& src = static_cast<const GgufState&>(*model.format_state).header;
    for (const auto& [k, v] : src.kv) {
      if (!k.starts_with("split.")) kv.emplace_back(k, v);
    }
  }
  for (const auto& set : options.gguf_kv_set) {
    std::erase_if(kv, [&](const auto& e) { return e.first == set.first; });
    kv.push_back(set);
  }
  merge_gguf_kv(kv, options.gguf_kv);
  AMN_TRY(lay_out_gguf(kv, plan));
  plan.gguf_kv = std::move(kv);
  return {};
}

Status lay_out_gguf(const std::vector<std::pair<std::string, GgufValue>>& kv, Plan& plan) {
  uint64_t alignment = 32;
  for (const auto& [k, v] : kv) {
    if (k == "general.alignment") {
      auto a = v.as_uint();
      if (!a) return make_error(ErrorCode::invalid_argument, "general.alignment must be an unsigned integer");
      alignment = *a;
    }
  }

  std::vector<GgufWriteTensor> tensors;
  for (const auto& t : plan.tensors) {
    GgufWriteTensor w;
    w.name = t.name;
    w.ne.assign(t.shape.rbegin(), t.shape.rend());  // GGUF order: ne[0] varies fastest
    w.nbytes = t.nbytes;
    if (t.ggml_type != kNoGgmlType) {
      w.ggml_type = t.ggml_type;
    } else if (auto type = ggml_type_of(t.dtype)) {
      w.ggml_type = *type;
    } else {
      return make_error(ErrorCode::unsupported, "tensor '" + t.name + "' is " + std::string(dtype_name(t.dtype)) +
                                                    ", which GGUF has no type for");
    }
    tensors.push_back(std::move(w));
  }
  AMN_ASSIGN(auto layout, gguf_layout(kv, tensors, alignment));

  // Interleave the padding: after the last piece of tensor i, zeros up to tensor i+1.
  std::vector<Piece> pieces;
  pieces.reserve(plan.pieces.size() + tensors.size());
  size_t next = 0;
  for (uint32_t i = 0; i < tensors.size(); ++i) {
    while (next < plan.pieces.size() && plan.pieces[next].tensor == i) pieces.push_back(plan.pieces[next++]);
    const uint64_t end = layout.offsets[i] + tensors[i].nbytes;
    // ggml and gguf-py pad after the last tensor too (ggml's loader reads padded sizes).
    const uint64_t to = i + 1 < tensors.size() ? layout.offsets[i + 1] : (end + alignment - 1) / alignment * alignment;
    if (to > end) {
      Piece pad;
      pad.kind = PieceKind::zeros;
      pad.tensor = i;
      pad.out_length = to - end;
      pieces.push_back(pad);
      plan.data_bytes += pad.out_length;
    }
  }
  plan.pieces = std::move(pieces);
  plan.header = std::move(layout.header);
  return {};
}

}  // namespace amn
