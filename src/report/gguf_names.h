// GGUF <-> Hugging Face tensor names, for comparing a GGUF with the checkpoint it was
// converted from (amn diff). llama.cpp's convert_hf_to_gguf.py renames every tensor
// (`model.layers.0.self_attn.q_proj.weight` -> `blk.0.attn_q.weight`) and, for the llama
// architecture, permutes the rows of q_proj / k_proj (LlamaModel.permute: within each
// head, the two halves of the rotary dimensions interleaved). This file holds that rule
// for the architectures whose names are known here; shapes need nothing (GGUF's ne[] is
// reversed when the model is described, so both sides are row-major already).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/model.h"

namespace amn {

// How a GGUF model's tensors were named and laid out by convert_hf_to_gguf.py.
struct GgufNaming {
  std::string arch;            // general.architecture: llama, qwen2, qwen3
  bool permutes_qk = false;    // llama: q_proj / k_proj rows permuted per head
  uint32_t n_head = 0;         // {arch}.attention.head_count (0: absent or not one number)
  uint32_t n_head_kv = 0;      // {arch}.attention.head_count_kv (default n_head)
};

// The naming of `model` when it is a GGUF whose architecture's table is known; nullopt
// for any other model (another format, another or no architecture).
std::optional<GgufNaming> gguf_naming(const Model& model);

// A GGUF tensor's Hugging Face counterpart.
struct HfCounterpart {
  std::string name;
  // > 0: convert_hf_to_gguf permuted the rows with LlamaModel.permute over this many heads
  // (n_head for q, n_head_kv for k); rows_permuted with heads 0: permuted, head count unknown.
  bool rows_permuted = false;
  uint32_t heads = 0;
};

// `gguf_name`'s Hugging Face name under `naming` ("blk.3.attn_q.weight" ->
// "model.layers.3.self_attn.q_proj.weight"), nullopt for a name the table does not know
// (rope_freqs, merged experts, ...).
std::optional<HfCounterpart> hf_counterpart(const GgufNaming& naming, std::string_view gguf_name);

// Row `row` (0 <= row < rows_per_head) of one head of a permuted tensor: its row in the
// other layout. to_gguf: from the Hugging Face layout to GGUF's; else the reverse.
// LlamaModel.permute views a head's rows as [2, rows_per_head / 2] and swaps the axes.
uint64_t permuted_row(uint64_t row, uint64_t rows_per_head, bool to_gguf);

}  // namespace amn
