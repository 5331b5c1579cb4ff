// MLX affine weights (mlx-lm checkpoints): `<base>.weight` U32 codes + `.scales` +
// `.biases`. Bits and group size from config.json's "quantization" (defaults, and per-layer
// entries keyed by module path); from the shapes only when exactly one pair fits.
// docs/formats/quantized/mlx.md, "Detection".
#include <limits>
#include <string>
#include <utility>

#include "kernels/quant/mlx.h"
#include "schemes/context.h"
#include "schemes/util.h"

namespace amn {
namespace {

using schemes::dims_text;
using schemes::ends_with;

// Rows are contiguous in all three tensors: a piece reads only its rows.
class MlxOp final : public SchemeOp {
 public:
  MlxOp(quant::MlxParams p, ByteRange weight, ByteRange scales, ByteRange biases)
      : p_(p), weight_(weight), scales_(scales), biases_(biases) {}
  std::vector<ByteRange> inputs(uint64_t b, uint64_t e) const override {
    const uint64_t w = p_.in_features * p_.bits / 32 * 4;
    const uint64_t s = p_.in_features / p_.group_size * dtype_info(p_.scale_dtype).block_bytes;
    return {rows(weight_, w, b, e), rows(scales_, s, b, e), rows(biases_, s, b, e)};
  }
  Status run(std::span<const std::span<const uint8_t>> in, uint64_t b, uint64_t e, DType to,
             uint8_t* out) const override {
    quant::MlxParams q = p_;
    q.out_features = e - b;  // the slices are rows [0, e - b) of a layer that many rows tall
    const uint64_t n = (e - b) * p_.in_features * dtype_info(to).block_bytes;
    return quant::dequantize_mlx_rows(q, {in[0], in[1], in[2]}, 0, e - b, to, {out, static_cast<size_t>(n)});
  }

