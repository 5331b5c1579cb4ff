#include "schemes/forget_bnb.h"

#include <algorithm>
#include <cstring>
#include <mutex>  // std::call_once
#include <vector>

#include "core/json.h"
#include "schemes/forget_util.h"
#include "kernels/cast.h"
#include "kernels/lethe/bnb_encode.h"
#include "kernels/quant/bnb.h"

namespace amn {
namespace {

using quant::Bnb4Type;

constexpr uint64_t kNestedBlocksize = 256;  // functional.quantize_4bit: quantize_blockwise(..., blocksize=256)
constexpr uint64_t kChunk = 1u << 16;       // elements converted to F32 at a time

std::string_view torch_dtype_name(DType t) {
  switch (t) {
    case DType::BF16: return "bfloat16";
    case DType::F16: return "float16";
    default: return "float32";
  }
}


// ---- 4-bit ----

class Bnb4Op final : public EncodeOp {
 public:
  Bnb4Op(const TensorRecord& t, Bnb4Type type, uint64_t blocksize, bool nested, unsigned torch_threads)
      : type_(type), blocksize_(blocksize), nested_(nested), torch_threads_(torch_threads), n_(t.elements),
        blocks_((t.elements + blocksize - 1) / blocksize) {
    const std::string& w = t.name;
    specs_.push_back({w, DType::U8, {(n_ + 1) / 2, 1}, (n_ + 1) / 2});
    specs_.push_back({w + ".absmax", nested ? DType::U8 : DType::F32, {blocks_}, blocks_ * (nested ? 1 : 4)});
    specs_.push_back({w + ".quant_map", DType::F32, {16}, 64});
    if (nested) {
      const uint64_t nb = (blocks_ + kNestedBlocksize - 1) / kNestedBlocksize;
      specs_.push_back({w + ".nested_absmax", DType::F32, {nb}, nb * 4});
      specs_.push_back({w + ".nested_quant_map", DType::F32, {256}, 1024});
    }
    dtype_ = t.dtype;
    shape_ = t.shape;
    state_name_ = w + ".quant_state.bitsandbytes__" + std::string(type == Bnb4Type::nf4 ? "nf4" : "fp4");
    // With double quantization the state's JSON holds the mean of the absmax, so its
    // length is known once prepare() has seen the values.
    const uint64_t state_bytes = nested ? 0 : state_json(0).size();
    specs_.push_back({state_name_, DType::U8, {state_bytes}, state_bytes});
  }

  bool needs_prepare() const override { return nested_; }
  Status prepare(std::span<const uint8_t> source, DType from) const override {
    const uint64_t bytes = state_json(stats(source, from).offset).size();
    specs_.back().shape = {bytes};
    specs_.back().nbytes = bytes;
    return {};
  }

  std::span<const TensorSpec> outputs() const override { return specs_; }
  uint64_t granularity(size_t part) const override {
    return part == 0 ? blocksize_ / 2 : std::max<uint64_t>(1, specs_[part].nbytes);
  }

  Status run(std::span<const uint8_t> source, DType from, size_t part, uint64_t begin, uint64_t end,
             uint8_t* out) const override;
  LetheSums distance() const override { return sums_.total(); }

  // The statistics every part needs (absmax, and for double quantization the offset,
  // codes and nested absmax), computed once from the whole source.
  struct Stats {
    std::vector<float> absmax;     // exact, per block
    std::vector<float> resolved;   // what the dequantizer sees (nested: rebuilt from the codes)
    std::vector<uint8_t> codes;    // nested: quantized absmax
    std::vector<float> nested_absmax;
    float offset = 0;
  };
  const Stats& stats(std::span<const uint8_t> source, DType from) const;
  std::string state_json(float offset) const;

