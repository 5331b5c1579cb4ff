// Forgetting (quantizing): each scheme's encoder says which tensors its producer
// quantizes by default, makes one EncodeOp (core/encode_op.h) per weight, and writes the
// producer's quantization_config. The planner (convert/plan_forget.h) drives it without
// knowing the scheme; the session (session/request.h) fills ForgetSettings from options.
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/encode_op.h"
#include "core/error.h"
#include "core/model.h"
#include "formats/gguf/imatrix.h"
#include "formats/gguf/kv_input.h"

namespace amn {

// The schemes `forget --scheme` takes, and their producers, in help order.
struct ForgetSchemeRow {
  std::string_view name;
  std::string_view producer;  // for help and reports
  bool available;             // false: named, refused as not built yet
};
std::span<const ForgetSchemeRow> forget_scheme_rows();

struct ForgetSettings {
  std::string scheme;          // a forget_scheme_rows() name
  uint64_t blocksize = 0;      // bitsandbytes 4-bit: 0 = the producer's default (64)
  bool double_quant = false;   // bitsandbytes 4-bit: quantize the absmax too
  // bitsandbytes 4-bit double quant: torch.get_num_threads() of the producer's run. Its
  // absmax.mean() sums one chunk per thread from 32768 values on, so the offset's last
  // bits depend on it (fixtures/lethe/bnb/README.md "double quant").
  uint32_t torch_threads = 1;
  uint32_t bits = 0;           // mlx: 0 = the producer's default (4)
  uint64_t group_size = 0;     // mlx: 0 = the producer's default (64)
  std::string mode;            // mlx: mx.quantize's mode (kMlxModes); empty = "affine"
  // mxfp4: every weight is in the nn.Linear orientation [..., out, in], as remember writes
  // it (--like); false: gpt-oss expert parameters are transformers' [E, in, out].
  bool linear_orientation = false;
  bool gguf = false;           // --to gguf: `scheme` is a llama-quantize file type or a ggml type (schemes/forget_gguf.h)
  bool pure = false;           // --to gguf: llama-quantize --pure
  // --to gguf: llama-quantize's --output-tensor-type / --token-embedding-type (ggml type
  // names; empty: the file type's choice) and --leave-output-tensor.
  std::string output_tensor_type, token_embedding_type;
  bool leave_output_tensor = false;
  std::vector<std::string> tensor_types;  // --to gguf: llama-quantize's --tensor-type NAME=TYPE, in order
  // --to gguf: llama-quantize's --imatrix: the file's name as given, and the matrix (null
  // while a request is only checked: the name alone lets the types that need one pass).
  std::string imatrix_file;
  std::shared_ptr<const ImportanceMatrix> imatrix;
  bool allow_requantize = false;  // --to gguf: llama-quantize's --allow-requantize
};

class Forgetter {
 public:
  virtual ~Forgetter() = default;
  // Empty when the producer quantizes `t` by default; else why it is kept as stored
  // ("an embedding", "1-D"): the producer's own rule, not a failure.
  virtual std::string default_keep_reason(const TensorRecord& t) const = 0;
  // Called once with the input before the questions below: a producer whose choice for one
  // tensor depends on the others (llama-quantize's file types count layers) makes it here.
  // Errors: the producer's refusal of the model as a whole.
  virtual Status prepare(const Model& model) {
    (void)model;
    return {};
  }
  // Empty when the scheme can hold `t`; else why not (the shape, the dtype): a tensor
  // chosen by --only that the scheme cannot hold is kept with this as a warning.
  virtual std::string cannot_hold(const TensorRecord& t) const = 0;
  virtual std::shared_ptr<const EncodeOp> encode(const TensorRecord& t) const = 0;
  // The ops of every chosen tensor of `model`, in the order given: one encode() each,
  // unless the producer shares values between weights (NVFP4's one global scale for a
  // fused q/k/v or gate/up set), which the scheme links here. Errors: the producer's
  // refusal of the model as a whole.
  virtual Result<std::vector<std::shared_ptr<const EncodeOp>>> encode_chosen(
      const Model& model, std::span<const TensorRecord* const> chosen) const {
    (void)model;
    std::vector<std::shared_ptr<const EncodeOp>> ops;
    for (const TensorRecord* t : chosen) ops.push_back(encode(*t));
    return ops;
  }
  // The producer's quantization_config object (JSON), as its config.json carries it.
  virtual std::string quantization_config_json() const = 0;
  // Other top-level config.json keys that carry the same object (mlx-lm writes
  // "quantization" and mirrors it as "quantization_config").
  virtual std::vector<std::string> quantization_config_mirrors() const { return {}; }
  // "nf4, blocksize 64, double quantization": the settings in words, for reports.
  virtual std::string describe() const = 0;
  // A GGUF reference (--like G.gguf) writes GGUF only, with G's llama-quantize KVs
  // (general.file_type, general.quantization_version; empty when G has none); nullopt
  // for every other forgetter.
  virtual std::optional<std::vector<GgufKv>> gguf_reference_kv() const { return std::nullopt; }
  // Whether the input fits what the forgetter was made for (--like: REF's weights and
  // shapes); invalid_argument naming what does not.
  virtual Status check_input(const Model& input) const {
    (void)input;
    return {};
  }
};

// Errors: invalid_argument for a setting the scheme lacks (the message names it as the
// request spells it, e.g. "blocksize 48: a power of two from 32 to 4096"), unsupported
// for a scheme not built yet.
Result<std::unique_ptr<Forgetter>> make_forgetter(const ForgetSettings& settings);

// Shared by the schemes other than bitsandbytes 4-bit: invalid_argument when `s` carries
// a blocksize or double quantization.
Status no_bnb_settings(const ForgetSettings& s);

// Shared by the encoders: true for the float dtypes forget reads (F16, BF16, F32).
bool is_forgettable_dtype(DType t);

}  // namespace amn
