#include "session/registry.h"

#include <array>

#include "formats/gguf/parse.h"
#include "formats/safetensors/parse.h"
#include "session/format_openers.h"

namespace amn {
namespace {

using namespace std::string_view_literals;

// ".index.json" is a Hugging Face index: of safetensors shards, or (pytorch_model.bin.
// index.json) of torch.save shards; the safetensors opener reads both.
constexpr std::array kSafetensorsExt = {".safetensors"sv, ".index.json"sv};
constexpr std::array kGgufExt = {".gguf"sv};
constexpr std::array kNpyExt = {".npy"sv};
constexpr std::array kNpzExt = {".npz"sv};
constexpr std::array kTorchExt = {".pth"sv, ".pt"sv, ".ckpt"sv};
constexpr std::array kTorchUntrustedExt = {".bin"sv};  // too common a name to believe

// Sniffing order: the cheap, unambiguous magics first; safetensors (a length and a JSON
// brace) last. A ZIP sniffs as torch; open_zip_or_legacy_pth tells torch from savez.
const std::array<FormatRow, 6> kRows = {{
    {ModelFormat::gguf, "GGUF", kGgufExt, true, detail::sniff_gguf, detail::open_gguf_set, nullptr, 1,
     detail::pick_gguf, "single file or split (-00001-of-00003.gguf), ollama:<model>[:<tag>]", kGgufFirstRequest},
    {ModelFormat::npy, "NumPy .npy", kNpyExt, true, detail::sniff_npy, detail::open_npy_file, nullptr, 3,
     detail::pick_numpy, "any byte order, Fortran order"},
    {ModelFormat::pth, "PyTorch", kTorchExt, true, detail::sniff_torch, detail::open_pth_file,
     detail::open_zip_or_legacy_pth, 2, detail::pick_torch,
     ".pth/.pt/.bin/.ckpt, ZIP or legacy, sharded *.bin.index.json; a pickle VM that never executes"},
    {ModelFormat::pth, "PyTorch .bin", kTorchUntrustedExt, false, nullptr, nullptr, nullptr, 2, nullptr, ""},
    {ModelFormat::npz, "NumPy .npz", kNpzExt, true, nullptr, detail::open_npz_file, nullptr, 3, nullptr,
     "stored or compressed"},
    {ModelFormat::safetensors, "safetensors", kSafetensorsExt, true, detail::sniff_safetensors,
     detail::open_safetensors_set, nullptr, 0, detail::pick_safetensors,
     "single file, sharded folder or *.index.json; quantized weights detected"},
}};

}  // namespace

std::span<const FormatRow> format_rows() { return kRows; }

const FormatRow* format_by_extension(std::string_view file_name) {
  for (const FormatRow& row : kRows) {
    if (!row.trusted_extensions) continue;
    for (auto ext : row.extensions) {
      if (file_name.size() > ext.size() && file_name.ends_with(ext)) return &row;
    }
  }
  return nullptr;
}

uint64_t first_read_bytes(std::string_view file_name) {
  const FormatRow* row = format_by_extension(file_name);
  return row && row->first_read ? row->first_read : kSafetensorsReadAhead;
}

bool first_read_streamed(std::string_view file_name) { return first_read_bytes(file_name) > kSafetensorsReadAhead; }

std::string supported_formats_text() {
  std::string out;
  for (const FormatRow& row : kRows) {
    if (row.forms.empty()) continue;
    if (!out.empty()) out += "; ";
    out += std::string(row.label) + " (" + std::string(row.forms) + ")";
  }
  return out;
}

std::string supported_formats_lines() {
  std::string out;
  for (const FormatRow& row : kRows) {
    if (!row.forms.empty()) out += "  " + std::string(row.label) + ": " + std::string(row.forms) + "\n";
  }
  return out;
}

std::string model_file_patterns_text() {
  std::string out;
  for (const FormatRow& row : kRows) {
    for (auto ext : row.extensions) {
      if (!out.empty()) out += ", ";
      out += '*';
      out += ext;
    }
  }
  return out;
}

}  // namespace amn
