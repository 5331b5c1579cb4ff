// AWQ weights (AutoAWQ GEMM): `<base>.qweight` I32 [in, out / 8] + `.qzeros` + `.scales`,
// no g_idx. Runs after gptq.cpp, which takes every qweight of a GPTQ config and, without
// a config, the GPTQ-shaped ones. docs/formats/quantized/awq.md, "Detection".
#include <cctype>
#include <limits>
#include <string>

#include "kernels/quant/awq.h"
#include "schemes/context.h"
#include "schemes/util.h"

namespace amn {
namespace {

using schemes::has_stem_and_suffix;
using schemes::qconfig_string;

// Output row o is a nibble of qweight column o / 8 in every qweight row: each piece reads
// the whole layer.
class AwqOp final : public SchemeOp {
 public:
  AwqOp(quant::AwqParams p, std::vector<ByteRange> parts) : p_(p), parts_(std::move(parts)) {}
  std::vector<ByteRange> inputs(uint64_t, uint64_t) const override { return parts_; }
  Status run(std::span<const std::span<const uint8_t>> in, uint64_t b, uint64_t e, DType to,
             uint8_t* out) const override {
    const uint64_t n = (e - b) * p_.in_features * dtype_info(to).block_bytes;
    return quant::dequantize_awq_rows(p_, {in[0], in[1], in[2]}, b, e, to, {out, static_cast<size_t>(n)});
  }

 private:
  quant::AwqParams p_;
  std::vector<ByteRange> parts_;
};

struct AwqConfig {
  bool present = false;
  int64_t bits = 0, group_size = 0;  // 0: absent; group_size -1: one group
  std::string version;               // lower-cased: gemm, gemv, gemv_fast, marlin, ipex
  bool zero_point = true;
};

AwqConfig read_config(const SchemeContext& ctx) {
  AwqConfig c;
  if (qconfig_string(ctx, "quant_method") != "awq") return c;
  c.present = true;
  auto q = *ctx.quantization_config();
  if (q["bits"].get_int64().get(c.bits) != simdjson::SUCCESS) c.bits = 0;
  if (q["group_size"].get_int64().get(c.group_size) != simdjson::SUCCESS) c.group_size = 0;
  if (q["zero_point"].get_bool().get(c.zero_point) != simdjson::SUCCESS) c.zero_point = true;
  c.version = qconfig_string(ctx, "version");
  for (auto& ch : c.version) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return c;
}

void detect_layer(SchemeContext& ctx, const AwqConfig& c, uint32_t qweight, const std::string& base) {
  const Model& m = ctx.model();
  const auto qzeros = ctx.find(base + ".qzeros");
  const auto scales = ctx.find(base + ".scales");
  LogicalTensor l;
  l.name = base + ".weight";
  l.scheme = "awq";
  l.natural = DType::F16;
  l.parts.push_back({"qweight", qweight});
  if (qzeros) l.parts.push_back({"qzeros", *qzeros});
  if (scales) l.parts.push_back({"scales", *scales});
  auto fail = [&](std::string why) {
    l.error = std::move(why);
    ctx.claim(std::move(l));
  };
  const TensorRecord& qw = m.tensors[qweight];
  if (!c.version.empty() && c.version != "gemm")
    return fail("AWQ version '" + c.version + "' (another packing) is not handled; gemm is");
  if (!c.zero_point) return fail("AWQ without zero points (zero_point false) is not handled");
  if (!qzeros) return fail("no " + base + ".qzeros beside " + qw.name);
  if (!scales) return fail("no " + base + ".scales beside " + qw.name);
  const TensorRecord& qz = m.tensors[*qzeros];
  const TensorRecord& sc = m.tensors[*scales];
  if (qw.dtype != DType::I32 || qw.shape.size() != 2)
    return fail("its qweight is " + std::string(stored_type_name(qw)) + " " + dims_text(qw.shape) + " (I32, 2-D expected)");
  if (qz.dtype != DType::I32 || qz.shape.size() != 2)
    return fail("its qzeros is " + std::string(stored_type_name(qz)) + " " + dims_text(qz.shape) + " (I32, 2-D expected)");
  if (sc.shape.size() != 2) return fail("its scales shape " + dims_text(sc.shape) + " is not 2-D");
  if (c.bits != 0 && c.bits != 4) return fail("AWQ with " + std::to_string(c.bits) + " bits (AutoAWQ GEMM packs 4)");
  quant::AwqParams p;
  p.in_features = qw.shape[0];
  p.out_features = qw.shape[1] * 8;
  p.scale_dtype = sc.dtype;
  if (sc.shape[1] != p.out_features) {
    return fail("its scales " + dims_text(sc.shape) + " have " + std::to_string(sc.shape[1]) + " columns, but qweight " +
                dims_text(qw.shape) + " holds " + std::to_string(p.out_features) + " outputs (8 per column)");
  }
  const uint64_t groups = sc.shape[0];
  if (groups == 0 || p.in_features % groups != 0) {
    return fail("its " + std::to_string(groups) + " groups (scales rows) do not divide in_features " +
                std::to_string(p.in_features));
  }
  p.group_size = p.in_features / groups;
  if (c.group_size > 0 && static_cast<uint64_t>(c.group_size) != p.group_size) {
    return fail(ctx.quantization_config_source() + "'s group_size " + std::to_string(c.group_size) + " disagrees with the shapes' " +
                std::to_string(p.group_size) + " (" + std::to_string(groups) + " groups of scales for " +
                std::to_string(p.in_features) + " inputs)");
  }
  for (const TensorRecord* t : {&qw, &qz, &sc}) {
    if (t->nbytes > std::numeric_limits<size_t>::max()) return fail(t->name + " is too large for this build");
  }
  static const uint8_t anchor = 0;  // never read: validate_awq checks sizes only
  auto sized = [](const TensorRecord& t) { return std::span<const uint8_t>(&anchor, static_cast<size_t>(t.nbytes)); };
  if (auto v = quant::validate_awq(p, {sized(qw), sized(qz), sized(sc)}); !v) return fail(v.error().message);
  l.natural = sc.dtype;
  l.shape = {p.out_features, p.in_features};
  l.variant = "GEMM, 4-bit, " + (groups == 1 ? std::string("one group") : "group " + std::to_string(p.group_size));
  if (c.present && ctx.quantization_config_source() != "config.json") l.variant += " (" + ctx.quantization_config_source() + ")";
  l.op = std::make_shared<AwqOp>(p, std::vector<ByteRange>{ctx.range(qweight), ctx.range(*qzeros), ctx.range(*scales)});
  ctx.claim(std::move(l));
}

}  // namespace

Status detect_awq(SchemeContext& ctx) {
  const Model& m = ctx.model();
  const AwqConfig c = read_config(ctx);
  // Without an AWQ config only a qweight with qzeros counts (a lone `*.qweight` of
  // another kind is left alone); GPTQ-shaped ones were taken already.
  const bool other_method = !c.present && !qconfig_string(ctx, "quant_method").empty();
  if (other_method) return {};
  for (uint32_t i = 0; i < m.tensors.size(); ++i) {
    const TensorRecord& t = m.tensors[i];
    if (ctx.claimed(i) || !has_stem_and_suffix(t.name, ".qweight")) continue;
    const std::string base = t.name.substr(0, t.name.size() - 8);
    if (!c.present && !ctx.find(base + ".qzeros")) continue;
    detect_layer(ctx, c, i, base);
  }
  return {};
}

}  // namespace amn
