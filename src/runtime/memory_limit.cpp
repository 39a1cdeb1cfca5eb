#include "runtime/memory_limit.h"

#include <unistd.h>

#include "ir/error.h"

namespace tandem {

size_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page_size)
                                    : SIZE_MAX;
}

void check_fits_in_memory(double bytes, const std::string& what) {
  const double available = static_cast<double>(physical_memory_bytes());
  if (bytes > available) {
    throw InputError(what + " need " + std::to_string(static_cast<long long>(bytes / (1 << 20))) +
                     " MiB, more than this machine's " +
                     std::to_string(static_cast<long long>(available / (1 << 20))) +
                     " MiB of memory");
  }
}

}  // namespace tandem