 private:
  Bnb4Type type_;
  uint64_t blocksize_;
  bool nested_;
  unsigned torch_threads_;
  uint64_t n_, blocks_;
  DType dtype_ = DType::BF16;
  std::vector<uint64_t> shape_;
  std::string state_name_;
  mutable std::vector<TensorSpec> specs_;  // the quant_state's size is set by prepare()
  mutable std::once_flag once_;
  mutable Stats stats_;
  mutable SumsByPiece sums_;
};

const Bnb4Op::Stats& Bnb4Op::stats(std::span<const uint8_t> source, DType from) const {
  std::call_once(once_, [&] {
    Stats& s = stats_;
    s.absmax.resize(blocks_);
    const uint64_t step = std::max<uint64_t>(blocksize_, kChunk / blocksize_ * blocksize_);
    std::vector<float> values(step);
    for (uint64_t e = 0; e < n_; e += step) {
      const uint64_t n = std::min(step, n_ - e);
      load_f32(source, from, e, n, values.data());
      lethe::bnb4_absmax(values.data(), n, blocksize_, s.absmax.data() + e / blocksize_);
    }
    if (!nested_) {
      s.resolved = s.absmax;
      return;
    }
    s.codes.resize(blocks_);
    s.nested_absmax.resize((blocks_ + kNestedBlocksize - 1) / kNestedBlocksize);
    s.offset = lethe::bnb4_double_quant(s.absmax.data(), blocks_, s.codes.data(), s.nested_absmax.data(), torch_threads_);
    s.resolved.resize(blocks_);
    quant::resolve_bnb_nested_absmax(s.codes.data(), blocks_, reinterpret_cast<const uint8_t*>(lethe::bnb_dynamic_map()),
                                     reinterpret_cast<const uint8_t*>(s.nested_absmax.data()), kNestedBlocksize,
                                     s.offset, s.resolved.data());
  });
  return stats_;
}

// QuantState.as_dict(packed=True)'s non-tensor items through pack_dict_to_tensor:
// json.dumps with its default separators, in as_dict's key order.
std::string Bnb4Op::state_json(float offset) const {
  std::string o = "{\"quant_type\": \"";
  o += type_ == Bnb4Type::nf4 ? "nf4" : "fp4";
  o += "\", \"blocksize\": " + std::to_string(blocksize_) + ", \"dtype\": \"" + std::string(torch_dtype_name(dtype_)) +
       "\", \"shape\": [";
  for (size_t i = 0; i < shape_.size(); ++i) o += (i ? ", " : "") + std::to_string(shape_[i]);
  o += "]";
  if (nested_) {
    o += ", \"nested_blocksize\": " + std::to_string(kNestedBlocksize) +
         ", \"nested_dtype\": \"float32\", \"nested_offset\": " + python_float_repr(static_cast<double>(offset));
  }
  return o + "}";
}

Status Bnb4Op::run(std::span<const uint8_t> source, DType from, size_t part, uint64_t begin, uint64_t end,
                   uint8_t* out) const {
  const Stats& s = stats(source, from);
  const std::string_view role = std::string_view(specs_[part].name).substr(specs_[0].name.size());
  if (part == 0) {
    // Bytes [begin, end) hold elements [2 begin, 2 end), whole blocks but the last.
    const uint64_t e0 = begin * 2, e1 = std::min(end * 2, n_);
    const uint64_t step = std::max<uint64_t>(blocksize_, kChunk / blocksize_ * blocksize_);
    std::vector<float> values(step), back(step), absmax(step / blocksize_ + 1);
    LetheSums sums;
    for (uint64_t e = e0; e < e1; e += step) {
      const uint64_t n = std::min(step, e1 - e);
      load_f32(source, from, e, n, values.data());
      uint8_t* packed = out + (e - e0) / 2;
      lethe::bnb4_quantize(type_, values.data(), n, blocksize_, packed, absmax.data());
      quant::Bnb4Params p{type_, n, blocksize_};
      // The dequantizer's view: element k of this run uses block (e + k) / blocksize.
      const std::span<const float> resolved(s.resolved.data() + e / blocksize_, (n + blocksize_ - 1) / blocksize_);
      quant::dequantize_bnb4(p, packed, resolved, 0, n, DType::F32, reinterpret_cast<uint8_t*>(back.data()));
      for (uint64_t k = 0; k < n; ++k) sums.add(values[k], back[k]);
    }
    sums_.put(begin, sums);
    return {};
  }
  if (role == ".absmax") {
    if (nested_) std::memcpy(out, s.codes.data() + begin, end - begin);
    else std::memcpy(out, reinterpret_cast<const uint8_t*>(s.absmax.data()) + begin, end - begin);
  } else if (role == ".quant_map") {
    std::memcpy(out, reinterpret_cast<const uint8_t*>(lethe::bnb4_quant_map(type_)) + begin, end - begin);
  } else if (role == ".nested_absmax") {
    std::memcpy(out, reinterpret_cast<const uint8_t*>(s.nested_absmax.data()) + begin, end - begin);
  } else if (role == ".nested_quant_map") {
    std::memcpy(out, reinterpret_cast<const uint8_t*>(lethe::bnb_dynamic_map()) + begin, end - begin);
  } else {  // the quant_state
    const std::string json = state_json(s.offset);
    if (json.size() != specs_[part].nbytes) return make_error(ErrorCode::internal, "quant_state length changed");
    std::memcpy(out, json.data() + begin, end - begin);
  }
  return {};
}

// ---- LLM.int8() ----

class Int8Op final : public EncodeOp {
 public:
  explicit Int8Op(const TensorRecord& t) : rows_(t.shape[0]), cols_(t.shape[1]) {
    const std::string base = module_of(t.name);
    specs_.push_back({t.name, DType::I8, {rows_, cols_}, rows_ * cols_});
    specs_.push_back({base + ".SCB", DType::F32, {rows_}, rows_ * 4});
    specs_.push_back({base + ".weight_format", DType::U8, {}, 1});
  }
  std::span<const TensorSpec> outputs() const override { return specs_; }
  uint64_t granularity(size_t part) const override { return part == 0 ? std::max<uint64_t>(1, cols_) : (part == 1 ? 4 : 1); }
  LetheSums distance() const override { return sums_.total(); }

