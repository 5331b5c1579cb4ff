// FP8 weights: an F8_E4M3 / F8_E5M2 `<w>` with a `<w>_scale_inv` (DeepSeek-V3,
// transformers' FP8 integration) or `<w>_scale` (compressed-tensors float-quantized,
// ModelOpt, FBGEMM) companion: per tensor, per channel or per block.
// docs/formats/quantized/fp8.md.
#include <map>
#include <string>
#include <tuple>

#include "kernels/quant/fp8.h"
#include "schemes/context.h"
#include "schemes/util.h"

namespace amn {
namespace {

using schemes::ceil_div;
using schemes::has_stem_and_suffix;
using schemes::qconfig_string;

class Fp8Op final : public SchemeOp {
 public:
  Fp8Op(quant::Fp8Params p, ByteRange weight, ByteRange scales) : p_(p), weight_(weight), scales_(scales) {}
  uint64_t row_granularity() const override { return 1; }
  std::vector<ByteRange> inputs(uint64_t b, uint64_t e) const override {
    return {ByteRange{weight_.file, weight_.offset + b * p_.cols, (e - b) * p_.cols}, scales_};
  }
  Status run(std::span<const std::span<const uint8_t>> in, uint64_t b, uint64_t e, DType to,
             uint8_t* out) const override {
    quant::dequantize_fp8_rows(p_, in[0].data(), in[1].data(), b, e, to, out);
    return {};
  }

