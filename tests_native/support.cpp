// Shared test helpers that are not templates (support.h).
#include "support.h"

#include <array>

#include "core/digest.h"

namespace amn::test {

std::string sha256_hex(std::span<const uint8_t> data) {
  Sha256 h;
  h.update(data);
  return hex(h.finish());
}

}  // namespace amn::test
