// Gathering strided elements into row-major order: torch views (storage offset,
// strides) and Fortran-order NPY arrays are written out contiguous, as safetensors needs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace amn {

// Copies the elements of a view (shape, element strides, `el` bytes each, the first at
// src[0]) into dst in row-major order. The caller has checked that every element lies
// inside src (plan.cpp check_layout).
void gather_strided(const uint8_t* src, uint8_t* dst, size_t el, std::span<const uint64_t> shape,
                    std::span<const uint64_t> strides);

}  // namespace amn