 private:
  quant::Fp8Params p_;
  ByteRange weight_, scales_;
};

// weight_block_size from quantization_config, or the compressed-tensors group's block_structure.
std::optional<std::pair<uint64_t, uint64_t>> configured_block(const SchemeContext& ctx) {
  auto q = ctx.quantization_config();
  if (!q) return std::nullopt;
  simdjson::dom::array a;
  if ((*q)["weight_block_size"].get_array().get(a) != simdjson::SUCCESS || a.size() != 2) return std::nullopt;
  uint64_t r = 0, c = 0;
  if (a.at(0).get_uint64().get(r) != simdjson::SUCCESS || a.at(1).get_uint64().get(c) != simdjson::SUCCESS) return std::nullopt;
  if (r == 0 || c == 0) return std::nullopt;
  return std::make_pair(r, c);
}

// The block size along one axis of `extent` elements cut into `grid` blocks, when no
// config names it (docs/formats/quantized/fp8.md, "Inferring the block"). The sizes b with
// ceil(extent / b) == grid are the range [ceil(extent / grid), floor((extent - 1) /
// (grid - 1))] (grid > 1). One size: that one. Several: the natural ones are the size
// that tiles the axis exactly (extent / grid, what GPTQModel's infer_block_shape takes)
// and the range's power of two (every producer's blocks are powers of two, 128 in
// practice; the range spans less than a factor 2, so it holds at most one); chosen when
// they name one size, else ambiguous. grid == 1: every b >= extent gives the same
// values; b = extent. `why` says what failed.
std::optional<uint64_t> infer_block(uint64_t extent, uint64_t grid, std::string& why) {
  if (grid == 0 || extent == 0 || grid > extent) {
    why = "no block size gives " + std::to_string(grid) + " blocks over " + std::to_string(extent);
    return std::nullopt;
  }
  if (grid == 1) return extent;
  const uint64_t lo = ceil_div(extent, grid), hi = (extent - 1) / (grid - 1);
  if (lo > hi) {
    why = "no block size gives " + std::to_string(grid) + " blocks over " + std::to_string(extent);
    return std::nullopt;
  }
  if (lo == hi) return lo;
  std::optional<uint64_t> exact, power;
  if (extent % grid == 0) exact = extent / grid;
  uint64_t p2 = 1;
  while (p2 < lo) p2 <<= 1;
  if (p2 <= hi) power = p2;
  if ((exact || power) && !(exact && power && *exact != *power)) return exact ? exact : power;
  why = "every block size from " + std::to_string(lo) + " to " + std::to_string(hi) + " gives " +
        std::to_string(grid) + " blocks over " + std::to_string(extent);
  if (exact && power) why += ", and both " + std::to_string(*exact) + " and " + std::to_string(*power) + " are natural";
  return std::nullopt;
}


}  // namespace

Status detect_fp8(SchemeContext& ctx) {
  const Model& m = ctx.model();
  const bool scale_dtype_compute = qconfig_string(ctx, "quant_method") == "compressed-tensors";
  const auto block = configured_block(ctx);
  std::map<std::string, std::pair<uint64_t, std::string>> inferred;  // "RxC" -> (count, first weight)
  bool any = false;
  for (uint32_t i = 0; i < m.tensors.size(); ++i) {
    const TensorRecord& w = m.tensors[i];
    if (ctx.claimed(i) || (w.dtype != DType::F8_E4M3 && w.dtype != DType::F8_E5M2) || !w.block_type.empty()) continue;
    LogicalTensor l;
    l.name = w.name;
    l.scheme = "fp8";
    l.shape = w.shape;
    l.parts.push_back({"weight", i});
    std::optional<uint32_t> s = ctx.find(w.name + "_scale_inv");
    const char* form = "scale_inv";
    if (!s) {
      s = ctx.find(w.name + "_scale");
      form = "scale";
    }
    const std::string e = w.dtype == DType::F8_E4M3 ? "e4m3" : "e5m2";
    if (!s) {
      // A raw FP8 tensor (no scale) is a plain dtype, not a quantized weight: leave it be.
      continue;
    }
    l.parts.push_back({form, *s});
    const TensorRecord& st = m.tensors[*s];
    any = true;
    auto fail = [&](std::string why) {
      l.error = std::move(why);
      l.variant = e;
      ctx.claim(std::move(l));
    };
    if (w.shape.size() != 2) {
      fail("an FP8 weight with a scale must be 2-D, not " + dims_text(w.shape));
      continue;
    }
    if (st.dtype != DType::F32 && st.dtype != DType::BF16 && st.dtype != DType::F16) {
      fail("its " + std::string(form) + " is " + std::string(stored_type_name(st)) + " (F32, BF16 or F16 expected)");
      continue;
    }
    quant::Fp8Params p;
    p.weight = w.dtype;
    p.rows = w.shape[0];
    p.cols = w.shape[1];
    p.scale = st.dtype;
    p.compute = scale_dtype_compute ? st.dtype : DType::F32;
    std::string layout, inferred_size;
    if (st.elements == 1) {  // [], [1], [1, 1]
      p.scale_rows = p.scale_cols = 1;
      p.block_rows = p.rows;
      p.block_cols = p.cols;
      layout = "per tensor";
    } else if (st.elements == p.rows && (st.shape.size() == 1 || (st.shape.size() == 2 && st.shape[1] == 1))) {
      p.scale_rows = p.rows;
      p.scale_cols = 1;
      p.block_rows = 1;
      p.block_cols = p.cols;
      layout = "per channel";
    } else if (st.shape.size() == 2) {
      // Block-wise: the configured block if the grid fits it; without one, the block
      // the shapes imply (infer_block), if exactly one does.
      uint64_t br = 0, bc = 0;
      if (block) {
        std::tie(br, bc) = *block;
        if (ceil_div(p.rows, br) != st.shape[0] || ceil_div(p.cols, bc) != st.shape[1]) {
          fail("its " + std::string(form) + " grid " + dims_text(st.shape) + " fits no scale layout for a " +
               dims_text(w.shape) + " weight with " + std::to_string(br) + "x" + std::to_string(bc) +
               " blocks (weight_block_size)");
          continue;
        }
      } else {
        std::string why_rows, why_cols;
        const auto r = infer_block(p.rows, st.shape[0], why_rows);
        const auto c = infer_block(p.cols, st.shape[1], why_cols);
        if (!r || !c) {
          fail("its " + std::string(form) + " grid " + dims_text(st.shape) + " gives no single block size for a " +
               dims_text(w.shape) + " weight and no config names weight_block_size (" +
               (r ? "columns: " + why_cols : "rows: " + why_rows) + ")");
          continue;
        }
        br = *r;
        bc = *c;
        inferred_size = std::to_string(br) + "x" + std::to_string(bc);
      }
      p.scale_rows = st.shape[0];
      p.scale_cols = st.shape[1];
      p.block_rows = br;
      p.block_cols = bc;
      layout = std::to_string(br) + "x" + std::to_string(bc) + " blocks" + (block ? "" : " (inferred from shapes)");
    } else {
      fail("its " + std::string(form) + " shape " + dims_text(st.shape) + " fits no scale layout for a " +
           dims_text(w.shape) + " weight");
      continue;
    }
    if (auto v = quant::validate_fp8(p, w.nbytes, st.nbytes); !v) {
      fail(v.error().message);
      continue;
    }
    if (!inferred_size.empty()) {
      auto& seen = inferred[inferred_size];
      if (seen.first++ == 0) seen.second = w.name;
    }
    l.natural = p.compute;
    l.variant = e + ", " + layout + ", " + std::string(dtype_name(st.dtype)) + " " + form;
    l.op = std::make_shared<Fp8Op>(p, ctx.range(i), ctx.range(*s));
    ctx.claim(std::move(l));
  }
  for (const auto& [size, seen] : inferred) {
    ctx.warn("FP8 block size " + size + " inferred from the weight and scale shapes (no config names "
             "weight_block_size): " + seen.second +
             (seen.first > 1 ? " and " + std::to_string(seen.first - 1) + " more" : ""));
  }
  if (!any) return {};
  // Activation scales of an FP8 model: consumed, not output (meaningless once dequantized).
  for (uint32_t i = 0; i < m.tensors.size(); ++i) {
    if (ctx.claimed(i)) continue;
    const std::string& n = m.tensors[i].name;
    for (std::string_view suffix : {".input_scale", ".k_scale", ".v_scale", ".input_global_scale"}) {
      if (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0 &&
          m.tensors[i].elements <= 1) {
        ctx.consume(i);
      }
    }
  }
  return {};
}

}  // namespace amn
