// forget --to gguf --like G.gguf [--reuse-scales]: G's ggml type for every tensor it has
// (llama-quantize's --tensor-type for each), and with --reuse-scales G's block scales.
#include <map>
#include <string>

#include "core/ggml_type.h"
#include "core/text.h"
#include "formats/gguf/describe.h"
#include "kernels/ggml/quantize.h"
#include "kernels/ggml/requantize.h"
#include "schemes/forget_gguf.h"

namespace amn {
namespace {

struct RefTensor {
  GgmlType type = kNoGgmlType;
  std::string type_name;         // as stored, for messages
  std::vector<uint64_t> shape;   // row-major
  std::shared_ptr<const std::vector<uint8_t>> blocks;  // --reuse-scales: G's bytes of a block type
};

class GgufLikeForgetter final : public Forgetter {
 public:
  GgufLikeForgetter(std::map<std::string, RefTensor> tensors, bool reuse, std::vector<GgufKv> kv)
      : tensors_(std::move(tensors)), reuse_(reuse), kv_(std::move(kv)) {}

  // A tensor already stored as G's type is copied, as llama-quantize copies one.
  std::string default_keep_reason(const TensorRecord& t) const override {
    const RefTensor* r = find(t.name);
    if (!r) return "not in the reference";
    if (r->type == kNoGgmlType) return "it is " + r->type_name + " in the reference, a type forget does not write";
    const GgmlTraits& info = *ggml_traits(r->type);
    if ((t.block_type.empty() && info.dtype == t.dtype) || (!t.block_type.empty() && t.ggml_type == r->type)) {
      return "already " + std::string(info.name);
    }
    return {};
  }

  std::string cannot_hold(const TensorRecord& t) const override {
    const RefTensor* r = find(t.name);
    if (!r) return "not in the reference";
    if (r->shape != t.shape) return "its shape differs from the reference's";
    if (!t.block_type.empty() || !is_forgettable_dtype(t.dtype)) {
      return "stored as " + std::string(stored_type_name(t)) + " (forget --like reads F16, BF16 or F32: remember it first)";
    }
    if (t.elements == 0) return "it has no elements";
    if (r->type == kNoGgmlType || (r->type != GgmlType::F32 && !ggml_can_quantize(r->type))) {
      return "it is " + r->type_name + " in the reference, which amn cannot write yet";
    }
    if (!reuse_ && ggml_quantize_requires_imatrix(r->type)) {
      return "it is " + r->type_name + " in the reference, which ggml makes only with an importance matrix (--reuse-scales needs none)";
    }
    return {};
  }

  std::shared_ptr<const EncodeOp> encode(const TensorRecord& t) const override {
    const RefTensor& r = *find(t.name);
    return make_gguf_op(t, r.type, reuse_ ? r.blocks : nullptr);
  }

  std::string quantization_config_json() const override { return "null"; }

  std::string describe() const override {
    std::map<std::string, int> count;  // G's quantized types (its F32 tensors are mostly copied)
    for (const auto& [_, r] : tensors_) count[r.type_name] += r.type != GgmlType::F32;
    std::erase_if(count, [](const auto& c) { return c.second == 0; });
    std::string out = "like the GGUF reference";
    for (const auto& [name, n] : count) out += (out.size() > 23 ? ", " : ": ") + name + " x" + std::to_string(n);
    return out + (reuse_ ? " (its scales reused)" : "");
  }

  // Every tensor of G is in the input, with G's shape.
  Status check_input(const Model& input) const override {
    for (const auto& [name, r] : tensors_) {
      const TensorRecord* t = input.find(name);
      if (!t) return make_error(ErrorCode::invalid_argument, "--like: the reference has " + quote(name) + ", which the input lacks");
      if (t->shape != r.shape) {
        return make_error(ErrorCode::invalid_argument, "--like: " + quote(name) + " is " + dims_text(t->shape) + " in the input, " +
                                                           dims_text(r.shape) + " in the reference");
      }
    }
    return {};
  }

  std::optional<std::vector<GgufKv>> gguf_reference_kv() const override { return kv_; }

 private:
  const RefTensor* find(const std::string& name) const {
    const auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
  }

  std::map<std::string, RefTensor> tensors_;
  bool reuse_;
  std::vector<GgufKv> kv_;
};

}  // namespace

Result<std::unique_ptr<Forgetter>> make_gguf_like_forgetter(const Model& ref, FileSet& files, bool reuse, std::string_view scheme) {
  if (!scheme.empty()) {
    return make_error(ErrorCode::invalid_argument, "--like: a GGUF reference gives each tensor its own type: leave out --scheme");
  }
  if (ref.tensors.empty()) return make_error(ErrorCode::invalid_argument, "--like: the reference has no tensors");
  std::map<std::string, RefTensor> tensors;
  std::vector<ByteRange> ranges;  // --reuse-scales: G's blocks, read in one round
  std::vector<std::string> read_for;
  for (const TensorRecord& t : ref.tensors) {
    RefTensor r;
    r.type = t.ggml_type != kNoGgmlType ? t.ggml_type : ggml_type_of(t.dtype).value_or(kNoGgmlType);
    r.type_name = std::string(stored_type_name(t));
    r.shape = t.shape;
    if (reuse && !t.block_type.empty() && r.type != kNoGgmlType && ggml_can_requantize(r.type)) {
      ranges.push_back({t.file, t.offset, t.nbytes});
      read_for.push_back(t.name);
    }
    tensors[t.name] = std::move(r);
  }
  AMN_ASSIGN(auto copies, read_copies(files, ranges));
  for (size_t i = 0; i < copies.size(); ++i) {
    tensors[read_for[i]].blocks = std::make_shared<const std::vector<uint8_t>>(std::move(copies[i]));
  }
  // llama-quantize's KVs, as G carries them.
  std::vector<GgufKv> kv;
  if (ref.format_state) {
    const GgufFile& g = static_cast<const GgufState&>(*ref.format_state).header;
    for (const char* key : {"general.quantization_version", "general.file_type"}) {
      if (const GgufValue* v = g.find(key)) kv.push_back({key, *v});
    }
  }
  return std::unique_ptr<Forgetter>(std::make_unique<GgufLikeForgetter>(std::move(tensors), reuse, std::move(kv)));
}

}  // namespace amn
