// The command line of `amn`, defined once: the native CLI parses argv with it, and the
// Node CLI (npm/bin/amn.js) asks the WASM core for the same parse, so both print the
// same help, the same usage errors and run the same requests. Built on CLI11; this file
// and command_line.cpp are the only core code compiled with exceptions (CLI11 throws).
#pragma once
#include <string>
#include <vector>

#include "session/request.h"

namespace amn {

struct CommandLine {
  // error: a well-formed command that asks for something impossible (exit status 1).
  enum class Kind : uint8_t { run, help, version, usage_error, error };
  Kind kind = Kind::usage_error;
  std::string text;  // help: the text to print; usage_error: the message
  Error error;       // kind error
  Verb verb = Verb::inspect;
  OpenRequest open;  // the input and the limits (--max-*)
  bool json = false;  // parse / inspect / stats --json
  std::vector<std::string> tensors;  // stats: the tensors named (empty: every one)
  bool gguf_hash = false;            // hash --gguf-hash
  bool dequantized = false;          // hash --dequantized
  std::string other;                 // diff: B (open.input is A)
  bool exact_names = false;          // diff --exact-names
  ConvertRequest convert;  // remember / convert
};

// args: argv without the program name.
CommandLine parse_command_line(const std::vector<std::string>& args);

// The command line as JSON for the Node CLI: {"kind": "run"|"help"|"version"|"usage_error"|
// "error", "text", "code" and "message" (error), "verb", "input", "json", "limits": {...}, "request": convert_request_json, "tensors" (stats), "ggufHash" and "dequantized" (hash), "other" and "exactNames" (diff)}.
std::string command_line_json(const CommandLine& command);

// What a CLI prints for a usage error (exit status 2) and for --version.
std::string usage_error_text(const std::string& message);
std::string version_text(std::string_view kernels);

}  // namespace amn
