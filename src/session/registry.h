// The format registry: one row per container amn reads. Opening (session/open.h), the
// folder rule, the CLIs' help and every "supported formats" message are derived from
// these rows, so adding a container is a row here plus its parser in src/formats.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/limits.h"
#include "core/model.h"
#include "core/source.h"

namespace amn {

struct FormatRow {
  ModelFormat format;
  std::string_view label;  // for people: "safetensors", "NumPy .npz"
  // File-name suffixes that name this format. A suffix marked `trusted = false` (.bin) is
  // too common to believe: such a file is told by its content like an unknown one.
  std::span<const std::string_view> extensions;
  bool trusted_extensions;
  // Does this file's first bytes (at most kSafetensorsReadAhead of them) look like this
  // format? Tried in registry order for files whose name says nothing.
  bool (*sniff)(std::span<const uint8_t> head, uint64_t file_size);
  // Parses file 0 of the set (and the files it names); sans-IO like every parser.
  Result<Model> (*open)(FileSet& files, const ParseLimits& limits);
  // The open for a file told by sniff (null: `open`): a ZIP is a torch archive or an npz.
  Result<Model> (*open_sniffed)(FileSet& files, const ParseLimits& limits);
  // Which files a folder is opened through: the lowest rank that picks any wins; the
  // pick is the entry first, then what else to declare (shards).
  int folder_rank;
  std::vector<std::string> (*pick_in_folder)(const std::vector<std::string>& sorted_names);
  // For help texts: what forms of this container are read.
  std::string_view forms;
  // What a remote reader's first request asks for (0: the sniff window,
  // kSafetensorsReadAhead; GGUF: kGgufFirstRequest): a header that fits costs one
  // request, however the parser's own reads grow within it.
  uint64_t first_read = 0;
};

// Every row, in sniffing order.
std::span<const FormatRow> format_rows();

// The row whose trusted extension ends `file_name`, or null.
const FormatRow* format_by_extension(std::string_view file_name);

// How many bytes a remote reader should ask for first for the file `file_name`: the
// first_read of the format its name says, else the sniff window.
uint64_t first_read_bytes(std::string_view file_name);

// Whether that first request asks for more than the file's parser reads first (GGUF: 1
// MiB against a 64 KiB window), so a host should hand its bytes over as they arrive
// rather than wait for all of them. A request of the sniff window is read whole: every
// parser reads that much first.
bool first_read_streamed(std::string_view file_name);

// A range the core asks for is read by a host (npm, the page) in pieces of at most this
// many bytes, each copied into the core's buffer as it arrives: the host then holds at most
// this much of a file at a time outside WASM memory, however large the range (forget takes
// a layer's input whole), and a browser tab does not hold a 64 MiB tensor twice.
inline constexpr uint64_t kHostReadPieceBytes = 4u << 20;

// One line per container for help texts:
// "safetensors (single file, sharded folder or *.index.json; quantized weights detected)".
std::string supported_formats_text();
// The same, one indented line per container, for the CLIs' help.
std::string supported_formats_lines();
// "*.safetensors, *.index.json, *.gguf, ...": what a folder must hold to be opened.
std::string model_file_patterns_text();

}  // namespace amn
