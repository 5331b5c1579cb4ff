#include "schemes/forget_nvfp4.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/text.h"
#include "kernels/lethe/nvfp4_encode.h"
#include "kernels/quant/fp4.h"
#include "schemes/forget_util.h"

namespace amn {
namespace {

// _DEFAULT_FUSED_MAPPINGS_LIST (llm-compressor entrypoints/model_free/microscale.py at
// ab1ba3ef): each target is `re:.*<suffix>$` under re.match, i.e. "ends with one of".
struct FusedTarget {
  std::array<std::string_view, 2> suffixes;  // alternatives; an empty one is unused
};
const std::vector<std::vector<FusedTarget>>& fused_mappings() {
  static const std::vector<std::vector<FusedTarget>> m = {
      {{{"attn.q_proj.weight", "attention.q_proj.weight"}},
       {{"attn.k_proj.weight", "attention.k_proj.weight"}},
       {{"attn.v_proj.weight", "attention.v_proj.weight"}}},
      {{{"attn.wq_a.weight", "attention.wq_a.weight"}}, {{"attn.wkv_a_with_mqa.weight", "attention.wkv_a_with_mqa.weight"}}},
      {{{"mlp.gate_proj.weight", ""}}, {{"mlp.up_proj.weight", ""}}},
      {{{"w1.weight", ""}}, {{"w3.weight", ""}}},
  };
  return m;
}

bool matches(const FusedTarget& t, std::string_view name) {
  return std::any_of(t.suffixes.begin(), t.suffixes.end(),
                     [&](std::string_view s) { return !s.empty() && name.ends_with(s); });
}

// match_names_set_eager's natural_key: digit runs compare as integers, the rest as text.
bool natural_less(std::string_view a, std::string_view b) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0, j = 0;
  while (true) {
    // a text run (possibly empty), then a digit run, alternating, as re.split(r"(\d+)") gives
    size_t i1 = i, j1 = j;
    while (i1 < a.size() && !digit(a[i1])) ++i1;
    while (j1 < b.size() && !digit(b[j1])) ++j1;
    if (int c = a.substr(i, i1 - i).compare(b.substr(j, j1 - j)); c != 0) return c < 0;
    if (i1 == a.size() || j1 == b.size()) return i1 == a.size() && j1 != b.size();
    size_t i2 = i1, j2 = j1;
    while (i2 < a.size() && digit(a[i2])) ++i2;
    while (j2 < b.size() && digit(b[j2])) ++j2;
    std::string_view da = a.substr(i1, i2 - i1), db = b.substr(j1, j2 - j1);
    while (da.size() > 1 && da[0] == '0') da.remove_prefix(1);
    while (db.size() > 1 && db[0] == '0') db.remove_prefix(1);
    if (da.size() != db.size()) return da.size() < db.size();
    if (int c = da.compare(db); c != 0) return c < 0;
    i = i2, j = j2;
  }
}

// The global scale of a fused set: generate_gparam on the largest amax of its members
// (Observer.get_global_scale, observers/base.py), known once every member's prepare ran.
class FusedGlobal {
 public:
  FusedGlobal(size_t members, DType dtype) : amax_(members, 0.0f), dtype_(dtype) {}
  size_t size() const { return amax_.size(); }
  void put(size_t member, float amax) {
    std::lock_guard lock(mutex_);
    amax_[member] = amax;
  }
  float global() const {
    std::call_once(once_, [&] {
      float m = 0;
      for (float a : amax_) m = (a != a || m != m) ? a + m : std::max(m, a);  // torch.max: NaN propagates
      global_ = lethe::nvfp4_global_scale(m, dtype_);
    });
    return global_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<float> amax_;
  DType dtype_;
  mutable std::once_flag once_;
  mutable float global_ = 1.0f;
};

class Nvfp4Op final : public EncodeOp {
 public:
  Nvfp4Op(const TensorRecord& t, std::shared_ptr<FusedGlobal> group, size_t member)
      : rows_(t.shape[0]), cols_(t.shape[1]), dtype_(t.dtype), group_(std::move(group)), member_(member) {
    const std::string base = module_of(t.name);
    specs_.push_back({base + ".weight_packed", DType::U8, {rows_, cols_ / 2}, rows_ * cols_ / 2});
    specs_.push_back({base + ".weight_scale", DType::F8_E4M3, {rows_, cols_ / 16}, rows_ * cols_ / 16});
    specs_.push_back({base + ".weight_global_scale", DType::F32, {1}, 4});
  }
  std::span<const TensorSpec> outputs() const override { return specs_; }
  uint64_t granularity(size_t part) const override { return part == 0 ? cols_ / 2 : part == 1 ? cols_ / 16 : 4; }
  LetheSums distance() const override { return sums_.total(); }
  // A fused member's global scale needs its partners' amax: each member reads its own
  // source once before the pieces run (the executor's prepare pass keeps streaming).
  bool needs_prepare() const override { return group_->size() > 1; }
  Status prepare(std::span<const uint8_t> source, DType from) const override {
    group_->put(member_, source_absmax(source, from, rows_ * cols_));
    return {};
  }

