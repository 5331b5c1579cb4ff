// MLX weights (mlx-lm checkpoints): `<base>.weight` U32 codes with `.scales`, plus
// `.biases` in the affine mode; U8 scales and no biases in MLX's floating-point modes
// (mxfp4, nvfp4, mxfp8: kernels/quant/mlx_fp.h, MLX's own E4M3). Weights may have
// leading dimensions (stacked experts, [experts, out, words]). Mode, bits and group size
// from config.json's "quantization" (defaults, and per-layer entries keyed by module path);
// affine bits and group size from the shapes only when exactly one pair fits.
// docs/formats/quantized/mlx.md, "Detection".
#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "kernels/quant/fp4.h"
#include "kernels/quant/fp8.h"
#include "kernels/quant/mlx.h"
#include "kernels/quant/mlx_fp.h"
#include "schemes/context.h"
#include "schemes/quant_config.h"
#include "schemes/util.h"

namespace amn {
namespace {

using schemes::has_stem_and_suffix;

// Rows are contiguous in all three tensors: a piece reads only its rows.
ByteRange rows_of(const ByteRange& r, uint64_t row_bytes, uint64_t b, uint64_t e) {
  return ByteRange{r.file, r.offset + b * row_bytes, (e - b) * row_bytes};
}

class MlxOp final : public SchemeOp {
 public:
  MlxOp(quant::MlxParams p, ByteRange weight, ByteRange scales, ByteRange biases)
      : p_(p), weight_(weight), scales_(scales), biases_(biases) {}
  std::vector<ByteRange> inputs(uint64_t b, uint64_t e) const override {
    const uint64_t w = p_.in_features * p_.bits / 32 * 4;
    const uint64_t s = p_.in_features / p_.group_size * dtype_info(p_.scale_dtype).block_bytes;
    return {rows_of(weight_, w, b, e), rows_of(scales_, s, b, e), rows_of(biases_, s, b, e)};
  }
  Status run(std::span<const std::span<const uint8_t>> in, uint64_t b, uint64_t e, DType to,
             uint8_t* out) const override {
    quant::MlxParams q = p_;
    q.out_features = e - b;  // the slices are rows [0, e - b) of a layer that many rows tall
    const uint64_t n = (e - b) * p_.in_features * dtype_info(to).block_bytes;
    return quant::dequantize_mlx_rows(q, {in[0], in[1], in[2]}, 0, e - b, to, {out, static_cast<size_t>(n)});
  }

