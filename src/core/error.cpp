#include "core/error.h"

namespace amn {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::parse: return "parse";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::limit: return "limit";
    case ErrorCode::io: return "io";
    case ErrorCode::need_bytes: return "need_bytes";
    case ErrorCode::need_files: return "need_files";
    case ErrorCode::exists: return "exists";
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::not_found: return "not_found";
    case ErrorCode::cancelled: return "cancelled";
    case ErrorCode::internal: return "internal";
    case ErrorCode::disallowed_global: return "disallowed_global";
  }
  return "internal";
}

Error make_error(ErrorCode code, std::string message, uint64_t offset) {
  Error e;
  e.code = code;
  e.message = std::move(message);
  e.offset = offset;
  return e;
}

}  // namespace amn
