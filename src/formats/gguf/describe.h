// A parsed GGUF file, described for the Model every surface reads: its tensors as
// records (shapes row-major, the reverse of GGUF's ne[]), and its header facts (version,
// byte order, alignment, every KV with its type) as JSON and as lines for people.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/model.h"
#include "formats/gguf/parse.h"

namespace amn {

// A GGUF model's header (its first shard's, for a split model), for writers.
struct GgufState final : FormatState {
  GgufFile header;
};

// Appends the tensors of `gguf` (file `file` of the FileSet) to model.tensors.
void add_gguf_tensors(const GgufFile& gguf, uint32_t file, Model& model);

// The "details" object of the model-info JSON for a GGUF model (first shard's header).
std::string gguf_details_json(const GgufFile& gguf);
// The same as (label, value) lines; arrays longer than a few items are summarised.
std::vector<std::pair<std::string, std::string>> gguf_details_text(const GgufFile& gguf);

}  // namespace amn
