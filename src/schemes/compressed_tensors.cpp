// compressed-tensors integer weights (llm-compressor checkpoints): pack-quantized
// (`<base>.weight_packed` I32 + `.weight_shape` + `.weight_scale`, optional
// `.weight_zero_point` and `.weight_g_idx`) and naive / int-quantized (`<base>.weight` I8
// + `.weight_scale`, optional I8 `.weight_zero_point`). The few bytes of each weight_shape
// are read at detection (one need_bytes round for all). float-quantized FP8 is fp8.cpp's,
// nvfp4-pack-quantized fp4.cpp's. docs/formats/quantized/compressed-tensors.md, "Detection".
#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <string>

#include "kernels/quant/packed.h"
#include "schemes/context.h"
#include "schemes/util.h"

namespace amn {
namespace {

using schemes::ceil_div;
using schemes::has_stem_and_suffix;
using schemes::qconfig_string;

uint32_t pack_factor(uint32_t bits) { return 32 / bits; }

// Rows are contiguous in every tensor but g_idx, so a piece reads only its rows; a packed
// zero point holds 32 / bits rows per word row, hence the granularity.
class CtIntOp final : public SchemeOp {
 public:
  struct Ranges {
    ByteRange weight, scale, zero_point, g_idx;
  };
  CtIntOp(quant::CtIntParams p, uint64_t weight_row_bytes, Ranges r) : p_(p), weight_row_bytes_(weight_row_bytes), r_(r) {}

  uint64_t row_granularity() const override { return p_.has_zero_point && p_.packed ? pack_factor(p_.bits) : 1; }

  std::vector<ByteRange> inputs(uint64_t b, uint64_t e) const override {
    std::vector<ByteRange> in{rows(r_.weight, weight_row_bytes_, b, e)};
    const bool per_row = p_.scale_rows != 1;
    const uint64_t scale_row_bytes = p_.scale_cols * dtype_info(p_.scale_dtype).block_bytes;
    in.push_back(per_row ? rows(r_.scale, scale_row_bytes, b, e) : r_.scale);
    if (p_.has_zero_point) {
      if (p_.packed) {
        const uint64_t pf = pack_factor(p_.bits);
        in.push_back(rows(r_.zero_point, p_.scale_cols * 4, b / pf, ceil_div(e, pf)));
      } else {
        in.push_back(per_row ? rows(r_.zero_point, p_.scale_cols, b, e) : r_.zero_point);
      }
    }
    if (p_.has_g_idx) in.push_back(r_.g_idx);
    return in;
  }

  Status run(std::span<const std::span<const uint8_t>> in, uint64_t b, uint64_t e, DType to,
             uint8_t* out) const override {
    // The slices are rows [0, e - b) of a layer that many rows tall.
    quant::CtIntParams q = p_;
    q.out_features = e - b;
    if (p_.scale_rows != 1) q.scale_rows = e - b;
    quant::CtIntTensors t;
    size_t k = 0;
    t.weight = in[k++];
    t.scale = in[k++];
    if (p_.has_zero_point) t.zero_point = in[k++];
    if (p_.has_g_idx) t.g_idx = in[k++];
    const uint64_t n = (e - b) * p_.in_features * dtype_info(to).block_bytes;
    return quant::dequantize_ct_int_rows(q, t, 0, e - b, to, {out, static_cast<size_t>(n)});
  }

