#include "convert/gather.h"

#include <cstring>
#include <vector>

namespace amn {

void gather_strided(const uint8_t* src, uint8_t* dst, size_t el, std::span<const uint64_t> shape,
                    std::span<const uint64_t> strides) {
  const size_t nd = shape.size();
  if (nd == 0) {
    std::memcpy(dst, src, el);
    return;
  }
  uint64_t outer = 1;
  for (size_t d = 0; d + 1 < nd; ++d) outer *= shape[d];
  const uint64_t inner = shape[nd - 1];
  if (outer == 0 || inner == 0) return;
  const uint64_t inner_stride = strides[nd - 1];
  std::vector<uint64_t> idx(nd, 0);
  uint64_t base = 0;  // element offset of the current innermost run
  for (uint64_t o = 0; o < outer; ++o) {
    const uint8_t* s = src + base * el;
    if (inner_stride == 1) {  // the common view: contiguous rows at strided starts
      std::memcpy(dst, s, inner * el);
      dst += inner * el;
    } else {
      for (uint64_t j = 0; j < inner; ++j, dst += el) std::memcpy(dst, s + j * inner_stride * el, el);
    }
    for (size_t d = nd - 1; d-- > 0;) {  // odometer over the outer dims
      base += strides[d];
      if (++idx[d] < shape[d]) break;
      base -= shape[d] * strides[d];
      idx[d] = 0;
    }
  }
}

}  // namespace amn
