#include "core/model.h"

namespace amn {

uint64_t Model::parameter_count() const {
  uint64_t n = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!is_consumed(i)) n += tensors[i].elements;
  }
  for (const auto& l : logical) n += l.elements;
  return n;
}

uint64_t Model::tensor_bytes() const {
  uint64_t n = 0;
  for (const auto& t : tensors) n += t.nbytes;
  return n;
}

const TensorRecord* Model::find(std::string_view name) const {
  for (const auto& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

}  // namespace amn

namespace amn {

std::string_view model_format_name(ModelFormat format) {
  switch (format) {
    case ModelFormat::safetensors: return "safetensors";
    case ModelFormat::gguf: return "gguf";
    case ModelFormat::npy: return "npy";
    case ModelFormat::npz: return "npz";
    case ModelFormat::pth: return "pth";
  }
  return "unknown";
}

}  // namespace amn
