// torch_ops.h's dispatched amax: the Highway kernel (fp8_encode_simd.cpp) unless the
// reference is forced.
#include "kernels/lethe/torch_ops.h"

#include "kernels/cast.h"
#include "kernels/lethe/encode_simd.h"

namespace amn::lethe {

float absmax(const float* values, uint64_t count) {
  if (!reference_impl_forced()) return simd::absmax(values, count);
  return absmax_reference(values, count);
}

}  // namespace amn::lethe
