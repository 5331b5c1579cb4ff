// The library's side of anamnesis::Model, shared by src/api's two files: the model as
// src/cli opened it (files, parsed headers, where it lives), and the lock that serialises
// reads through its FileSet (its pread staging and mappings are not meant for two callers
// at once).
#pragma once
#include <mutex>

#include "anamnesis/anamnesis.hpp"
#include "cli/local_files.h"
#include "core/error.h"

namespace anamnesis {

struct Model::Impl {
  amn::cli::LocalModel local;
  std::mutex reading;
};

// The public form of a core error: the stable code string, the message, -1 for no offset.
Error public_error(const amn::Error& e);

}  // namespace anamnesis
