// forget --like REF: the scheme, its settings and the set of quantized weights taken from
// a quantized reference model; with reuse_scales also its scales (absmax, SCB,
// scale_inv), written back as they are, so that forgetting what remember made of REF
// gives REF's bytes again (docs/cli.md "Forget"). bitsandbytes 4-bit / int8, FP8,
// MXFP4, NVFP4 and MLX references are read; a GGUF reference is schemes/forget_gguf.h's
// make_gguf_like_forgetter (each tensor G's ggml type, G's block scales).
#pragma once
#include <memory>
#include <string_view>

#include "core/model.h"
#include "core/source.h"
#include "schemes/forget.h"

namespace amn {

// Whether forgetting like REF writes GGUF: for a GGUF REF (each tensor gets its ggml type
// there, make_gguf_like_forgetter); else safetensors. A request whose output differs is
// refused (session/forget.cpp); the page asks (Session::like_output_format) before it
// names the output.
bool like_writes_gguf(const Model& ref);

// Reads REF's quantized weights (their small companions, never the weights) from
// `files`. Errors: invalid_argument when REF holds no quantized weight amn can forget
// like, or `scheme` is given and differs from REF's; need_bytes like any read.
Result<std::unique_ptr<Forgetter>> make_like_forgetter(const Model& ref, FileSet& files, bool reuse_scales,
                                                       std::string_view scheme);
// Its check_input: every weight REF quantized must be in the input with REF's logical
// shape, else invalid_argument naming it (a usage error on the command line).

}  // namespace amn
