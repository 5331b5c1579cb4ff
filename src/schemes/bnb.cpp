// bitsandbytes weights: 4-bit NF4 / FP4 (`<w>` packed + `<w>.absmax` + `<w>.quant_map` +
// `<w>.quant_state.bitsandbytes__<type>`, optionally double-quantized with
// `<w>.nested_absmax` + `<w>.nested_quant_map`) and LLM.int8() (`<w>` I8 + `<base>.SCB` +
// `<w>_format`). The 4-bit logical shape and dtype live only in the quant_state JSON, so
// those few bytes are read at detection. docs/formats/quantized/bitsandbytes.md.
#include <cstring>
#include <string>
#include <utility>

#include "kernels/quant/bnb.h"
#include "schemes/bnb_state.h"
#include "schemes/context.h"
#include "schemes/util.h"

namespace amn {
namespace {

using schemes::ceil_div;
using schemes::has_stem_and_suffix;
using schemes::qconfig_string;

// Real quant_states are ~170 bytes; anything near this is not one.
constexpr uint64_t kMaxQuantStateBytes = 4096;
constexpr std::string_view kQuantStateInfix = ".quant_state.bitsandbytes__";

// ---- 4-bit ----

// Elements of a bounded shape, or 0 when a dim is zero or the product would exceed the
// kernel's limit (validate_bnb4 then reports it).
uint64_t shape_elements(const std::vector<uint64_t>& shape) {
  constexpr uint64_t kMax = uint64_t{1} << 42;
  uint64_t n = 1;
  for (auto d : shape) {
    if (d == 0) return 0;
    if (n > kMax / d) return kMax + 1;
    n *= d;
  }
  return n;
}

struct Bnb4Ranges {
  ByteRange packed, absmax;                    // absmax: F32, or U8 codes when nested
  ByteRange nested_absmax, nested_quant_map;  // nested only
};

class Bnb4Op final : public SchemeOp {
 public:
  Bnb4Op(quant::Bnb4Params p, BnbQuantState q, uint64_t cols, Bnb4Ranges r) : p_(p), q_(q), cols_(cols), r_(r) {}

  std::vector<ByteRange> inputs(uint64_t b, uint64_t e) const override {
    const Span s = span(b, e);
    std::vector<ByteRange> in{
        ByteRange{r_.packed.file, r_.packed.offset + s.start / 2, ceil_div(s.end, 2) - s.start / 2}};
    if (!q_.nested) {
      in.push_back(ByteRange{r_.absmax.file, r_.absmax.offset + 4 * s.block0, 4 * (s.block1 - s.block0)});
      return in;
    }
    const uint64_t nb = q_.nested_blocksize;
    in.push_back(ByteRange{r_.absmax.file, r_.absmax.offset + s.block0, s.block1 - s.block0});
    in.push_back(ByteRange{r_.nested_absmax.file, r_.nested_absmax.offset + 4 * (s.block0 / nb),
                           4 * (ceil_div(s.block1, nb) - s.block0 / nb)});
    in.push_back(r_.nested_quant_map);
    return in;
  }

  Status run(std::span<const std::span<const uint8_t>> in, uint64_t b, uint64_t e, DType to,
             uint8_t* out) const override {
    const Span s = span(b, e);
    std::vector<float> absmax(static_cast<size_t>(s.block1 - s.block0));
    if (!q_.nested) {
      std::memcpy(absmax.data(), in[1].data(), absmax.size() * 4);
    } else {
      quant::resolve_bnb_nested_absmax(in[1].data(), absmax.size(), in[3].data(), in[2].data(), q_.nested_blocksize,
                                       q_.nested_offset, absmax.data());
    }
    quant::dequantize_bnb4(p_, in[0].data(), absmax, b * cols_ - s.start, e * cols_ - s.start, to, out);
    return {};
  }

