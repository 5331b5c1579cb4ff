// GPTQ weights (AutoGPTQ / GPTQModel): `<base>.qweight` I32 + `.qzeros` + `.scales` +
// `.g_idx`. Bits, group size and the zero-point convention from the quantization config
// (quantize_config.json, else config.json's quantization_config: quant_config.h) when
// present, else from the shapes (docs/formats/quantized/gptq.md, "Detection"). AWQ uses the same three names; its layers are left to awq.cpp.
#include <limits>
#include <string>

#include "kernels/quant/gptq.h"
#include "kernels/quant/packed.h"
#include "schemes/context.h"
#include "schemes/util.h"

namespace amn {
namespace {

using schemes::ceil_div;
using schemes::has_stem_and_suffix;
using schemes::qconfig_string;

// Output row o is qweight column o, strided through every qweight row: no piece of rows
// is a contiguous byte range, so every piece reads the whole layer.
class GptqOp final : public SchemeOp {
 public:
  GptqOp(quant::GptqParams p, std::vector<ByteRange> parts) : p_(p), parts_(std::move(parts)) {}
  std::vector<ByteRange> inputs(uint64_t, uint64_t) const override { return parts_; }
  Status run(std::span<const std::span<const uint8_t>> in, uint64_t b, uint64_t e, DType to,
             uint8_t* out) const override {
    quant::GptqTensors t{in[0], in[1], in[2], p_.has_g_idx ? in[3] : std::span<const uint8_t>{}};
    const uint64_t n = (e - b) * p_.in_features * dtype_info(to).block_bytes;
    return quant::dequantize_gptq_rows(p_, t, b, e, to, {out, static_cast<size_t>(n)});
  }