  Status run(std::span<const uint8_t> source, DType from, size_t part, uint64_t begin, uint64_t end,
             uint8_t* out) const override {
    const float global = global_scale(source, from);
    if (part == 2) {
      std::memcpy(out, &global, 4);
      return {};
    }
    const uint64_t row_bytes = part == 0 ? cols_ / 2 : cols_ / 16;
    const uint64_t r0 = begin / row_bytes, r1 = end / row_bytes;
    std::vector<float> values((r1 - r0) * cols_);
    std::vector<uint8_t> scales((r1 - r0) * (cols_ / 16));
    load_f32(source, from, r0 * cols_, values.size(), values.data());
    lethe::nvfp4_block_scales(values.data(), cols_, r0, r1, dtype_, global, part == 1 ? out : scales.data());
    if (part == 1) return {};
    lethe::nvfp4_quantize_rows(values.data(), cols_, r0, r1, scales.data(), global, out);
    // NVFP4PackedCompressor.decompress: what the producer's own loader gives back.
    std::vector<float> back(values.size());
    quant::Nvfp4Params p{quant::Nvfp4Layout::compressed_tensors, rows_, cols_, global};
    quant::dequantize_nvfp4_rows(p, out, scales.data(), r0, r1, DType::F32, reinterpret_cast<uint8_t*>(back.data()));
    LetheSums sums;
    for (size_t k = 0; k < values.size(); ++k) sums.add(values[k], back[k]);
    sums_.put(begin, sums);
    return {};
  }

 private:
  float global_scale(std::span<const uint8_t> source, DType from) const {
    if (group_->size() == 1) {
      std::call_once(own_once_, [&] { group_->put(0, source_absmax(source, from, rows_ * cols_)); });
    }
    return group_->global();
  }

