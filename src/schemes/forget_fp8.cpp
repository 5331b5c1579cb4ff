#include "schemes/forget_fp8.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/json.h"
#include "kernels/lethe/fp8_encode.h"
#include "kernels/quant/fp8.h"
#include "schemes/forget_util.h"

namespace amn {
namespace {

constexpr lethe::Fp8Block kBlock{128, 128};  // FineGrainedFP8Config's default weight_block_size

class Fp8BlockOp final : public EncodeOp {
 public:
  explicit Fp8BlockOp(const TensorRecord& t) : rows_(t.shape[0]), cols_(t.shape[1]) {
    tile_rows_ = (rows_ + kBlock.rows - 1) / kBlock.rows;
    tile_cols_ = (cols_ + kBlock.cols - 1) / kBlock.cols;
    specs_.push_back({t.name, DType::F8_E4M3, {rows_, cols_}, rows_ * cols_});
    specs_.push_back({t.name + "_scale_inv", DType::F32, {tile_rows_, tile_cols_}, tile_rows_ * tile_cols_ * 4});
  }
  std::span<const TensorSpec> outputs() const override { return specs_; }
  // A band of tile rows: the weight's 128 rows, the scale grid's row of tiles.
  uint64_t granularity(size_t part) const override { return part == 0 ? kBlock.rows * cols_ : tile_cols_ * 4; }
  LetheSums distance() const override { return sums_.total(); }

  Status run(std::span<const uint8_t> source, DType from, size_t part, uint64_t begin, uint64_t end,
             uint8_t* out) const override {
    const uint64_t band = part == 0 ? kBlock.rows * cols_ : tile_cols_ * 4;
    std::vector<float> values, scale(tile_cols_), scale_inv(tile_cols_);
    LetheSums sums;
    for (uint64_t at = begin; at < end; at += band) {
      const uint64_t r0 = at / band * kBlock.rows, r1 = std::min(rows_, r0 + kBlock.rows);
      values.resize((r1 - r0) * cols_);
      load_f32(source, from, r0 * cols_, values.size(), values.data());
      lethe::fp8_block_scales(values.data(), cols_, r0, r1, kBlock, scale.data(), scale_inv.data());
      if (part == 1) {
        std::memcpy(out + (at - begin), scale_inv.data(), tile_cols_ * 4);
        continue;
      }
      uint8_t* codes = out + (at - begin);
      lethe::fp8_block_quantize_rows(values.data(), cols_, r0, r1, kBlock, scale.data(), codes);
      // Fp8Dequantize: the code as F32 times its tile's scale_inv, in F32.
      for (uint64_t r = 0; r < r1 - r0; ++r) {
        for (uint64_t c = 0; c < cols_; ++c) {
          const float back = quant::fp8_to_f32(DType::F8_E4M3, codes[r * cols_ + c]) * scale_inv[c / kBlock.cols];
          sums.add(values[r * cols_ + c], back);
        }
      }
    }
    if (part == 0) sums_.put(begin, sums);
    return {};
  }

 private:
  uint64_t rows_, cols_, tile_rows_ = 0, tile_cols_ = 0;
  std::vector<TensorSpec> specs_;
  mutable SumsByPiece sums_;
};

class Fp8BlockForgetter final : public Forgetter {
 public:
  std::string default_keep_reason(const TensorRecord& t) const override { return linear_keep_reason(t); }
  std::string cannot_hold(const TensorRecord& t) const override {
    if (auto why = not_forgettable(t); !why.empty()) return why;
    if (t.shape.size() != 2 || t.elements == 0) return "fp8-block quantizes 2-D weights only";
    // Fp8Quantize.convert raises ValueError for a shape its block does not divide.
    if (t.shape[0] % kBlock.rows || t.shape[1] % kBlock.cols) {
      return "its shape does not divide into 128x128 blocks (transformers refuses it)";
    }
    return {};
  }
  std::shared_ptr<const EncodeOp> encode(const TensorRecord& t) const override {
    return std::make_shared<Fp8BlockOp>(t);
  }
  // FineGrainedFP8Config.to_dict(), as config.json carries it.
  std::string quantization_config_json() const override {
    return "{\"activation_scheme\":\"dynamic\",\"modules_to_not_convert\":null,\"quant_method\":\"fp8\","
           "\"weight_block_size\":[128,128]}";
  }
  std::string describe() const override { return "fp8-block (E4M3, 128x128 blocks, F32 scale_inv)"; }
};

}  // namespace

Result<std::unique_ptr<Forgetter>> make_fp8_forgetter(const ForgetSettings& s) {
  AMN_TRY(no_bnb_settings(s));
  return std::unique_ptr<Forgetter>(std::make_unique<Fp8BlockForgetter>());
}

}  // namespace amn
