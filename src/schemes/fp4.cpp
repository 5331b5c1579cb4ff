// FP4 (E2M1) weights with block scales: MXFP4 as gpt-oss ships it (`<p>_blocks` +
// `<p>_scales`, E8M0 per 32) and NVFP4 in its two layouts, ModelOpt (`weight`,
// `weight_scale`, `weight_scale_2`) and compressed-tensors (`weight_packed`,
// `weight_scale`, `weight_global_scale`), F8_E4M3 per 16 plus one F32 global scale.
// docs/formats/quantized/mxfp4.md, nvfp4.md.
#include <cmath>
#include <cstring>
#include <string>

#include "kernels/quant/fp4.h"
#include "schemes/context.h"
#include "schemes/util.h"

namespace amn {
namespace {

using schemes::ceil_div;
using schemes::has_stem_and_suffix;
using schemes::qconfig_string;

class Mxfp4Op final : public SchemeOp {
 public:
  Mxfp4Op(quant::Mxfp4Params p, ByteRange blocks, ByteRange scales) : p_(p), blocks_(blocks), scales_(scales) {}
  std::vector<ByteRange> inputs(uint64_t b, uint64_t e) const override {
    return {ByteRange{blocks_.file, blocks_.offset + b * p_.groups * 16, (e - b) * p_.groups * 16},
            ByteRange{scales_.file, scales_.offset + b * p_.groups, (e - b) * p_.groups}};
  }
  Status run(std::span<const std::span<const uint8_t>> in, uint64_t b, uint64_t e, DType to,
             uint8_t* out) const override {
    quant::dequantize_mxfp4_rows(p_, in[0].data(), in[1].data(), b, e, to, out);
    return {};
  }

 private:
  quant::Mxfp4Params p_;
  ByteRange blocks_, scales_;
};

// gpt-oss: `<p>_blocks` U8 [..., rows, groups, 16] with `<p>_scales` [..., rows, groups].
// A U8 `*_blocks` without scales is only an error in a model that says it is MXFP4.
void detect_mxfp4(SchemeContext& ctx) {
  const Model& m = ctx.model();
  const bool configured = qconfig_string(ctx, "quant_method") == "mxfp4";
  for (uint32_t i = 0; i < m.tensors.size(); ++i) {
    const TensorRecord& w = m.tensors[i];
    if (ctx.claimed(i) || w.dtype != DType::U8 || !has_stem_and_suffix(w.name, "_blocks")) continue;
    const std::string base = w.name.substr(0, w.name.size() - 7);
    const auto s = ctx.find(base + "_scales");
    if (!s && !configured) continue;
    LogicalTensor l;
    l.name = base;
    l.scheme = "mxfp4";
    l.variant = "e2m1, 32 per E8M0 scale";
    l.natural = DType::BF16;  // convert_moe_packed_tensors' default dtype, gpt-oss' torch_dtype
    l.parts.push_back({"blocks", i});
    auto fail = [&](std::string why) {
      l.error = std::move(why);
      ctx.claim(std::move(l));
    };
    if (!s) {
      fail("no " + base + "_scales beside the blocks");
      continue;
    }
    l.parts.push_back({"scales", *s});
    const TensorRecord& st = m.tensors[*s];
    if (w.shape.size() < 3 || w.shape.back() != 16) {
      fail("blocks shape " + dims_text(w.shape) + " is not [..., rows, groups, 16] (16 bytes per 32 values)");
      continue;
    }
    if (st.dtype != DType::U8 && st.dtype != DType::F8_E8M0) {
      fail("its scales are " + std::string(stored_type_name(st)) + " (U8 or F8_E8M0 expected)");
      continue;
    }
    const std::vector<uint64_t> grid(w.shape.begin(), w.shape.end() - 1);
    if (st.shape != grid) {
      fail("its scales shape " + dims_text(st.shape) + " is not the blocks' " + dims_text(grid) +
           " (one per 32 values)");
      continue;
    }
    quant::Mxfp4Params p;
    p.groups = w.shape[w.shape.size() - 2];
    p.rows = 1;
    for (size_t d = 0; d + 2 < w.shape.size(); ++d) p.rows *= w.shape[d];  // fits: the record's size did
    if (auto v = quant::validate_mxfp4(p, w.nbytes, st.nbytes); !v) {
      fail(v.error().message);
      continue;
    }
    // The nn.Linear orientation [experts, out, in]; transformers returns its transpose.
    l.shape.assign(w.shape.begin(), w.shape.end() - 2);
    l.shape.push_back(p.groups * 32);
    l.op = std::make_shared<Mxfp4Op>(p, ctx.range(i), ctx.range(*s));
    ctx.claim(std::move(l));
  }
}

class Nvfp4Op final : public SchemeOp {
 public:
  Nvfp4Op(quant::Nvfp4Params p, ByteRange packed, ByteRange scales, ByteRange global, std::string global_name)
      : p_(p), packed_(packed), scales_(scales), global_(global), global_name_(std::move(global_name)) {}
  std::vector<ByteRange> inputs(uint64_t b, uint64_t e) const override {
    return {ByteRange{packed_.file, packed_.offset + b * (p_.cols / 2), (e - b) * (p_.cols / 2)},
            ByteRange{scales_.file, scales_.offset + b * (p_.cols / 16), (e - b) * (p_.cols / 16)}, global_};
  }
  Status run(std::span<const std::span<const uint8_t>> in, uint64_t b, uint64_t e, DType to,
             uint8_t* out) const override {
    // The global scale is data, so it is checked here rather than at detection.
    quant::Nvfp4Params p = p_;
    std::memcpy(&p.global_scale, in[2].data(), 4);
    if (!std::isfinite(p.global_scale) || p.global_scale == 0.0f) {
      return make_error(ErrorCode::parse, "nvfp4: " + global_name_ + " is " + std::to_string(p.global_scale) +
                                              " (a finite, non-zero scale expected)");
    }
    quant::dequantize_nvfp4_rows(p, in[0].data(), in[1].data(), b, e, to, out);
    return {};
  }

