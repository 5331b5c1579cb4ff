// Scheme detection: which records of a safetensors model are parts of quantized weights
// (FP8 + scales, GPTQ qweight/qzeros/scales/g_idx, ...), from names, dtypes and shapes,
// confirmed by config.json's quantization_config when present. Fills Model::logical and
// Model::part_of. A layout that looks quantized but does not add up becomes a logical
// tensor with an `error` (inspect shows it; converting it fails with that message) —
// never a guess.
#pragma once
#include "core/error.h"
#include "core/model.h"
#include "core/source.h"

namespace amn {

// `files` gives detectors the few small records whose bytes say what the tensor is (a
// bitsandbytes quant_state); their missing ranges come back as one need_bytes error.
// A model none of whose records a detector starts from (config_matters_at_open below)
// and without a quantization config is left as it is, undetected.
Status detect_schemes(Model& model, FileSet& files);
// detect_schemes without that shortcut: every detector runs (the tests check the shortcut
// against it on every fixture).
Status run_detectors(Model& model, FileSet& files);

// Whether the config files beside `model` (opened without them) could change what
// detect_schemes finds: some record may be a detector's candidate, i.e. is stored as
// anything but a float of 16 bits or more, I64 or BOOL (the buffers plain models keep:
// position_ids, masks; the schemes' packed weights, codes and quant_states are I32, U32,
// U8, I8 or F8, and an I64 weight_shape is only looked up from an I32 weight_packed), or
// is a GPTQ / AWQ `*.qweight` (those are picked by name). When it cannot, the configs
// only add their own fields (config.json, the quantizer config, their warnings) and may
// be read after the open (session/open.h read_late_config). A detector that starts from
// a record of one of the plain dtypes must narrow the list
// (tests_native/test_late_config.cpp opens every fixture both ways).
bool config_matters_at_open(const Model& model);

}  // namespace amn
