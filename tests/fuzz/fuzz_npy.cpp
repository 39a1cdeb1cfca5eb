// The .npy reader on arbitrary bytes: magic, version, header length, the header's descr,
// fortran_order and shape, and the data's size against the file's before allocating.
#include "fuzz_support.h"
#include "util/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = tandem::fuzz::write_scratch("input.npy", data, size);
  return tandem::fuzz::expect_clean([&] { tandem::read_npy(path); });
}
