// GGUF block records in forget --to gguf (convert/plan_forget.cpp): read as they are
// stored for --allow-requantize, copied as blocks when kept. Apart from plan.h so that
// few files depend on it.
#pragma once
#include "convert/plan.h"

namespace amn {

// True for a little-endian GGUF record of a ggml block type, its blocks one run in its
// file: what forget --to gguf --allow-requantize dequantizes.
bool is_plain_block_record(const Model& model, const TensorRecord& t);
// plan_stored_tensor for GGUF output: a ggml block record copied through as its blocks (as
// llama-quantize copies a tensor already of the type it chose), any other as stored.
Status plan_stored_blocks(const Model& model, const TensorRecord& t, Plan& plan);

}  // namespace amn