  Status run(std::span<const uint8_t> source, DType from, size_t part, uint64_t begin, uint64_t end,
             uint8_t* out) const override {
    if (part == 2) {  // weight_format 0: "row" (transformers' Int8Params serialisation)
      out[0] = 0;
      return {};
    }
    std::vector<float> row(cols_), back(cols_);
    std::vector<int8_t> q(cols_);
    const uint64_t r0 = part == 0 ? begin / cols_ : begin / 4, r1 = part == 0 ? end / cols_ : end / 4;
    LetheSums sums;
    for (uint64_t r = r0; r < r1; ++r) {
      float scb = 0;
      load_f32(source, from, r * cols_, cols_, row.data());
      int8_t* dst = part == 0 ? reinterpret_cast<int8_t*>(out + (r - r0) * cols_) : q.data();
      lethe::bnb_int8_quantize_row(row.data(), cols_, dst, &scb);
      if (part == 1) {
        std::memcpy(out + (r - r0) * 4, &scb, 4);
        continue;
      }
      quant::dequantize_bnb_int8_rows(cols_, reinterpret_cast<const uint8_t*>(dst),
                                      reinterpret_cast<const uint8_t*>(&scb) - r * 4, r, r + 1, DType::F32,
                                      reinterpret_cast<uint8_t*>(back.data()));
      for (uint64_t k = 0; k < cols_; ++k) sums.add(row[k], back[k]);
    }
    if (part == 0) sums_.put(begin, sums);
    return {};
  }

 private:
  uint64_t rows_, cols_;
  std::vector<TensorSpec> specs_;
  mutable SumsByPiece sums_;
};

// ---- the forgetter: transformers' choice of layers ----


class BnbForgetter final : public Forgetter {
 public:
  BnbForgetter(std::string scheme, uint64_t blocksize, bool nested, unsigned torch_threads = 1)
      : scheme_(std::move(scheme)), blocksize_(blocksize), nested_(nested), torch_threads_(torch_threads) {}

  std::string default_keep_reason(const TensorRecord& t) const override { return linear_keep_reason(t); }

  std::string cannot_hold(const TensorRecord& t) const override {
    if (auto why = not_forgettable(t); !why.empty()) return why;
    if (t.elements == 0) return "it has no elements";
    if (scheme_ == "int8" && t.shape.size() != 2) return "LLM.int8() quantizes 2-D weights only";
    return {};
  }

  std::shared_ptr<const EncodeOp> encode(const TensorRecord& t) const override {
    if (scheme_ == "int8") return std::make_shared<Int8Op>(t);
    return std::make_shared<Bnb4Op>(t, scheme_ == "nf4" ? Bnb4Type::nf4 : Bnb4Type::fp4, blocksize_, nested_, torch_threads_);
  }

  // BitsAndBytesConfig.to_dict() as transformers writes it into config.json.
  std::string quantization_config_json() const override {
    const bool four = scheme_ != "int8";
    JsonWriter w;
    w.begin_object();
    w.key("_load_in_4bit").value(four).key("_load_in_8bit").value(!four);
    w.key("bnb_4bit_compute_dtype").value("float32").key("bnb_4bit_quant_storage").value("uint8");
    w.key("bnb_4bit_quant_type").value(four ? scheme_ : std::string("fp4"));
    w.key("bnb_4bit_use_double_quant").value(four && nested_);
    w.key("llm_int8_enable_fp32_cpu_offload").value(false).key("llm_int8_has_fp16_weight").value(false);
    w.key("llm_int8_skip_modules").null().key("llm_int8_threshold").raw("6.0");
    w.key("load_in_4bit").value(four).key("load_in_8bit").value(!four);
    w.key("quant_method").value("bitsandbytes");
    return w.end_object().take();
  }

  std::string describe() const override {
    if (scheme_ == "int8") return "bitsandbytes LLM.int8(), one scale per row";
    return "bitsandbytes " + scheme_ + ", blocksize " + std::to_string(blocksize_) +
           (nested_ ? ", double quantization" : "");
  }

 private:
  std::string scheme_;
  uint64_t blocksize_;
  bool nested_;
  unsigned torch_threads_;
};

}  // namespace

Result<std::unique_ptr<Forgetter>> make_bnb_forgetter(const ForgetSettings& s) {
  if (s.scheme == "int8") {
    if (s.blocksize || s.double_quant || s.torch_threads != 1) {
      return make_error(ErrorCode::invalid_argument, "int8 has no blocksize or double quantization (4-bit only)");
    }
    return std::unique_ptr<Forgetter>(std::make_unique<BnbForgetter>(s.scheme, 0, false));
  }
  const uint64_t b = s.blocksize ? s.blocksize : 64;  // quantize_4bit's default
  if (b < 32 || b > 4096 || (b & (b - 1)) != 0) {
    return make_error(ErrorCode::invalid_argument,
                      "blocksize " + std::to_string(b) + ": bitsandbytes takes a power of two from 32 to 4096");
  }
  if (s.torch_threads != 1 && !s.double_quant) {
    return make_error(ErrorCode::invalid_argument, "torchThreads: the thread count matters only with double quantization");
  }
  return std::unique_ptr<Forgetter>(std::make_unique<BnbForgetter>(s.scheme, b, s.double_quant, s.torch_threads));
}

}  // namespace amn
