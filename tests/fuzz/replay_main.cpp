// The fuzz targets outside a libFuzzer build: every file of the folders (or the files) given is
// fed once to LLVMFuzzerTestOneInput, the way libFuzzer replays a corpus. The test fails when an
// input makes the target abort or crash, or when fewer inputs than --min-accepted=N were
// accepted by the reader (seeds that no longer match the format only exercise its refusals).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  size_t min_accepted = 0;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    constexpr const char kMinAccepted[] = "--min-accepted=";
    if (std::strncmp(argv[i], kMinAccepted, sizeof kMinAccepted - 1) == 0) {
      min_accepted = std::stoul(argv[i] + sizeof kMinAccepted - 1);
    } else if (fs::is_directory(argv[i])) {
      for (const fs::directory_entry& entry : fs::recursive_directory_iterator(argv[i])) {
        if (entry.is_regular_file()) inputs.push_back(entry.path());
      }
    } else {
      inputs.push_back(argv[i]);
    }
  }
  std::sort(inputs.begin(), inputs.end());
  for (const fs::path& input : inputs) {
    std::ifstream file(input, std::ios::binary);
    if (!file) {
      std::fprintf(stderr, "replay: cannot read %s\n", input.c_str());
      return 1;
    }
    const std::vector<char> bytes((std::istreambuf_iterator<char>(file)),
                                  std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", input.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replayed %zu inputs: %zu accepted, %zu refused with an InputError\n", inputs.size(),
              tandem::fuzz::accepted_inputs, tandem::fuzz::refused_inputs);
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no inputs\n");
    return 1;
  }
  if (tandem::fuzz::accepted_inputs < min_accepted) {
    std::fprintf(stderr, "replay: %zu inputs accepted, expected %zu or more\n",
                 tandem::fuzz::accepted_inputs, min_accepted);
    return 1;
  }
  return 0;
}
