// What a PyTorch checkpoint may name: the allowlist the pickle VM checks every global
// against (modelled on torch.load(weights_only=True)'s, narrowed to what we interpret),
// and the storage types with the element type each one holds.
#pragma once
#include <cstdint>
#include <string_view>

#include "core/dtype.h"

namespace amn::pth {

enum class StorageLayout : uint8_t {
  plain,       // elements of `dtype`
  complex128,  // two F64 per element: a trailing dimension of 2
  complex32,   // two F16 per element: a trailing dimension of 2
  quantized,   // QInt8Storage, QUInt8Storage, ...: refused
  untyped,     // torch.UntypedStorage: bytes
};

struct StorageType {
  std::string_view name;      // "FloatStorage"
  DType dtype;                // the element type (U8 for untyped and quantized)
  uint32_t itemsize;          // bytes of one storage element
  StorageLayout layout;
};

// The storage type of global `module.name` (torch.FloatStorage, torch.UntypedStorage,
// torch.storage.UntypedStorage), or nullptr.
const StorageType* storage_type(std::string_view module, std::string_view name);

// The allowlist: the VM's AllowFn.
bool torch_global_allowed(std::string_view module, std::string_view name);

}  // namespace amn::pth