 private:
  quant::MlxParams p_;
  ByteRange weight_, scales_, biases_;
};

// MLX's quantization modes, with the bits and group size to_quantized gives each when
// they are left out (mlx/python/mlx/nn/layers/quantized.py, _defaults_for_mode). The
// floating-point modes accept only those (mlx/ops.cpp, fp_quantize / fp_dequantize).
enum class MlxMode : uint8_t { affine, mxfp4, nvfp4, mxfp8 };
struct ModeInfo {
  std::string_view name;
  MlxMode mode;
  int64_t bits, group_size;
  const char* variant;  // what inspect shows for the floating-point modes
};
constexpr ModeInfo kModes[] = {
    {"affine", MlxMode::affine, 4, 64, ""},
    {"mxfp4", MlxMode::mxfp4, 4, 32, "mxfp4: e2m1, 32 per E8M0 scale"},
    {"nvfp4", MlxMode::nvfp4, 4, 16, "nvfp4: e2m1, 16 per E4M3 scale, no global scale"},
    {"mxfp8", MlxMode::mxfp8, 8, 32, "mxfp8: e4m3, 32 per E8M0 scale"},
};

// mx.dequantize of the floating-point modes (mlx/ops.cpp fp_dequantize, default dtype
// BF16): code value times scale, each exact in BF16 and F32, the product rounded once
// (kernels/quant/mlx_fp.h: MLX's E4M3 has no NaN, 0x7F is 480, unlike OCP's). The
// MXFP4 / NVFP4 / FP8 kernels' checks validate the shapes.
// docs/formats/quantized/mlx.md, "Floating-point modes".
class MlxFpOp final : public SchemeOp {
 public:
  MlxFpOp(const ModeInfo& mode, uint64_t cols, ByteRange weight, ByteRange scales)
      : mode_(mode), cols_(cols), weight_(weight), scales_(scales) {}
  std::vector<ByteRange> inputs(uint64_t b, uint64_t e) const override {
    return {rows_of(weight_, cols_ * mode_.bits / 8, b, e),
            rows_of(scales_, cols_ / static_cast<uint64_t>(mode_.group_size), b, e)};
  }
  Status run(std::span<const std::span<const uint8_t>> in, uint64_t b, uint64_t e, DType to,
             uint8_t* out) const override {
    // The slices hold rows [0, e - b).
    const quant::MlxFpMode fp = mode_.mode == MlxMode::mxfp4   ? quant::MlxFpMode::mxfp4
                                : mode_.mode == MlxMode::nvfp4 ? quant::MlxFpMode::nvfp4
                                                               : quant::MlxFpMode::mxfp8;
    quant::dequantize_mlx_fp_rows(fp, cols_, in[0].data(), in[1].data(), 0, e - b, to, out);
    return {};
  }
  static quant::Mxfp4Params mxfp4(uint64_t rows, uint64_t cols) { return {rows, cols / 32}; }
  static quant::Nvfp4Params nvfp4(uint64_t rows, uint64_t cols) {
    return {quant::Nvfp4Layout::compressed_tensors, rows, cols, 1.0f};
  }
  static quant::Fp8Params mxfp8(uint64_t rows, uint64_t cols) {
    quant::Fp8Params p;
    p.weight = DType::F8_E4M3;
    p.rows = rows;
    p.cols = cols;
    p.scale = DType::F8_E8M0;
    p.scale_rows = rows;
    p.scale_cols = cols / 32;
    p.block_rows = 1;
    p.block_cols = 32;
    return p;
  }