 private:
  // Rows [b, e) as elements [b * cols, e * cols), read from `start`: a block boundary (a
  // nested block's, when nested) so the kernels index their inputs from zero.
  struct Span {
    uint64_t start, end, block0, block1;
  };
  Span span(uint64_t b, uint64_t e) const {
    const uint64_t align = q_.nested ? p_.blocksize * q_.nested_blocksize : p_.blocksize;
    Span s;
    s.start = b * cols_ / align * align;
    s.end = e * cols_;
    s.block0 = s.start / p_.blocksize;
    s.block1 = ceil_div(s.end, p_.blocksize);
    return s;
  }

  quant::Bnb4Params p_;
  BnbQuantState q_;
  uint64_t cols_;
  Bnb4Ranges r_;
};

struct Bnb4Candidate {
  uint32_t state;        // the quant_state record
  std::string weight;    // `<w>`: the packed weight's (and the logical tensor's) name
  std::string type;      // "nf4" / "fp4" from the name
};

// Builds the logical tensor of one quant_state (read already) and claims it.
// `missing_dtype` counts the quant_states without "dtype" and keeps the first weight's
// name (one warning for all).
void claim_bnb4(SchemeContext& ctx, const Bnb4Candidate& c, const std::vector<uint8_t>* state_bytes,
                std::pair<uint64_t, std::string>& missing_dtype) {
  const Model& m = ctx.model();
  if (ctx.claimed(c.state)) return;  // taken as another candidate's part (a name nested in another)
  LogicalTensor l;
  l.name = c.weight;
  l.scheme = "bnb-" + c.type;
  l.variant = c.type;
  l.parts.push_back({"quant_state", c.state});
  const auto w = ctx.find(c.weight);
  const auto absmax = ctx.find(c.weight + ".absmax");
  const auto quant_map = ctx.find(c.weight + ".quant_map");
  const auto nested_absmax = ctx.find(c.weight + ".nested_absmax");
  const auto nested_map = ctx.find(c.weight + ".nested_quant_map");
  if (w) l.parts.push_back({"weight", *w});
  if (absmax) l.parts.push_back({"absmax", *absmax});
  if (quant_map) l.parts.push_back({"quant_map", *quant_map});
  if (nested_absmax) l.parts.push_back({"nested_absmax", *nested_absmax});
  if (nested_map) l.parts.push_back({"nested_quant_map", *nested_map});
  auto fail = [&](std::string why) {
    l.error = std::move(why);
    ctx.claim(std::move(l));
  };
  const TensorRecord& st = m.tensors[c.state];
  if (st.dtype != DType::U8 || st.shape.size() != 1) {
    return fail("its quant_state is " + std::string(stored_type_name(st)) + " " + dims_text(st.shape) +
                " (U8 [length] expected)");
  }
  if (st.nbytes > kMaxQuantStateBytes) {
    return fail("its quant_state is " + std::to_string(st.nbytes) + " bytes (at most " +
                std::to_string(kMaxQuantStateBytes) + " expected)");
  }
  if (!state_bytes) return fail("this build cannot read a bitsandbytes quant_state at detection");
  auto q = parse_quant_state(*state_bytes, c.type, nested_absmax.has_value());
  if (!q) return fail(q.error().message);
  if (!q->dtype_given && missing_dtype.first++ == 0) missing_dtype.second = c.weight;
  l.natural = q->dtype;
  if (!w) return fail("no packed weight " + c.weight + " beside its quant_state");
  if (!absmax) return fail("no " + c.weight + ".absmax beside the packed weight");
  quant::Bnb4Params p;
  p.type = q->type;
  p.blocksize = q->blocksize;
  p.elements = shape_elements(q->shape);
  if (p.elements > 0 && p.elements <= (uint64_t{1} << 42)) l.shape = q->shape;  // else validate_bnb4 says why
  const TensorRecord& at = m.tensors[*absmax];
  if (q->nested) {
    if (!nested_map) return fail("no " + c.weight + ".nested_quant_map, yet the quant_state is double-quantized");
    if (at.dtype != DType::U8) return fail("its absmax is " + std::string(stored_type_name(at)) + " (U8 codes expected when double-quantized)");
    const TensorRecord& na = m.tensors[*nested_absmax];
    const TensorRecord& nm = m.tensors[*nested_map];
    if (na.dtype != DType::F32) return fail("its nested_absmax is " + std::string(stored_type_name(na)) + " (F32 expected)");
    if (nm.dtype != DType::F32) return fail("its nested_quant_map is " + std::string(stored_type_name(nm)) + " (F32 expected)");
    if (auto v = quant::validate_bnb4(p, m.tensors[*w].nbytes, at.elements); !v) return fail(v.error().message);
    if (auto v = quant::validate_bnb_nested(at.elements, q->nested_blocksize, na.elements, nm.elements); !v)
      return fail(v.error().message);
  } else {
    // (a nested_quant_map without nested_absmax is consumed unread, as from_dict ignores it)
    if (at.dtype == DType::U8) {
      return fail("its absmax is U8 codes, yet there is no " + c.weight +
                  ".nested_absmax (double quantization needs it; F32 absmax expected without)");
    }
    if (at.dtype != DType::F32) return fail("its absmax is " + std::string(stored_type_name(at)) + " (F32 expected)");
    if (auto v = quant::validate_bnb4(p, m.tensors[*w].nbytes, at.elements); !v) return fail(v.error().message);
  }
  l.variant = c.type + ", blocksize " + std::to_string(p.blocksize) +
              (q->nested ? ", double-quantized (nested blocksize " + std::to_string(q->nested_blocksize) + ")" : "");
  Bnb4Ranges r{ctx.range(*w), ctx.range(*absmax), {}, {}};
  if (q->nested) {
    r.nested_absmax = ctx.range(*nested_absmax);
    r.nested_quant_map = ctx.range(*nested_map);
  }
  l.op = std::make_shared<Bnb4Op>(p, *q, q->shape.back(), r);
  ctx.claim(std::move(l));
}

Status detect_bnb4(SchemeContext& ctx) {
  const Model& m = ctx.model();
  std::vector<Bnb4Candidate> found;
  std::vector<uint32_t> to_read;  // the quant_states small enough to read, all in one round
  for (uint32_t i = 0; i < m.tensors.size(); ++i) {
    // NAME.quant_state.bitsandbytes__nf4 (or __fp4), by suffix tests: this runs on every
    // record, and a substring search here was a tenth of opening a large plain header.
    const std::string_view n = m.tensors[i].name;
    if (ctx.claimed(i) || !(n.ends_with("nf4") || n.ends_with("fp4"))) continue;
    const std::string_view head = n.substr(0, n.size() - 3);
    if (!has_stem_and_suffix(head, kQuantStateInfix)) continue;
    found.push_back({i, std::string(head.substr(0, head.size() - kQuantStateInfix.size())), std::string(n.substr(head.size()))});
    const TensorRecord& t = m.tensors[i];
    if (t.dtype == DType::U8 && t.nbytes <= kMaxQuantStateBytes) to_read.push_back(i);
  }
  if (found.empty()) return {};
  std::vector<std::vector<uint8_t>> states;
  bool readable = true;
  if (auto got = ctx.read_records(to_read)) {
    states = std::move(*got);
  } else if (got.error().code == ErrorCode::unsupported) {
    readable = false;
  } else {
    return std::move(got).error();  // need_bytes: every quant_state asked for at once
  }
  size_t k = 0;
  std::pair<uint64_t, std::string> missing_dtype{0, ""};
  for (const auto& c : found) {
    const bool was_read = k < to_read.size() && to_read[k] == c.state;
    const std::vector<uint8_t>* bytes = was_read && readable ? &states[k] : nullptr;
    if (was_read) ++k;
    claim_bnb4(ctx, c, bytes, missing_dtype);
  }
  if (const auto& [count, first] = missing_dtype; count > 0) {
    ctx.warn("bitsandbytes quant_state without \"dtype\" (bitsandbytes always writes it): dequantized to bfloat16 "
             "by default: " + first + (count > 1 ? " and " + std::to_string(count - 1) + " more" : ""));
  }
  return {};
}

// ---- LLM.int8() ----

class Int8Op final : public SchemeOp {
 public:
  Int8Op(uint64_t cols, ByteRange weight, ByteRange scb, std::optional<ByteRange> format)
      : cols_(cols), weight_(weight), scb_(scb), format_(format) {}
  std::vector<ByteRange> inputs(uint64_t b, uint64_t e) const override {
    std::vector<ByteRange> in{ByteRange{weight_.file, weight_.offset + b * cols_, (e - b) * cols_}, scb_};
    if (format_) in.push_back(*format_);
    return in;
  }
  Status run(std::span<const std::span<const uint8_t>> in, uint64_t b, uint64_t e, DType to,
             uint8_t* out) const override {
    // weight_format is data: 0 is row-major; the others are bitsandbytes' legacy tiled
    // GPU layouts (col32, col_turing, col_ampere).
    if (format_ && in[2][0] != 0) {
      return make_error(ErrorCode::unsupported, "bitsandbytes: weight_format " + std::to_string(in[2][0]) +
                                                    " (a tiled GPU layout) is not supported; 0 (row-major) is");
    }
    quant::dequantize_bnb_int8_rows(cols_, in[0].data(), in[1].data(), b, e, to, out);
    return {};
  }