 private:
  quant::GptqParams p_;
  std::vector<ByteRange> parts_;
};

struct GptqConfig {
  bool present = false;      // quant_method gptq / gptqmodel
  int64_t bits = 0;          // 0: absent
  int64_t group_size = 0;    // 0: absent, -1: one group
  std::string format;        // checkpoint_format (or GPTQModel's older "format")
  std::string pack_dtype;
  bool desc_act = false, sym = false, has_sym = false;
  bool dynamic = false;      // GPTQModel per-module overrides: bits differ per layer
};

GptqConfig read_config(const SchemeContext& ctx) {
  GptqConfig c;
  const std::string method = qconfig_string(ctx, "quant_method");
  if (method != "gptq" && method != "gptqmodel") return c;
  c.present = true;
  auto q = *ctx.quantization_config();
  if (q["bits"].get_int64().get(c.bits) != simdjson::SUCCESS) c.bits = 0;
  if (q["group_size"].get_int64().get(c.group_size) != simdjson::SUCCESS) c.group_size = 0;
  c.format = qconfig_string(ctx, "checkpoint_format");
  if (c.format.empty()) c.format = qconfig_string(ctx, "format");
  c.pack_dtype = qconfig_string(ctx, "pack_dtype");
  if (q["desc_act"].get_bool().get(c.desc_act) != simdjson::SUCCESS) c.desc_act = false;
  c.has_sym = q["sym"].get_bool().get(c.sym) == simdjson::SUCCESS;
  simdjson::dom::object dyn;
  c.dynamic = q["dynamic"].get_object().get(dyn) == simdjson::SUCCESS && dyn.size() > 0;
  return c;
}

const TensorRecord* record(const Model& m, std::optional<uint32_t> i) { return i ? &m.tensors[*i] : nullptr; }

// The one width in {2, 3, 4, 8} whose packing gives these qzeros columns; where several
// do (tiny layers), the one that also gives these qweight rows for the g_idx length. 0
// when none or still several fit: never a guess.
uint32_t bits_from_shapes(uint64_t out, uint64_t qzeros_cols, uint64_t qweight_rows, uint64_t in) {
  uint32_t found = 0, count = 0, found_in = 0, count_in = 0;
  for (uint32_t b : {2u, 3u, 4u, 8u}) {
    if (ceil_div(out * b, 32) != qzeros_cols) continue;
    found = b;
    ++count;
    if (in && ceil_div(in * b, 32) == qweight_rows) {
      found_in = b;
      ++count_in;
    }
  }
  if (count == 1) return found;
  return count_in == 1 ? found_in : 0;
}

// The kernel's own checks on byte sizes; the bytes are not read (g_idx is checked by size
// here and by value when it runs), so the spans carry sizes only.
Status check_sizes(const quant::GptqParams& p, const TensorRecord& qw, const TensorRecord& qz, const TensorRecord& sc,
                   const TensorRecord* gi) {
  for (const TensorRecord* t : {&qw, &qz, &sc, gi}) {
    if (t && t->nbytes > std::numeric_limits<size_t>::max())
      return make_error(ErrorCode::limit, t->name + " is too large for this build");
  }
  static const uint8_t anchor = 0;  // never read: validate_gptq reads no bytes without g_idx
  auto sized = [](const TensorRecord& t) { return std::span<const uint8_t>(&anchor, static_cast<size_t>(t.nbytes)); };
  quant::GptqParams q = p;
  if (q.has_g_idx) {
    AMN_TRY(quant::check_tensor_bytes("GPTQ g_idx", gi->nbytes, q.in_features * 4));
    q.has_g_idx = false;  // the kernel reads g_idx values; its group-size check stands in here
    q.group_size = q.groups ? ceil_div(q.in_features, q.groups) : 0;
  }
  return quant::validate_gptq(q, {sized(qw), sized(qz), sized(sc), {}});
}

void detect_layer(SchemeContext& ctx, const GptqConfig& c, uint32_t qweight, const std::string& base) {
  const Model& m = ctx.model();
  const auto qzeros = ctx.find(base + ".qzeros");
  const auto scales = ctx.find(base + ".scales");
  const auto g_idx = ctx.find(base + ".g_idx");
  LogicalTensor l;
  l.name = base + ".weight";
  l.scheme = "gptq";
  l.natural = DType::F16;
  l.parts.push_back({"qweight", qweight});
  if (qzeros) l.parts.push_back({"qzeros", *qzeros});
  if (scales) l.parts.push_back({"scales", *scales});
  if (g_idx) l.parts.push_back({"g_idx", *g_idx});
  auto fail = [&](std::string why) {
    l.error = std::move(why);
    ctx.claim(std::move(l));
  };
  const TensorRecord& qw = m.tensors[qweight];
  const TensorRecord* qz = record(m, qzeros);
  const TensorRecord* sc = record(m, scales);
  const TensorRecord* gi = record(m, g_idx);
  if (!qz) return fail("no " + base + ".qzeros beside " + qw.name);
  if (!sc) return fail("no " + base + ".scales beside " + qw.name);
  if (qw.dtype != DType::I32 || qw.shape.size() != 2)
    return fail("its qweight is " + std::string(stored_type_name(qw)) + " " + dims_text(qw.shape) + " (I32, 2-D expected)");
  if (qz->dtype != DType::I32 || qz->shape.size() != 2)
    return fail("its qzeros is " + std::string(stored_type_name(*qz)) + " " + dims_text(qz->shape) + " (I32, 2-D expected)");
  if (sc->shape.size() != 2) return fail("its scales shape " + dims_text(sc->shape) + " is not 2-D");
  if (gi && (gi->dtype != DType::I32 || gi->shape.size() != 1))
    return fail("its g_idx is " + std::string(stored_type_name(*gi)) + " " + dims_text(gi->shape) + " (I32, 1-D expected)");
  if (c.format == "gptq_v2") {
  } else if (!c.format.empty() && c.format != "gptq") {
    return fail("checkpoint_format '" + c.format + "' (a repacked layout) is not handled; gptq and gptq_v2 are");
  }
  if (!c.pack_dtype.empty() && c.pack_dtype != "int32")
    return fail("pack_dtype '" + c.pack_dtype + "' is not handled; int32 is");

  quant::GptqParams p;
  p.out_features = qw.shape[1];
  p.groups = sc->shape[0];
  p.scale_dtype = sc->dtype;
  p.zeros = c.format == "gptq_v2" ? quant::GptqZeros::v2 : quant::GptqZeros::v1;
  p.has_g_idx = gi != nullptr;
  const uint64_t g_len = gi ? gi->shape[0] : 0;
  // GPTQModel's dynamic rules override bits per module by regex; the shapes say exactly
  // which width a layer has, so they decide instead of the global value.
  const bool bits_from_config = c.bits != 0 && !c.dynamic;
  if (bits_from_config) {
    if (c.bits != 2 && c.bits != 3 && c.bits != 4 && c.bits != 8)
      return fail("GPTQ with " + std::to_string(c.bits) + " bits (supported: 2, 3, 4, 8; 5-7 are GPTQModel's planar format)");
    p.bits = static_cast<uint32_t>(c.bits);
  } else {
    p.bits = bits_from_shapes(p.out_features, qz->shape[1], qw.shape[0], g_len);
    if (!p.bits) {
      return fail("qzeros " + dims_text(qz->shape) + " and qweight " + dims_text(qw.shape) + " for " +
                  std::to_string(p.out_features) + " outputs fit no single width of 2, 3, 4 or 8 bits");
    }
  }
  if (gi) {
    p.in_features = g_len;
    if (ceil_div(g_len * p.bits, 32) != qw.shape[0]) {
      return fail("its g_idx has " + std::to_string(g_len) + " entries, but qweight " + dims_text(qw.shape) +
                  " holds " + std::to_string(qw.shape[0] * 32 / p.bits) + " inputs of " + std::to_string(p.bits) + " bits");
    }
  } else if (qw.shape[0] * 32 % p.bits == 0) {
    p.in_features = qw.shape[0] * 32 / p.bits;
  } else {
    return fail("without g_idx, in_features cannot be told from " + std::to_string(qw.shape[0]) + " rows of " +
                std::to_string(p.bits) + "-bit codes");
  }
  const bool gs_from_config = c.group_size != 0 && !c.dynamic;
  if (gs_from_config) {
    p.group_size = c.group_size < 0 ? p.in_features : static_cast<uint64_t>(c.group_size);
  } else if (p.groups == 1) {
    p.group_size = p.in_features;
  } else if (p.groups && p.in_features % p.groups == 0) {
    p.group_size = p.in_features / p.groups;
  } else if (!gi) {
    return fail(std::to_string(p.groups) + " groups of scales do not divide " + std::to_string(p.in_features) +
                " inputs, and no config gives the group size");
  } else {
    p.group_size = ceil_div(p.in_features, std::max<uint64_t>(1, p.groups));
  }
  if (auto v = check_sizes(p, qw, *qz, *sc, gi); !v) return fail(v.error().message);

  l.natural = sc->dtype;
  l.shape = {p.out_features, p.in_features};
  std::string v = std::to_string(p.bits) + "-bit, ";
  v += p.groups == 1 ? "one group" : "group " + std::to_string(p.group_size);
  if (c.present && c.desc_act) v += ", act-order";
  if (c.present && c.has_sym) v += c.sym ? ", sym" : ", asym";
  v += p.zeros == quant::GptqZeros::v2 ? ", gptq_v2 zeros" : ", gptq (v1) zeros";
  if (!c.present) v += " (no config: v1 assumed)";
  else if (ctx.quantization_config_source() != "config.json") v += " (" + ctx.quantization_config_source() + ")";
  l.variant = std::move(v);
  std::vector<ByteRange> in{ctx.range(qweight), ctx.range(*qzeros), ctx.range(*scales)};
  if (gi) in.push_back(ctx.range(*g_idx));
  l.op = std::make_shared<GptqOp>(p, std::move(in));
  ctx.claim(std::move(l));
}

// Without a GPTQ config, a qweight is GPTQ's when it has g_idx or its columns are the
// scales' (outputs); AWQ's packs 8 outputs per column and has no g_idx.
bool gptq_shaped(const SchemeContext& ctx, const TensorRecord& qw, const std::string& base) {
  if (ctx.find(base + ".g_idx")) return true;
  const auto s = ctx.find(base + ".scales");
  if (!s) return false;
  const TensorRecord& sc = ctx.model().tensors[*s];
  return qw.shape.size() == 2 && sc.shape.size() == 2 && qw.shape[1] == sc.shape[1];
}

}  // namespace

Status detect_gptq(SchemeContext& ctx) {
  const Model& m = ctx.model();
  const GptqConfig c = read_config(ctx);
  if (!c.present && qconfig_string(ctx, "quant_method") == "awq") return {};
  for (uint32_t i = 0; i < m.tensors.size(); ++i) {
    const TensorRecord& t = m.tensors[i];
    if (ctx.claimed(i) || !has_stem_and_suffix(t.name, ".qweight")) continue;
    const std::string base = t.name.substr(0, t.name.size() - 8);
    if (!c.present && !gptq_shaped(ctx, t, base)) continue;
    detect_layer(ctx, c, i, base);
  }
  return {};
}

}  // namespace amn
