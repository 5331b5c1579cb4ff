// The JSON documents the surfaces read from the core besides the model-info document
// (report/report.h): call statuses, plan and shard summaries, lists. Written here, once,
// with core/json.h's writer; the bindings pass them through as strings.
#pragma once
#include <string>
#include <vector>

#include "convert/plan.h"
#include "convert/shard.h"
#include "core/error.h"

namespace amn {

// {"ok":true}, or {"ok":false,"code","message","offset" (-1: none),"needBytes":[{file,
// offset,length}],"needFiles":[names]} (docs/session-protocol.md).
std::string status_json(const Error* error);
// {"tensors":[{name,dtype,shape,nbytes}],"pieces","output_bytes","header_bytes"}
std::string plan_info_json(const Plan& plan);
// {"files":[{name,tensors,output_bytes}],"index": text or null,"index_name","total_size"}: the
// shards of a ShardedPlan, names[k] naming plans[k].
std::string shards_info_json(const std::vector<std::string>& names, const std::vector<Plan>& plans,
                             std::string_view index_json, uint64_t total_size);
// Every stable error code name, in enum order.
std::string error_codes_json();
// The sibling config files a model's folder may hold (session/open.h kConfigFileNames).
std::string config_file_names_json();
// A JSON array of strings (a surface's list of names, argv); anything else: empty.
std::vector<std::string> strings_from_json(std::string_view json);

// The forget schemes (schemes/forget.h): [{"name","producer","available"}].
std::string forget_schemes_json();

}  // namespace amn
