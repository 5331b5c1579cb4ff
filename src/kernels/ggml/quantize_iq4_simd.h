// IQ4_NL / IQ4_XS's per-block scale search in its two forms: the scalar restatement of
// ggml (quantize_iq4.cpp) and a block per lane (quantize_iq4_simd.cpp).
#pragma once

namespace amn::ggml {

// quantize_row_iq4_nl_impl's search (ntry 7) on `count` blocks of 32 values, one after
// the other in x, with their importance weights laid out alike: scales[k] is block k's d.
void iq4_block_scales(int count, const float* x, const float* weight, float* scales);

// The same searches, several blocks at once with the current Highway target (the same
// scales, bit for bit). False, nothing written, on Highway's one-lane target.
bool iq4_block_scales_simd(int count, const float* x, const float* weight, float* scales);

}  // namespace amn::ggml
