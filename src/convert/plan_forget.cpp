#include "convert/plan_forget.h"

#include <fnmatch.h>

#include <algorithm>
#include <numeric>

#include "convert/plan_blocks.h"
#include "convert/plan_gguf.h"
#include "schemes/gguf_mix.h"
#include "schemes/quant_config.h"
#include "formats/safetensors/write.h"

namespace amn {
namespace {

bool matches_any(const std::vector<std::string>& globs, const std::string& name) {
  return std::any_of(globs.begin(), globs.end(),
                     [&](const std::string& g) { return fnmatch(g.c_str(), name.c_str(), 0) == 0; });
}

// The encoder's outputs as tensors of the plan, each cut into pieces of at most
// kMaxPieceBytes on the part's granularity. Every piece reads the whole source (cached
// between the pieces of one weight).
//
// A piece of the weight (part 0) also covers at most kMaxPieceBytes / 4 source elements:
// the encoders work on their rows as F32 (the GGUF op holds the values and their
// decoding, 8 bytes an element), so a piece cut by its output alone would hold far more
// than its output: 16 MiB of TQ1_0 blocks are 79 M elements, 635 MB of F32, and peak
// memory went past 2 x the largest tensor (tests_js/cli/forget-memory.test.mjs).
uint64_t max_piece_bytes(const TensorRecord& t, uint32_t part, uint64_t total) {
  constexpr uint64_t kElements = kMaxPieceBytes / 4;
  if (part != 0 || total == 0 || t.elements == 0 || total > UINT64_MAX / kElements) return kMaxPieceBytes;
  return std::min(kMaxPieceBytes, kElements * total / t.elements);  // output bytes of kElements elements
}

void add_encoded(const TensorRecord& t, std::shared_ptr<const EncodeOp> op, Plan& plan) {
  const uint32_t encoder = static_cast<uint32_t>(plan.encoders.size());
  plan.encoders.push_back(op);
  const ByteRange source{t.file, t.offset, t.nbytes};
  if (op->needs_prepare()) plan.prepares.push_back({encoder, source, t.dtype});
  const auto outputs = op->outputs();
  for (uint32_t part = 0; part < outputs.size(); ++part) {
    const uint32_t index = static_cast<uint32_t>(plan.tensors.size());
    plan.tensors.push_back(outputs[part]);
    plan.tensor_files.push_back(t.file);
    const uint64_t total = outputs[part].nbytes;
    const uint64_t gran = std::max<uint64_t>(1, op->granularity(part));
    const uint64_t per_piece = std::max(gran, max_piece_bytes(t, part, total) / gran * gran);
    uint64_t begin = 0;
    do {  // one piece at least: a part sized by prepare() starts empty
      Piece p;
      p.kind = PieceKind::encode;
      p.tensor = index;
      p.op = encoder;
      p.part = part;
      p.file = t.file;
      p.from = t.dtype;
      p.row_begin = begin;
      p.row_end = std::min(total, begin + per_piece);
      p.out_length = p.row_end - p.row_begin;
      p.inputs = {source};
      p.in_length = t.nbytes;
      plan.data_bytes += p.out_length;
      plan.pieces.push_back(std::move(p));
      begin = plan.pieces.back().row_end;
    } while (begin < total);
  }
}

}  // namespace

Result<ForgetPlan> plan_forget(const Model& model, const ForgetOptions& options) {
  if (!options.forgetter) return make_error(ErrorCode::internal, "forget without a scheme");
  if (!model.logical.empty()) {
    const LogicalTensor& l = model.logical.front();
    return make_error(ErrorCode::unsupported, "the model is already quantized ('" + l.name + "' is " + l.scheme +
                                                  "): remember it first, then forget the result");
  }
  const Forgetter& f = *options.forgetter;
  ForgetPlan out;
  out.forgetter = options.forgetter;
  Plan& plan = out.plan;
  plan.limits = model.limits;
  plan.metadata = model.metadata;
  // A safetensors output keeps its quantization config in its own header, under the key
  // transformers' config.json uses: a single file has no config.json beside it, and
  // without one MLX's bits and group size cannot be told from the shapes (4-bit group 64,
  // 2-bit group 128 and 8-bit group 32 pack alike). Readers fall back to it
  // (schemes/quant_config.cpp); a config.json written beside a folder still comes first.
  if (const std::string q = f.quantization_config_json(); q != "null" && options.convert.to != OutputFormat::gguf) {
    std::erase_if(plan.metadata, [](const auto& kv) { return kv.first == schemes::kQuantizationConfigKey; });
    plan.metadata.emplace_back(schemes::kQuantizationConfigKey, q);
  }
  // First which tensors are quantized, then their ops at once (a scheme may link the ops
  // of weights whose producer shares a value), then the plan in file order.
  std::vector<const TensorRecord*> chosen_records;
  std::vector<bool> chosen_flags;
  for (const auto& t : model.tensors) {
    ForgetEntry e{t.name, t.shape, t.dtype, t.elements, t.nbytes, -1, {}};
    std::string why;
    bool chosen = false;
    if (matches_any(options.skip, t.name)) {
      why = "--skip";
    } else if (!options.only.empty()) {
      chosen = matches_any(options.only, t.name);
      if (!chosen) why = "not matched by --only";
    } else {
      why = f.default_keep_reason(t);
      chosen = why.empty();
    }
    if (chosen) {
      std::string cannot = f.cannot_hold(t);
      // A ggml block record is read as it is stored (the forgetter said whether it can).
      if (cannot.empty() && !is_plain_record(model, t) && !is_plain_block_record(model, t)) {
        cannot = "stored compressed, strided or big-endian (convert it to safetensors first)";
      }
      if (!cannot.empty()) {
        if (options.strict) {
          return make_error(ErrorCode::invalid_argument, "tensor '" + t.name + "' cannot be quantized: " + cannot);
        }
        out.warnings.push_back("kept '" + t.name + "' as stored: " + cannot);
        why = cannot;
        chosen = false;
      }
    }
    if (chosen) chosen_records.push_back(&t);
    else e.kept_because = why;
    chosen_flags.push_back(chosen);
    out.entries.push_back(std::move(e));
  }
  AMN_ASSIGN(auto ops, f.encode_chosen(model, chosen_records));
  if (ops.size() != chosen_records.size()) return make_error(ErrorCode::internal, "forget: an op per chosen tensor");
  std::vector<size_t> op_of(model.tensors.size(), 0);
  for (size_t i = 0, next = 0; i < model.tensors.size(); ++i) {
    if (chosen_flags[i]) op_of[i] = next++;
  }
  std::vector<size_t> order(model.tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  if (options.loader_order) {
    order = gguf_loader_order_of(order.size(), [&](size_t i) -> std::string_view { return model.tensors[i].name; });
  }
  for (size_t i : order) {
    const TensorRecord& t = model.tensors[i];
    if (chosen_flags[i]) {
      out.entries[i].encoder = static_cast<int32_t>(plan.encoders.size());
      add_encoded(t, std::move(ops[op_of[i]]), plan);
    } else {
      if (options.convert.to == OutputFormat::gguf) AMN_TRY(plan_stored_blocks(model, t, plan));
      else AMN_TRY(plan_stored_tensor(model, t, std::nullopt, plan));
      plan.tensor_files.resize(plan.tensors.size(), t.file);
    }
  }
  if (options.convert.to == OutputFormat::gguf) {
    AMN_TRY(finish_gguf_plan(model, options.convert, plan));
  } else {
    plan.header = safetensors_header(plan.tensors, plan.metadata);
  }
  return out;
}

uint64_t forget_bytes_after(const ForgetPlan& plan, const ForgetEntry& e) {
  if (e.encoder < 0) return e.bytes_before;
  uint64_t n = 0;
  for (const auto& spec : plan.plan.encoders[static_cast<size_t>(e.encoder)]->outputs()) n += spec.nbytes;
  return n;
}

}  // namespace amn