 private:
  static ByteRange rows(const ByteRange& r, uint64_t row_bytes, uint64_t b, uint64_t e) {
    return ByteRange{r.file, r.offset + b * row_bytes, (e - b) * row_bytes};
  }
  quant::MlxParams p_;
  ByteRange weight_, scales_, biases_;
};

// mlx-lm writes "quantization" (and a copy as "quantization_config"); another method's
// quantization_config (one with a quant_method) is not MLX's.
std::optional<simdjson::dom::object> mlx_config(const SchemeContext& ctx) {
  auto root = ctx.config();
  if (!root) return std::nullopt;
  simdjson::dom::object q;
  if ((*root)["quantization"].get_object().get(q) == simdjson::SUCCESS) return q;
  std::string_view method;
  if ((*root)["quantization_config"].get_object().get(q) == simdjson::SUCCESS &&
      q["quant_method"].get_string().get(method) != simdjson::SUCCESS)
    return q;
  return std::nullopt;
}

// (bits, group size) pairs MLX can write that give these shapes: words * 32 = in * bits,
// in = groups * group size.
std::vector<std::pair<uint32_t, uint64_t>> fits(uint64_t words, uint64_t groups) {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  if (groups == 0) return out;
  for (uint32_t bits : {4u, 2u, 3u, 5u, 6u, 8u}) {
    if (words * 32 % bits != 0) continue;
    const uint64_t in = words * 32 / bits;
    for (uint64_t gs : {64u, 32u, 128u})
      if (in == groups * gs) out.emplace_back(bits, gs);
  }
  return out;
}

void detect_layer(SchemeContext& ctx, const std::optional<simdjson::dom::object>& q, uint32_t weight,
                  const std::string& base) {
  const Model& m = ctx.model();
  const auto scales = ctx.find(base + ".scales");
  const auto biases = ctx.find(base + ".biases");
  LogicalTensor l;
  l.name = base + ".weight";
  l.scheme = "mlx";
  l.natural = DType::BF16;
  l.parts.push_back({"weight", weight});
  if (scales) l.parts.push_back({"scales", *scales});
  if (biases) l.parts.push_back({"biases", *biases});
  auto fail = [&](std::string why) {
    l.error = std::move(why);
    ctx.claim(std::move(l));
  };
  const TensorRecord& w = m.tensors[weight];
  std::string_view mode;
  if (q && (*q)["mode"].get_string().get(mode) == simdjson::SUCCESS && mode != "affine")
    return fail("MLX mode '" + std::string(mode) + "' is not handled; affine is");
  if (!scales) return fail("no " + base + ".scales beside the U32 weight");
  if (!biases) return fail("no " + base + ".biases beside the U32 weight");
  const TensorRecord& sc = m.tensors[*scales];
  const TensorRecord& bi = m.tensors[*biases];
  if (w.shape.size() != 2) return fail("its weight shape " + dims_text(w.shape) + " is not 2-D");
  if (sc.shape.size() != 2 || bi.shape.size() != 2)
    return fail("its scales " + dims_text(sc.shape) + " and biases " + dims_text(bi.shape) + " are not both 2-D");
  if (bi.dtype != sc.dtype) {
    return fail("its biases are " + std::string(stored_type_name(bi)) + ", its scales " +
                std::string(stored_type_name(sc)) + " (one dtype expected)");
  }
  quant::MlxParams p;
  p.out_features = w.shape[0];
  p.scale_dtype = sc.dtype;
  const uint64_t words = w.shape[1];
  int64_t bits = 0, group_size = 0;
  if (q) {
    if ((*q)["bits"].get_int64().get(bits) != simdjson::SUCCESS) bits = 0;
    if ((*q)["group_size"].get_int64().get(group_size) != simdjson::SUCCESS) group_size = 0;
    simdjson::dom::element entry;
    if ((*q)[base].get(entry) == simdjson::SUCCESS) {
      simdjson::dom::object o;
      bool on = true;
      if (entry.get_object().get(o) == simdjson::SUCCESS) {
        int64_t v = 0;  // a key the entry leaves out keeps the default
        if (o["bits"].get_int64().get(v) == simdjson::SUCCESS) bits = v;
        if (o["group_size"].get_int64().get(v) == simdjson::SUCCESS) group_size = v;
      } else if (entry.get_bool().get(on) == simdjson::SUCCESS && !on) {
        return fail("config.json's quantization marks " + base + " unquantized, yet its weight is U32 with scales");
      }
    }
  }
  if (bits == 0 || group_size == 0) {
    const auto pairs = fits(words, sc.shape[1]);
    if (pairs.size() != 1) {
      std::string list;
      for (const auto& [b, g] : pairs) list += (list.empty() ? "" : ", ") + std::to_string(b) + "-bit group " + std::to_string(g);
      return fail("bits and group size cannot be told from the shapes alone (" +
                  (list.empty() ? std::string("no pair fits") : list + " fit") +
                  "); config.json's quantization gives them");
    }
    bits = pairs[0].first;
    group_size = static_cast<int64_t>(pairs[0].second);
  }
  if (bits < 1 || bits > 8 || group_size < 1) {
    return fail("config.json's quantization gives " + std::to_string(bits) + " bits, group size " +
                std::to_string(group_size));
  }
  p.bits = static_cast<uint32_t>(bits);
  p.group_size = static_cast<uint64_t>(group_size);
  if (p.bits != 7 && words * 32 % p.bits != 0) {
    return fail("its weight rows of " + std::to_string(words) + " words hold " + std::to_string(words * 32) +
                " bits, not a whole number of " + std::to_string(p.bits) + "-bit values");
  }
  p.in_features = words * 32 / p.bits;
  for (const TensorRecord* t : {&w, &sc, &bi}) {
    if (t->nbytes > std::numeric_limits<size_t>::max()) return fail(t->name + " is too large for this build");
  }
  static const uint8_t anchor = 0;  // never read: validate_mlx checks sizes only
  auto sized = [](const TensorRecord& t) { return std::span<const uint8_t>(&anchor, static_cast<size_t>(t.nbytes)); };
  if (auto v = quant::validate_mlx(p, {sized(w), sized(sc), sized(bi)}); !v) return fail(v.error().message);
  l.natural = sc.dtype;
  l.shape = {p.out_features, p.in_features};
  l.variant = "affine, " + std::to_string(p.bits) + "-bit, group " + std::to_string(p.group_size) +
              (q ? "" : " (from shapes: no config)");
  l.op = std::make_shared<MlxOp>(p, ctx.range(weight), ctx.range(*scales), ctx.range(*biases));
  ctx.claim(std::move(l));
}

}  // namespace

Status detect_mlx(SchemeContext& ctx) {
  const Model& m = ctx.model();
  const auto q = mlx_config(ctx);
  for (uint32_t i = 0; i < m.tensors.size(); ++i) {
    const TensorRecord& t = m.tensors[i];
    if (ctx.claimed(i) || t.dtype != DType::U32 || !ends_with(t.name, ".weight")) continue;
    const std::string base = t.name.substr(0, t.name.size() - 7);
    // A U32 weight is MLX's with a scales companion, or in a model with MLX's config.
    if (!q && !ctx.find(base + ".scales")) continue;
    detect_layer(ctx, q, i, base);
  }
  return {};
}

}  // namespace amn