 private:
  quant::Nvfp4Params p_;
  ByteRange packed_, scales_, global_;
  std::string global_name_;
};

struct Nvfp4Names {
  quant::Nvfp4Layout layout;
  const char* packed;  // suffix after "<base>."
  const char* global;
  DType natural;  // ModelOpt computes in F32 for every dtype; compressed-tensors returns BF16
  const char* label;
};

constexpr Nvfp4Names kNvfp4Layouts[] = {
    {quant::Nvfp4Layout::modelopt, "weight", "weight_scale_2", DType::F32, "ModelOpt"},
    {quant::Nvfp4Layout::compressed_tensors, "weight_packed", "weight_global_scale", DType::BF16, "compressed-tensors"},
};

bool detect_nvfp4(SchemeContext& ctx, const Nvfp4Names& names) {
  const Model& m = ctx.model();
  const bool configured = qconfig_string(ctx, "quant_algo") == "NVFP4" ||
                          qconfig_string(ctx, "format") == "nvfp4-pack-quantized";
  const std::string packed_suffix = std::string(".") + names.packed;
  bool any = false;
  for (uint32_t i = 0; i < m.tensors.size(); ++i) {
    const TensorRecord& w = m.tensors[i];
    if (ctx.claimed(i) || w.dtype != DType::U8 || !has_stem_and_suffix(w.name, packed_suffix)) continue;
    const std::string base = w.name.substr(0, w.name.size() - packed_suffix.size());
    const auto s = ctx.find(base + ".weight_scale");
    const auto g = ctx.find(base + "." + names.global);
    // A U8 weight with an E4M3 scale is NVFP4 whatever the config says; with only one of
    // the two companions, only when the config says NVFP4 (else: some other scheme's).
    const bool e4m3_scale = s && m.tensors[*s].dtype == DType::F8_E4M3;
    if (!e4m3_scale && !(configured && (s || g))) continue;
    any = true;
    LogicalTensor l;
    l.name = base + ".weight";
    l.scheme = "nvfp4";
    l.variant = std::string(names.label) + ", e2m1, 16 per E4M3 scale";
    l.natural = names.natural;
    l.parts.push_back({names.packed, i});
    auto fail = [&](std::string why) {
      l.error = std::move(why);
      ctx.claim(std::move(l));
    };
    if (s) l.parts.push_back({"weight_scale", *s});
    if (g) l.parts.push_back({names.global, *g});
    if (!s) {
      fail("no " + base + ".weight_scale beside the packed weight");
      continue;
    }
    if (!g) {
      fail("no " + base + "." + names.global + " beside the packed weight");
      continue;
    }
    const TensorRecord& st = m.tensors[*s];
    const TensorRecord& gt = m.tensors[*g];
    if (w.shape.size() != 2) {
      fail("the packed weight must be 2-D [out, in / 2], not " + dims_text(w.shape));
      continue;
    }
    quant::Nvfp4Params p;
    p.layout = names.layout;
    p.rows = w.shape[0];
    p.cols = w.shape[1] * 2;
    if (p.cols % 16 != 0) {
      fail("in_features " + std::to_string(p.cols) + " is not a multiple of 16 (the scale block)");
      continue;
    }
    if (st.dtype != DType::F8_E4M3) {
      fail("its weight_scale is " + std::string(stored_type_name(st)) + " (F8_E4M3 expected)");
      continue;
    }
    const std::vector<uint64_t> grid{p.rows, p.cols / 16};
    if (st.shape != grid) {
      fail("its weight_scale shape " + dims_text(st.shape) + " is not " + dims_text(grid) + " (one per 16 inputs)");
      continue;
    }
    if (gt.dtype != DType::F32 || gt.elements != 1) {
      fail("its " + std::string(names.global) + " is " + std::string(stored_type_name(gt)) + " " +
           dims_text(gt.shape) + " (one F32 value expected)");
      continue;
    }
    if (names.layout == quant::Nvfp4Layout::compressed_tensors && gt.shape.empty()) {
      // BF16 / 0-d F32 stays BF16 in PyTorch: the division would round differently.
      fail("its weight_global_scale is 0-d (compressed-tensors writes [1]; a 0-d one divides in BF16, not handled)");
      continue;
    }
    if (auto v = quant::validate_nvfp4(p, w.nbytes, st.nbytes); !v) {
      fail(v.error().message);
      continue;
    }
    l.shape = {p.rows, p.cols};
    l.op = std::make_shared<Nvfp4Op>(p, ctx.range(i), ctx.range(*s), ctx.range(*g), names.global);
    ctx.claim(std::move(l));
  }
  return any;
}

}  // namespace

Status detect_fp4(SchemeContext& ctx) {
  detect_mxfp4(ctx);
  bool any = false;
  for (const auto& names : kNvfp4Layouts) any = detect_nvfp4(ctx, names) || any;
  if (!any) return {};
  // Activation and KV-cache scales of an NVFP4 model: consumed, not output.
  const Model& m = ctx.model();
  for (uint32_t i = 0; i < m.tensors.size(); ++i) {
    if (ctx.claimed(i) || m.tensors[i].elements > 1) continue;
    for (std::string_view suffix : {".input_scale", ".input_global_scale", ".k_scale", ".v_scale"}) {
      if (has_stem_and_suffix(m.tensors[i].name, suffix)) ctx.consume(i);
    }
  }
  return {};
}

}  // namespace amn