 private:
  static ByteRange rows(const ByteRange& r, uint64_t row_bytes, uint64_t b, uint64_t e) {
    return ByteRange{r.file, r.offset + b * row_bytes, (e - b) * row_bytes};
  }
  quant::CtIntParams p_;
  uint64_t weight_row_bytes_;
  Ranges r_;
};

// One config group's `weights`, with the format that applies to it.
struct Group {
  std::string format;
  int64_t bits = 0;
  bool symmetric = true;
  bool actorder_group = false;
};

struct CtConfig {
  bool present = false;
  std::vector<Group> groups;
};

CtConfig read_config(const SchemeContext& ctx) {
  CtConfig c;
  if (qconfig_string(ctx, "quant_method") != "compressed-tensors") return c;
  c.present = true;
  const std::string global = qconfig_string(ctx, "format");
  simdjson::dom::object groups;
  if ((*ctx.quantization_config())["config_groups"].get_object().get(groups) != simdjson::SUCCESS) return c;
  for (auto [key, value] : groups) {
    simdjson::dom::object g, w;
    if (value.get_object().get(g) != simdjson::SUCCESS || g["weights"].get_object().get(w) != simdjson::SUCCESS) continue;
    std::string_view s;
    if (w["type"].get_string().get(s) == simdjson::SUCCESS && s != "int") continue;
    Group out;
    out.format = g["format"].get_string().get(s) == simdjson::SUCCESS ? std::string(s) : global;
    if (w["num_bits"].get_int64().get(out.bits) != simdjson::SUCCESS) out.bits = 0;
    if (w["symmetric"].get_bool().get(out.symmetric) != simdjson::SUCCESS) out.symmetric = true;
    out.actorder_group = w["actorder"].get_string().get(s) == simdjson::SUCCESS && s == "group";
    c.groups.push_back(std::move(out));
  }
  return c;
}

bool naive_format(std::string_view f) { return f == "naive-quantized" || f == "int-quantized"; }

struct Candidate {
  std::string base;
  uint32_t weight;                      // weight_packed, or the I8 weight
  bool packed;
  std::optional<uint32_t> shape;        // weight_shape
  bool shape_read = false;
};

struct Layer {
  uint64_t out = 0, in = 0;
};

// weight_shape: [out, in] as I64 (what torch.tensor(weight.shape) writes) or I32.
std::optional<Layer> parse_weight_shape(DType dtype, const std::vector<uint8_t>& b) {
  Layer l;
  if (dtype == DType::I64 && b.size() == 16) {
    int64_t v[2];
    std::memcpy(v, b.data(), 16);
    if (v[0] <= 0 || v[1] <= 0) return std::nullopt;
    l.out = static_cast<uint64_t>(v[0]);
    l.in = static_cast<uint64_t>(v[1]);
  } else if (dtype == DType::I32 && b.size() == 8) {
    int32_t v[2];
    std::memcpy(v, b.data(), 8);
    if (v[0] <= 0 || v[1] <= 0) return std::nullopt;
    l.out = static_cast<uint64_t>(v[0]);
    l.in = static_cast<uint64_t>(v[1]);
  } else {
    return std::nullopt;
  }
  return l;
}

std::string layout_words(const quant::CtIntParams& p) {
  if (p.scale_rows == 1 && p.scale_cols == 1) return "tensor";
  if (p.scale_cols == 1) return "channel";
  return "group " + std::to_string(p.in_features / p.scale_cols);
}

void claim_layer(SchemeContext& ctx, const CtConfig& c, const Candidate& cand, const std::vector<uint8_t>* shape_bytes) {
  const Model& m = ctx.model();
  const std::string& base = cand.base;
  const auto scale = ctx.find(base + ".weight_scale");
  const auto zp = ctx.find(base + ".weight_zero_point");
  const auto g_idx = ctx.find(base + ".weight_g_idx");
  LogicalTensor l;
  l.name = base + ".weight";
  l.scheme = "compressed-tensors";
  l.natural = DType::BF16;
  l.parts.push_back({cand.packed ? "weight_packed" : "weight", cand.weight});
  if (cand.shape) l.parts.push_back({"weight_shape", *cand.shape});
  if (scale) l.parts.push_back({"weight_scale", *scale});
  if (zp) l.parts.push_back({"weight_zero_point", *zp});
  if (g_idx) l.parts.push_back({"weight_g_idx", *g_idx});
  auto fail = [&](std::string why) {
    l.error = std::move(why);
    ctx.claim(std::move(l));
  };
  const TensorRecord& w = m.tensors[cand.weight];
  std::vector<const Group*> groups;  // the config groups of this layer's format
  for (const auto& g : c.groups) {
    if (cand.packed ? g.format == "pack-quantized" : naive_format(g.format)) groups.push_back(&g);
  }
  if (c.present && groups.empty()) {
    std::string formats;
    for (const auto& g : c.groups) formats += (formats.empty() ? "'" : ", '") + g.format + "'";
    return fail(std::string(cand.packed ? "a packed weight" : "an I8 weight") + ", yet no integer config group is " +
                (cand.packed ? "pack-quantized" : "naive- or int-quantized") +
                (formats.empty() ? std::string(" (no config_groups)") : " (formats: " + formats + ")"));
  }
  if (!scale) return fail("no " + base + ".weight_scale beside " + w.name);
  if (w.shape.size() != 2) return fail("its " + std::string(cand.packed ? "weight_packed" : "weight") + " shape " + dims_text(w.shape) + " is not 2-D");
  const TensorRecord& sc = m.tensors[*scale];
  quant::CtIntParams p;
  p.packed = cand.packed;
  p.scale_dtype = sc.dtype;
  p.has_zero_point = zp.has_value();
  p.has_g_idx = g_idx.has_value();
  if (cand.packed) {
    if (!cand.shape) return fail("no " + base + ".weight_shape beside " + w.name);
    const TensorRecord& st = m.tensors[*cand.shape];
    if (!shape_bytes) return fail("this build cannot read weight_shape at detection");
    auto dims = parse_weight_shape(st.dtype, *shape_bytes);
    if (!dims) return fail("its weight_shape is not two positive I64 or I32 values (" + std::string(stored_type_name(st)) + " " + dims_text(st.shape) + ")");
    p.out_features = dims->out;
    p.in_features = dims->in;
    if (w.shape[0] != p.out_features)
      return fail("weight_shape " + dims_text({p.out_features, p.in_features}) + " disagrees with weight_packed " + dims_text(w.shape) + " rows");
  } else {
    p.out_features = w.shape[0];
    p.in_features = w.shape[1];
  }
  if (sc.shape.size() == 2) {
    p.scale_rows = sc.shape[0];
    p.scale_cols = sc.shape[1];
  } else if (sc.elements == 1 && sc.shape.size() <= 1) {
    p.scale_rows = p.scale_cols = 1;
  } else {
    return fail("its weight_scale shape " + dims_text(sc.shape) + " fits no layout (tensor, channel or group)");
  }
  if (zp) {
    const TensorRecord& z = m.tensors[*zp];
    const DType want = cand.packed ? DType::I32 : DType::I8;
    if (z.dtype != want) return fail("its weight_zero_point is " + std::string(stored_type_name(z)) + " (" + std::string(dtype_name(want)) + " expected)");
  }
  if (g_idx) {
    const TensorRecord& g = m.tensors[*g_idx];
    if (g.dtype != DType::I32 || g.shape.size() != 1)
      return fail("its weight_g_idx is " + std::string(stored_type_name(g)) + " " + dims_text(g.shape) + " (I32, 1-D expected)");
  }

  // Bits: the config's, or without one the published W4A16 / W8A16 widths; the packed
  // row length must fit, and where several widths do, the group's other settings decide.
  std::vector<const Group*> fitting;
  std::set<int64_t> widths;
  if (c.present) {
    for (const Group* g : groups) {
      if (g->bits < 1 || g->bits > 8) continue;
      if (cand.packed && ceil_div(p.in_features, pack_factor(static_cast<uint32_t>(g->bits))) != w.shape[1]) continue;
      fitting.push_back(g);
      widths.insert(g->bits);
    }
    if (widths.size() > 1) {
      std::vector<const Group*> closer;
      for (const Group* g : fitting)
        if (g->symmetric == !p.has_zero_point && g->actorder_group == p.has_g_idx) closer.push_back(g);
      widths.clear();
      for (const Group* g : closer) widths.insert(g->bits);
    }
  } else if (cand.packed) {
    for (int64_t b : {4, 8})
      if (ceil_div(p.in_features, pack_factor(static_cast<uint32_t>(b))) == w.shape[1]) widths.insert(b);
  } else {
    widths.insert(8);
  }
  if (widths.empty()) {
    std::string tried;
    for (const Group* g : groups) tried += (tried.empty() ? "" : ", ") + std::to_string(g->bits);
    if (!c.present) tried = "4, 8";
    return fail("weight_packed " + dims_text(w.shape) + " fits weight_shape " + dims_text({p.out_features, p.in_features}) +
                " at none of " + tried + " bits");
  }
  if (widths.size() > 1) return fail("several config groups of different num_bits fit it; which one applies is not told by its shapes");
  p.bits = static_cast<uint32_t>(*widths.begin());

  for (const TensorRecord* t : {&w, &sc}) {
    if (t->nbytes > std::numeric_limits<size_t>::max()) return fail(t->name + " is too large for this build");
  }
  if (zp && m.tensors[*zp].nbytes > std::numeric_limits<size_t>::max()) return fail("its weight_zero_point is too large for this build");
  static const uint8_t anchor = 0;  // never read: without g_idx, validate_ct_int checks sizes only
  auto sized = [](const TensorRecord& t) { return std::span<const uint8_t>(&anchor, static_cast<size_t>(t.nbytes)); };
  quant::CtIntParams check = p;
  check.has_g_idx = false;
  quant::CtIntTensors t{sized(w), sized(sc), zp ? sized(m.tensors[*zp]) : std::span<const uint8_t>{}, {}};
  if (auto v = quant::validate_ct_int(check, t); !v) return fail(v.error().message);
  if (g_idx) {
    if (auto v = quant::check_tensor_bytes("weight_g_idx", m.tensors[*g_idx].nbytes, quant::checked_mul3(p.in_features, 4, 1)); !v)
      return fail(v.error().message);
  }

  std::string format = cand.packed ? "pack-quantized" : "naive-quantized";
  if (!cand.packed && !groups.empty()) format = groups.front()->format;
  l.natural = sc.dtype;
  l.shape = {p.out_features, p.in_features};
  l.variant = format + ", " + std::to_string(p.bits) + "-bit, " + layout_words(p) + (zp ? ", asym" : ", sym") +
              (g_idx ? ", actorder (g_idx)" : "");
  CtIntOp::Ranges r{ctx.range(cand.weight), ctx.range(*scale), zp ? ctx.range(*zp) : ByteRange{},
                    g_idx ? ctx.range(*g_idx) : ByteRange{}};
  const uint64_t row_bytes = cand.packed ? w.shape[1] * 4 : w.shape[1];
  l.op = std::make_shared<CtIntOp>(p, row_bytes, r);
  ctx.claim(std::move(l));
  // Activation quantization parameters: meaningless once the weight is dequantized.
  for (const char* suffix : {".input_scale", ".input_zero_point", ".output_scale", ".output_zero_point"}) {
    if (auto a = ctx.find(base + suffix)) ctx.consume(*a);
  }
}

}  // namespace

Status detect_compressed_tensors(SchemeContext& ctx) {
  const Model& m = ctx.model();
  const CtConfig c = read_config(ctx);
  if (!c.present && !qconfig_string(ctx, "quant_method").empty()) return {};
  bool naive_configured = false;
  for (const auto& g : c.groups) naive_configured |= naive_format(g.format);
  std::vector<Candidate> found;
  std::vector<uint32_t> to_read;  // every weight_shape, in one round
  for (uint32_t i = 0; i < m.tensors.size(); ++i) {
    const TensorRecord& t = m.tensors[i];
    if (ctx.claimed(i)) continue;
    if (has_stem_and_suffix(t.name, ".weight_packed") && t.dtype == DType::I32) {
      Candidate cand{t.name.substr(0, t.name.size() - 14), i, true, std::nullopt};
      cand.shape = ctx.find(cand.base + ".weight_shape");
      if (cand.shape) {
        const TensorRecord& s = m.tensors[*cand.shape];
        if ((s.dtype == DType::I64 || s.dtype == DType::I32) && s.shape == std::vector<uint64_t>{2}) {
          to_read.push_back(*cand.shape);
          cand.shape_read = true;
        }
      }
      found.push_back(std::move(cand));
    } else if (has_stem_and_suffix(t.name, ".weight") && t.dtype == DType::I8) {
      // An I8 weight is compressed-tensors' with a weight_scale, or whenever the config
      // has a naive / int-quantized group (then a missing scale is reported).
      const std::string base = t.name.substr(0, t.name.size() - 7);
      if (!naive_configured && !ctx.find(base + ".weight_scale")) continue;
      found.push_back({base, i, false, std::nullopt});
    }
  }
  if (found.empty()) return {};
  std::vector<std::vector<uint8_t>> shapes;
  bool readable = true;
  if (auto got = ctx.read_records(to_read)) {
    shapes = std::move(*got);
  } else if (got.error().code == ErrorCode::unsupported) {
    readable = false;
  } else {
    return std::move(got).error();
  }
  size_t k = 0;
  for (const auto& cand : found) {
    const std::vector<uint8_t>* bytes = nullptr;
    if (cand.shape_read) {
      if (readable) bytes = &shapes[k];
      ++k;
    }
    claim_layer(ctx, c, cand, bytes);
  }
  return {};
}

}  // namespace amn
