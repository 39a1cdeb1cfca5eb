#pragma once
// Shared by the fuzz targets (docs/SECURITY.md). The readers under test take paths, so each
// input is written to a scratch folder of this process's own; an InputError is the reader's
// clean refusal of bad bytes, any other exception escaping is a finding, reported and aborted
// on so that libFuzzer keeps the input.
#include <cxxabi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <typeinfo>

#include "ir/error.h"

namespace tandem::fuzz {

inline std::string demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
  return status == 0 && text ? text.get() : name;
}

// /dev/shm/tandem-fuzz-<pid> (or under the temp folder), removed at exit. The path is never
// destroyed: the exit handler, registered while it is made, runs after static destructors.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path* const dir = [] {
    namespace fs = std::filesystem;
    const fs::path base =
        fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    const auto* made = new fs::path(base / ("tandem-fuzz-" + std::to_string(getpid())));
    fs::create_directories(*made);
    std::atexit([] {
      std::error_code ignored;
      fs::remove_all(scratch_dir(), ignored);
    });
    return made;
  }();
  return *dir;
}

// Writes `size` bytes to `name` in the scratch folder and returns its path.
inline std::string write_scratch(const std::string& name, const void* data, size_t size) {
  const std::filesystem::path path = scratch_dir() / name;
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!file) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path.string();
}

// Inputs a reader accepted and refused (InputError), for the corpus replay's summary.
inline size_t accepted_inputs = 0, refused_inputs = 0;

// Runs `read`: returning or throwing InputError is a clean outcome; anything else aborts.
template <typename Read>
int expect_clean(Read&& read) {
  try {
    read();
    ++accepted_inputs;
  } catch (const InputError&) {
    ++refused_inputs;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: FINDING: %s escaped (not an InputError): %s\n",
                 demangle(typeid(e).name()).c_str(), e.what());
    std::abort();
  } catch (...) {
    const std::type_info* type = abi::__cxa_current_exception_type();
    std::fprintf(stderr, "fuzz: FINDING: %s escaped (not an InputError)\n",
                 type ? demangle(type->name()).c_str() : "an unknown exception");
    std::abort();
  }
  return 0;
}

}  // namespace tandem::fuzz
