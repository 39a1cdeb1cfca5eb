#pragma once
#include <cstddef>
#include <string>

namespace tandem {

// Physical memory of this machine, in bytes.
size_t physical_memory_bytes();

// Throws InputError when `bytes` for `what` exceed physical memory: a model or binding that
// asks for more must fail with a clear line, not be killed by the kernel after overcommit.
void check_fits_in_memory(double bytes, const std::string& what);

}  // namespace tandem
