// PyTorch checkpoints as torch.save writes them (and Hugging Face's pytorch_model.bin,
// the same format): the ZIP form (torch >= 1.6: <prefix>/data.pkl, <prefix>/data/<key>,
// byteorder, version) and the legacy form (_use_new_zipfile_serialization=False: magic,
// protocol and sys-info pickles, the object, the storage keys, then raw storages).
// The pickle is run by the non-calling VM (formats/pickle) against the torch allowlist;
// nothing is ever imported or called. Spec and choices: docs/formats/pytorch.md.
#pragma once
#include <cstdint>
#include <span>

#include "core/error.h"
#include "core/limits.h"
#include "core/model.h"
#include "core/source.h"

namespace amn {

// Parses file `file` of `files` into a Model (format "pth"): every tensor reachable in
// the pickled object, named by its path; non-tensor values and the verdict on every
// global the pickle names in details_json / details_text. Sans-IO: reads the ZIP
// directory, data.pkl and the small records (or the legacy pickles and storage headers),
// never tensor data; answers need_bytes with every range it can name at once.
// Errors: parse, unsupported, limit, disallowed_global (naming module.name).
Result<Model> parse_pth(FileSet& files, uint32_t file, const ParseLimits& limits);

// True when the first bytes are a legacy torch.save file: a pickle (protocol >= 2) of
// torch's magic number 0x1950a86a20f9469cfc6c. At least 15 bytes are needed.
bool looks_like_legacy_pth(std::span<const uint8_t> head);

// Bytes of the first read of a legacy file; the window grows 4x per round while the
// pickles run past it (a state dict of a few thousand tensors fits in the first).
inline constexpr uint64_t kLegacyPthFirstWindow = 256 * 1024;

}  // namespace amn