 private:
  const ModeInfo& mode_;
  uint64_t cols_;
  ByteRange weight_, scales_;
};

// mlx-lm writes "quantization" (and a copy as "quantization_config"); another method's
// quantization_config (one with a quant_method) is not MLX's. When config.json has neither,
// the config amn's forget keeps in the file's metadata (schemes/quant_config.h).
std::optional<simdjson::dom::object> mlx_config(const SchemeContext& ctx) {
  simdjson::dom::object q;
  std::string_view method;
  if (auto root = ctx.config()) {
    if ((*root)["quantization"].get_object().get(q) == simdjson::SUCCESS) return q;
    if ((*root)["quantization_config"].get_object().get(q) == simdjson::SUCCESS &&
        q["quant_method"].get_string().get(method) != simdjson::SUCCESS)
      return q;
  }
  auto own = ctx.quantization_config();
  if (own && ctx.quantization_config_source() == schemes::kQuantizationConfigMetadataSource &&
      (*own)["quant_method"].get_string().get(method) != simdjson::SUCCESS)
    return own;
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

// What config.json's "quantization" says of one layer. Its defaults are what mlx-lm gives
// nn.quantize; a per-layer entry is what its class_predicate returns, which nn.quantize
// passes to to_quantized as keyword arguments, so keys the entry leaves out take
// to_quantized's defaults (mode "affine", that mode's bits and group size), not the
// model's. bits / group_size 0: affine, to be told from the shapes.
struct LayerQuant {
  const ModeInfo* mode = &kModes[0];
  int64_t bits = 0, group_size = 0;
  std::string error;  // a mode MLX does not have, or an entry that says "not quantized"
};

const ModeInfo* find_mode(std::string_view name) {
  for (const ModeInfo& m : kModes)
    if (m.name == name) return &m;
  return nullptr;
}

LayerQuant read_quant(simdjson::dom::object o, bool entry) {
  LayerQuant lq;
  std::string_view mode;
  if (o["mode"].get_string().get(mode) != simdjson::SUCCESS) mode = "affine";
  lq.mode = find_mode(mode);
  if (!lq.mode) {
    lq.mode = &kModes[0];
    lq.error = "MLX mode '" + std::string(mode) + "' is not one of affine, mxfp4, nvfp4, mxfp8";
    return lq;
  }
  if (o["bits"].get_int64().get(lq.bits) != simdjson::SUCCESS) lq.bits = 0;
  if (o["group_size"].get_int64().get(lq.group_size) != simdjson::SUCCESS) lq.group_size = 0;
  // Left out: the mode's default, except affine model defaults, which the shapes settle.
  if (lq.mode->mode != MlxMode::affine || entry) {
    if (lq.bits == 0) lq.bits = lq.mode->bits;
    if (lq.group_size == 0) lq.group_size = lq.mode->group_size;
  }
  return lq;
}

LayerQuant layer_quant(const std::optional<simdjson::dom::object>& q, const std::string& base) {
  if (!q) return {};
  simdjson::dom::element entry;
  if ((*q)[base].get(entry) == simdjson::SUCCESS) {
    simdjson::dom::object o;
    bool on = true;
    if (entry.get_object().get(o) == simdjson::SUCCESS) return read_quant(o, true);
    if (entry.get_bool().get(on) == simdjson::SUCCESS && !on) {
      LayerQuant lq;
      lq.error = "config.json's quantization marks " + base + " unquantized, yet its weight is U32 with scales";
      return lq;
    }
  }
  return read_quant(*q, false);
}

// The shape without its last dimension, and the product of those dimensions (rows).
std::vector<uint64_t> leading(const std::vector<uint64_t>& shape) { return {shape.begin(), shape.end() - 1}; }
uint64_t product(const std::vector<uint64_t>& dims) {
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;  // fits: the record's byte size did
  return n;
}

void detect_fp_layer(SchemeContext& ctx, LogicalTensor& l, const LayerQuant& lq, uint32_t weight,
                     std::optional<uint32_t> scales, std::optional<uint32_t> biases, const std::string& base,
                     bool configured, const std::function<void(std::string)>& fail) {
  const Model& m = ctx.model();
  const ModeInfo& mode = *lq.mode;
  const std::string name(mode.name);
  if (lq.bits != mode.bits || lq.group_size != mode.group_size) {
    return fail("MLX mode '" + name + "' takes " + std::to_string(mode.bits) + " bits in groups of " +
                std::to_string(mode.group_size) + "; config.json's quantization gives " + std::to_string(lq.bits) +
                " bits, group size " + std::to_string(lq.group_size));
  }
  if (!scales) return fail("no " + base + ".scales beside the U32 weight");
  if (biases) return fail("MLX mode '" + name + "' has no biases, yet " + base + ".biases is there");
  const TensorRecord& w = m.tensors[weight];
  const TensorRecord& sc = m.tensors[*scales];
  if (sc.dtype != DType::U8) {
    return fail("its scales are " + std::string(stored_type_name(sc)) + "; MLX mode '" + name + "' stores them as U8");
  }
  const uint64_t words = w.shape.back();
  const uint64_t cols = words * 32 / static_cast<uint64_t>(mode.bits);
  const uint64_t gs = static_cast<uint64_t>(mode.group_size);
  std::vector<uint64_t> grid = leading(w.shape);
  grid.push_back(cols / gs);
  if (cols % gs != 0 || sc.shape != grid) {
    return fail("its scales shape " + dims_text(sc.shape) + " does not fit a weight " + dims_text(w.shape) + " of " +
                std::to_string(cols) + " " + name + " values per row (" + dims_text(grid) + " expected)");
  }
  const uint64_t rows = product(leading(w.shape));
  Status v;
  if (mode.mode == MlxMode::mxfp4) v = quant::validate_mxfp4(MlxFpOp::mxfp4(rows, cols), w.nbytes, sc.nbytes);
  else if (mode.mode == MlxMode::nvfp4) v = quant::validate_nvfp4(MlxFpOp::nvfp4(rows, cols), w.nbytes, sc.nbytes);
  else v = quant::validate_fp8(MlxFpOp::mxfp8(rows, cols), w.nbytes, sc.nbytes);
  if (!v) return fail(v.error().message);
  l.natural = DType::BF16;  // mx.dequantize's default dtype for these modes
  l.shape = leading(w.shape);
  l.shape.push_back(cols);
  l.variant = std::string(mode.variant) + (configured ? "" : " (from shapes: no config)");
  l.op = std::make_shared<MlxFpOp>(mode, cols, ctx.range(weight), ctx.range(*scales));
  ctx.claim(std::move(l));
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
  const std::function<void(std::string)> fail = [&](std::string why) {
    l.error = std::move(why);
    ctx.claim(std::move(l));
  };
  const TensorRecord& w = m.tensors[weight];
  LayerQuant lq = layer_quant(q, base);
  if (!lq.error.empty()) return fail(lq.error);
  if (w.shape.size() < 2) return fail("its weight shape " + dims_text(w.shape) + " is not [..., out, words]");
  if (!q && scales && !biases) {
    // No config: U8 scales without biases are a floating-point mode, which the number of
    // scales per word tells apart (mxfp4 8 codes per word and 32 per scale: 1/4; nvfp4
    // 1/2; mxfp8 4 per word: 1/8).
    const TensorRecord& sc = m.tensors[*scales];
    const uint64_t words = w.shape.back();
    for (const ModeInfo& mode : kModes) {
      if (mode.mode == MlxMode::affine || sc.dtype != DType::U8 || sc.shape.empty()) continue;
      const uint64_t per_word = 32 / static_cast<uint64_t>(mode.bits);
      if (sc.shape.back() * static_cast<uint64_t>(mode.group_size) == words * per_word) {
        lq = {&mode, mode.bits, mode.group_size, ""};
        break;
      }
    }
  }
  if (lq.mode->mode != MlxMode::affine) return detect_fp_layer(ctx, l, lq, weight, scales, biases, base, q.has_value(), fail);
  if (!scales) return fail("no " + base + ".scales beside the U32 weight");
  if (!biases) return fail("no " + base + ".biases beside the U32 weight");
  const TensorRecord& sc = m.tensors[*scales];
  const TensorRecord& bi = m.tensors[*biases];
  if (sc.shape.size() != w.shape.size() || bi.shape.size() != w.shape.size()) {
    return fail("its scales " + dims_text(sc.shape) + " and biases " + dims_text(bi.shape) +
                " do not both have the weight's " + std::to_string(w.shape.size()) + " dimensions");
  }
  if (bi.dtype != sc.dtype) {
    return fail("its biases are " + std::string(stored_type_name(bi)) + ", its scales " +
                std::string(stored_type_name(sc)) + " (one dtype expected)");
  }
  quant::MlxParams p;
  p.out_features = product(leading(w.shape));  // every leading dimension (experts) folded in
  p.scale_dtype = sc.dtype;
  const uint64_t words = w.shape.back();
  int64_t bits = lq.bits, group_size = lq.group_size;
  if (bits == 0 || group_size == 0) {
    const auto pairs = fits(words, sc.shape.back());
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
  // Sizes agree; the leading dimensions must too (scales [experts * out, g] are not [experts, out, g]).
  if (leading(sc.shape) != leading(w.shape) || leading(bi.shape) != leading(w.shape)) {
    return fail("its scales " + dims_text(sc.shape) + " and biases " + dims_text(bi.shape) +
                " do not have the weight's leading dimensions " + dims_text(leading(w.shape)));
  }
  l.natural = sc.dtype;
  l.shape = leading(w.shape);
  l.shape.push_back(p.in_features);
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
    if (ctx.claimed(i) || t.dtype != DType::U32 || !has_stem_and_suffix(t.name, ".weight")) continue;
    const std::string base = t.name.substr(0, t.name.size() - 7);
    // A U32 weight is MLX's with a scales companion, or in a model with MLX's config.
    if (!q && !ctx.find(base + ".scales")) continue;
    detect_layer(ctx, q, i, base);
  }
  return {};
}

}  // namespace amn