 private:
  uint64_t cols_;
  ByteRange weight_, scb_;
  std::optional<ByteRange> format_;
};

bool load_in_8bit(const SchemeContext& ctx) {
  auto q = ctx.quantization_config();
  std::string_view method;
  bool on = false;
  return q && (*q)["quant_method"].get_string().get(method) == simdjson::SUCCESS && method == "bitsandbytes" &&
         (*q)["load_in_8bit"].get_bool().get(on) == simdjson::SUCCESS && on;
}

// `<base>.weight` I8 with `<base>.SCB` (and `<base>.weight_format`). An I8 weight without
// SCB is an error only in a model whose config says load_in_8bit.
void detect_int8(SchemeContext& ctx) {
  const Model& m = ctx.model();
  const bool configured = load_in_8bit(ctx);
  for (uint32_t i = 0; i < m.tensors.size(); ++i) {
    const TensorRecord& w = m.tensors[i];
    if (ctx.claimed(i) || w.dtype != DType::I8 || !has_stem_and_suffix(w.name, ".weight")) continue;
    const std::string base = w.name.substr(0, w.name.size() - 7);
    const auto scb = ctx.find(base + ".SCB");
    if (!scb && !configured) continue;
    const auto format = ctx.find(w.name + "_format");
    LogicalTensor l;
    l.name = w.name;
    l.scheme = "bnb-int8";
    l.variant = "LLM.int8(), row-wise F32 SCB";
    l.natural = DType::F32;  // int8_vectorwise_dequant's result
    l.shape = w.shape;
    l.parts.push_back({"weight", i});
    if (scb) l.parts.push_back({"SCB", *scb});
    if (format) l.parts.push_back({"weight_format", *format});
    auto fail = [&](std::string why) {
      l.error = std::move(why);
      ctx.claim(std::move(l));
    };
    if (!scb) {
      fail("no " + base + ".SCB beside the int8 weight");
      continue;
    }
    const TensorRecord& s = m.tensors[*scb];
    if (w.shape.size() != 2) {
      fail("an int8 weight must be 2-D, not " + dims_text(w.shape));
      continue;
    }
    if (s.dtype != DType::F32) {
      fail("its SCB is " + std::string(stored_type_name(s)) + " (F32 expected)");
      continue;
    }
    if (format && (m.tensors[*format].nbytes != 1)) {
      fail("its weight_format is " + std::to_string(m.tensors[*format].nbytes) + " bytes (one U8 expected)");
      continue;
    }
    if (auto v = quant::validate_bnb_int8(w.shape[0], w.shape[1], w.nbytes, s.nbytes); !v) {
      fail(v.error().message);
      continue;
    }
    l.op = std::make_shared<Int8Op>(w.shape[1], ctx.range(i), ctx.range(*scb),
                                    format ? std::optional<ByteRange>(ctx.range(*format)) : std::nullopt);
    ctx.claim(std::move(l));
  }
}

}  // namespace

Status detect_bnb(SchemeContext& ctx) {
  AMN_TRY(detect_bnb4(ctx));
  detect_int8(ctx);
  return {};
}

}  // namespace amn
