#include "formats/pth/torch_globals.h"

#include <array>

namespace amn::pth {
namespace {

// torch/storage.py `_dtype_to_storage_type_map` and the legacy typed storage classes.
constexpr std::array<StorageType, 24> kStorages{{
    {"FloatStorage", DType::F32, 4, StorageLayout::plain},
    {"DoubleStorage", DType::F64, 8, StorageLayout::plain},
    {"HalfStorage", DType::F16, 2, StorageLayout::plain},
    {"BFloat16Storage", DType::BF16, 2, StorageLayout::plain},
    {"LongStorage", DType::I64, 8, StorageLayout::plain},
    {"IntStorage", DType::I32, 4, StorageLayout::plain},
    {"ShortStorage", DType::I16, 2, StorageLayout::plain},
    {"CharStorage", DType::I8, 1, StorageLayout::plain},
    {"ByteStorage", DType::U8, 1, StorageLayout::plain},
    {"BoolStorage", DType::BOOL, 1, StorageLayout::plain},
    {"UInt16Storage", DType::U16, 2, StorageLayout::plain},
    {"UInt32Storage", DType::U32, 4, StorageLayout::plain},
    {"UInt64Storage", DType::U64, 8, StorageLayout::plain},
    {"ComplexFloatStorage", DType::C64, 8, StorageLayout::plain},
    {"ComplexDoubleStorage", DType::F64, 16, StorageLayout::complex128},
    {"ComplexHalfStorage", DType::F16, 4, StorageLayout::complex32},
    {"Float8_e4m3fnStorage", DType::F8_E4M3, 1, StorageLayout::plain},
    {"Float8_e5m2Storage", DType::F8_E5M2, 1, StorageLayout::plain},
    {"Float8_e4m3fnuzStorage", DType::F8_E4M3FNUZ, 1, StorageLayout::plain},
    {"Float8_e5m2fnuzStorage", DType::F8_E5M2FNUZ, 1, StorageLayout::plain},
    {"QInt8Storage", DType::U8, 1, StorageLayout::quantized},
    {"QUInt8Storage", DType::U8, 1, StorageLayout::quantized},
    {"QInt32Storage", DType::U8, 4, StorageLayout::quantized},
    {"QUInt4x2Storage", DType::U8, 1, StorageLayout::quantized},
}};
constexpr StorageType kQUInt2x4{"QUInt2x4Storage", DType::U8, 1, StorageLayout::quantized};
constexpr StorageType kUntyped{"UntypedStorage", DType::U8, 1, StorageLayout::untyped};

// torch.<dtype> objects pickle as globals of that name (torch.dtype.__reduce__).
constexpr std::array<std::string_view, 34> kDtypeNames{{
    "float32", "float", "float64", "double", "float16", "half", "bfloat16", "int64", "long",
    "int32", "int", "int16", "short", "int8", "uint8", "uint16", "uint32", "uint64", "bool",
    "complex32", "chalf", "complex64", "cfloat", "complex128", "cdouble", "float8_e4m3fn",
    "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "qint8", "quint8", "qint32",
    "quint4x2", "quint2x4",
}};

struct Allowed {
  std::string_view module;
  std::string_view name;
};
constexpr std::array<Allowed, 20> kAllowed{{
    {"torch._utils", "_rebuild_tensor"},
    {"torch._utils", "_rebuild_tensor_v2"},
    {"torch._utils", "_rebuild_parameter"},
    {"torch._utils", "_rebuild_parameter_with_state"},
    {"torch._utils", "_rebuild_qtensor"},  // allowed so the refusal can say "quantized"
    {"torch._tensor", "_rebuild_from_type_v2"},
    {"torch._tensor", "_rebuild_from_type"},
    {"torch.nn.parameter", "Parameter"},
    {"torch", "Tensor"},
    {"torch", "Size"},
    {"torch", "device"},
    {"torch._C", "device"},
    {"torch", "strided"},
    {"torch.serialization", "_get_layout"},
    {"collections", "OrderedDict"},
    {"builtins", "set"},
    {"builtins", "frozenset"},
    {"builtins", "bytearray"},
    {"__builtin__", "set"},
    {"_codecs", "encode"},  // protocol 2's spelling of bytes: encode(str, 'latin1')
}};

}  // namespace

const StorageType* storage_type(std::string_view module, std::string_view name) {
  if (module == "torch" || module == "torch.storage" || module == "torch.cuda") {
    for (const auto& s : kStorages) {
      if (s.name == name) return &s;
    }
    if (name == kQUInt2x4.name) return &kQUInt2x4;
    if (name == "UntypedStorage" || name == "_UntypedStorage") return &kUntyped;
  }
  return nullptr;
}

bool torch_global_allowed(std::string_view module, std::string_view name) {
  if (storage_type(module, name)) return true;
  for (const auto& a : kAllowed) {
    if (a.module == module && a.name == name) return true;
  }
  if (module == "torch") {
    for (auto d : kDtypeNames) {
      if (d == name) return true;
    }
  }
  return false;
}

}  // namespace amn::pth
