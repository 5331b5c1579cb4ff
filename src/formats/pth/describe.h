// A checkpoint's facts for the Model every surface reads: the container, the verdict on
// every global the pickle names (the allowlist's, like picklescan's report), and the
// non-tensor values by path, as JSON ("details") and as lines for people.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "formats/pickle/vm.h"

namespace amn::pth {

struct Facts {
  bool legacy = false;
  std::string prefix;        // ZIP: "archive/"
  std::string version;       // ZIP: the version record; legacy: the protocol version
  std::string byteorder;     // "little" / "big"
  uint32_t pickle_protocol = 0;
  std::string sys_info_json; // legacy: the sys-info dict
  std::vector<pickle::GlobalRef> globals;
  std::vector<std::pair<std::string, std::string>> values;  // path, JSON
  uint64_t values_omitted = 0;
  uint64_t storages = 0;
};

std::string details_json(const Facts& f);
std::vector<std::pair<std::string, std::string>> details_text(const Facts& f);

}  // namespace amn::pth
