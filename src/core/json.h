// Writing JSON text (reading is simdjson's job). Only what our documents need:
// escaped strings and a pretty printer for the model-info document.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace amn {

// Appends s as a JSON string literal (quotes included). s must be valid UTF-8.
void append_json_string(std::string& out, std::string_view s);

}  // namespace amn