  uint64_t rows_, cols_;
  DType dtype_;
  std::shared_ptr<FusedGlobal> group_;
  size_t member_;
  std::vector<TensorSpec> specs_;
  mutable std::once_flag own_once_;
  mutable SumsByPiece sums_;
};

class Nvfp4Forgetter final : public Forgetter {
 public:
  // targets ["Linear"], ignore ["lm_head"]: transformers' Linear rule, as for fp8-channel.
  std::string default_keep_reason(const TensorRecord& t) const override { return linear_keep_reason(t); }
  std::string cannot_hold(const TensorRecord& t) const override {
    if (auto why = not_forgettable(t); !why.empty()) return why;
    if (t.shape.size() != 2 || t.elements == 0) return "compressed-tensors quantizes 2-D Linear weights only";
    // validate_weight_for_quantization: the group size must divide the columns.
    if (t.shape[1] % 16) return "its " + std::to_string(t.shape[1]) + " columns are not a multiple of 16 (llm-compressor refuses it)";
    return {};
  }
  std::shared_ptr<const EncodeOp> encode(const TensorRecord& t) const override {
    return std::make_shared<Nvfp4Op>(t, std::make_shared<FusedGlobal>(1, t.dtype), 0);
  }
  // process_file_microscale_scheme: the sets come from every name of the model; only the
  // quantized members share (a skipped partner is left out of the set's amax).
  Result<std::vector<std::shared_ptr<const EncodeOp>>> encode_chosen(
      const Model& model, std::span<const TensorRecord* const> chosen) const override {
    std::vector<std::string> names;
    for (const auto& t : model.tensors) names.push_back(t.name);
    AMN_ASSIGN(auto sets, nvfp4_fused_sets(names));
    std::vector<std::shared_ptr<const EncodeOp>> ops(chosen.size());
    std::vector<size_t> chosen_at(model.tensors.size(), SIZE_MAX);  // model index -> chosen index
    for (size_t i = 0; i < chosen.size(); ++i) chosen_at[static_cast<size_t>(chosen[i] - model.tensors.data())] = i;
    for (const auto& set : sets) {
      std::vector<size_t> members;
      for (size_t m : set) {
        if (chosen_at[m] != SIZE_MAX) members.push_back(chosen_at[m]);
      }
      if (members.size() < 2) continue;
      // torch.max over the members' statistics: one dtype, or F32 when they differ.
      DType dtype = chosen[members[0]]->dtype;
      for (size_t c : members) {
        if (chosen[c]->dtype != dtype) dtype = DType::F32;
      }
      auto group = std::make_shared<FusedGlobal>(members.size(), dtype);
      for (size_t k = 0; k < members.size(); ++k) ops[members[k]] = std::make_shared<Nvfp4Op>(*chosen[members[k]], group, k);
    }
    for (size_t i = 0; i < chosen.size(); ++i) {
      if (!ops[i]) ops[i] = encode(*chosen[i]);
    }
    return ops;
  }
  // model_free_ptq(scheme="NVFP4A16", ignore=["lm_head"]): update_config's dump, keys
  // sorted (fixtures/lethe/nvfp4/README.md, "config.json"). No "version": it is the
  // installed compressed-tensors' own.
  std::string quantization_config_json() const override {
    return "{\"config_groups\":{\"NVFP4A16\":{\"format\":\"nvfp4-pack-quantized\",\"input_activations\":null,"
           "\"output_activations\":null,\"targets\":[\"Linear\"],\"weights\":{\"actorder\":null,\"block_structure\":null,"
           "\"dynamic\":false,\"group_size\":16,\"num_bits\":4,\"observer\":\"memoryless_minmax\",\"observer_kwargs\":{},"
           "\"scale_dtype\":\"torch.float8_e4m3fn\",\"strategy\":\"tensor_group\",\"symmetric\":true,\"type\":\"float\","
           "\"zp_dtype\":null}}},\"format\":\"nvfp4-pack-quantized\",\"global_compression_ratio\":null,"
           "\"ignore\":[\"lm_head\"],\"kv_cache_scheme\":null,\"quant_method\":\"compressed-tensors\","
           "\"quantization_status\":\"compressed\",\"transform_config\":{}}";
  }
  std::string describe() const override {
    return "nvfp4 (compressed-tensors, E2M1 with E4M3 scales per 16 and a global scale per fused set)";
  }
};

}  // namespace

Result<std::vector<std::vector<size_t>>> nvfp4_fused_sets(const std::vector<std::string>& names) {
  std::vector<size_t> order(names.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return natural_less(names[a], names[b]); });
  std::vector<std::vector<size_t>> sets;
  for (const auto& targets : fused_mappings()) {
    std::vector<size_t> found(targets.size(), SIZE_MAX);
    for (size_t i : order) {
      for (size_t k = 0; k < targets.size(); ++k) {
        if (!matches(targets[k], names[i])) continue;
        if (found[k] != SIZE_MAX) {
          return make_error(ErrorCode::unsupported, "nvfp4: " + quote(names[i]) + " and " + quote(names[found[k]]) +
                                                             " would share a fused set (llm-compressor refuses the model)");
        }
        found[k] = i;
      }
      if (std::none_of(found.begin(), found.end(), [](size_t f) { return f == SIZE_MAX; })) {
        sets.push_back(found);
        std::fill(found.begin(), found.end(), SIZE_MAX);
      }
    }
  }
  return sets;
}

Result<std::unique_ptr<Forgetter>> make_nvfp4_forgetter(const ForgetSettings& s) {
  AMN_TRY(no_bnb_settings(s));
  return std::unique_ptr<Forgetter>(std::make_unique<Nvfp4Forgetter>());
}

}  // namespace amn
