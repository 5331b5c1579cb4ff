// The output policy: default names, one file or a folder of shards, what may not be
// overwritten, and the lines a CLI prints about it. One rule for the native CLI, the
// Node CLI, the npm API and the page; the surfaces do only the file-system I/O.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/model.h"
#include "session/request.h"

namespace amn {

// The stem default output names start from: the entry's name without its format suffix
// and without a shard number ("model" for model.safetensors, model.safetensors.index.json,
// model-00001-of-00003.gguf; "weights" for weights.npz).
std::string output_stem(std::string_view entry_name);

// Where an input lives, as the surface found it.
struct InputPlace {
  std::string stem;    // output_stem(entry), or a folder input's own name
  std::string folder;  // where a one-file output goes by default ("." for URLs and ollama:)
  // Where a folder output goes by default: beside the input, so for a folder input its
  // parent folder, else `folder`.
  std::string folder_output_parent;
  bool folder_input = false;  // the input is a folder (so a folder output beside it could be it)
};

bool is_url(std::string_view input);  // http:// or https://, any case
// The place of an input as given (`path`), whether it is a folder, and (for a folder) its
// absolute, normalised form: the surface's file-system answers, the core's rule.
InputPlace input_place(std::string_view path, bool is_folder, std::string_view absolute_folder);

// What the destination can be: a path (CLI, a Node path sink), a function that opens one
// sink per file (the npm API's openShard, the page's folder picker), or a single sink.
enum class Destination : uint8_t { path, per_file, single };
// "path" | "per_file" | "single"; anything else is invalid_argument.
Result<Destination> destination_from_name(std::string_view name);

struct OutputLayout {
  bool folder = false;  // shards + index (forget: and config.json), rather than one file
  bool single = false;  // per_file destination asked for one file (shards: 1)
  bool sharded = false;  // the folder's model may be more than one file (shards, GGUF splits)
};

// One file or a folder of shards: a sharded safetensors input gives a sharded output
// (same boundaries) unless shards: 1 or the path names a .safetensors file; a maximum
// shard size or shards: 'input' always asks for a folder. GGUF output is one file, or
// with a split size or tensor count a folder of gguf-split files. forget to safetensors
// writes a folder (model and config.json) unless the path names a .safetensors file or
// the destination is one sink; its model is sharded as convert's would be.
Result<OutputLayout> output_layout(const ConvertRequest& request, bool sharded_input, Destination destination,
                                   Surface surface);

// The request's shard options for an output folder: a split GGUF's files are named after
// the folder's own name, as llama_split_path names them ("out/q4" -> q4/q4-00001-of-00002.gguf).
ShardOptions shard_options(const ConvertRequest& request, std::string_view folder);

// The default output name, <stem><suffix>.<format> (a folder: <stem><suffix>):
//  - a target dtype names it: "-bf16", "-f16", "-f32";
//  - convert without one: "-converted";
//  - remember without one (lossless; quantized weights in their natural dtype): no suffix,
//    "<stem>.safetensors", when that cannot be an input: the input is not safetensors, and
//    it is not a folder output beside a folder input (which would be that folder). Else
//    "-<dtype>" when every floating output tensor has that one dtype ("-f16" for GPTQ
//    with F16 norms), else "-remembered".
// `model` is what remember without a target needs (nullptr: "-remembered").
std::string default_output_name(const ConvertRequest& request, std::string_view stem, bool folder,
                                const Model* model, bool folder_input = false);
// The default output: that name in place.folder, or for a folder output in
// place.folder_output_parent.
std::string default_output(const ConvertRequest& request, const InputPlace& place, bool folder, const Model* model);

// The whole policy in one call, for the JS surfaces: {"request": convert request JSON,
// "surface": "cli"|"api", "shardedInput": bool, "destination": "path"|"per_file"|"single",
// "place": {"path", "isFolder", "absolute"} | {"entry": file name} | {"stem", "folder",
// "folderOutputParent"} (optional)} ->
// {"ok": true, "folder", "single", "sharded", "target": request.output or the default (null without
// a place), "name": the default file or folder name}, or an error status. `model`: the
// opened model (Session::output_plan_json passes its own), for remember's default name.
std::string output_plan_json(std::string_view json, const Model* model = nullptr);

// Refusals every surface words the same way.
Error output_is_input(std::string_view target);
Error output_holds_input(std::string_view target, std::string_view input_name);
Error output_exists(std::string_view target, Surface surface);

// "wrote out.safetensors (3 tensors, 1.2 KiB)\n", or for a folder
// "wrote out/ (2 shards, 3 tensors, 1.2 KiB)\n".
std::string wrote_line(std::string_view target, bool folder, uint64_t shards, uint64_t tensors, uint64_t bytes);

// A progress bar line for a terminal: "\rconvert [####    ]  42%  1.0 MiB / 2.4 MiB\x1b[K".
// permille is done * 1000 / total.
std::string progress_line(std::string_view label, uint64_t done, uint64_t total);

}  // namespace amn
