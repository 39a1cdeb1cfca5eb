#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace tandem {

// SHA-256 (FIPS 180-4), for the plan file's record of the model and cluster it was made from:
// a plan refuses files whose bytes changed since. Written from the standard; no crypto library
// is linked.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  std::string hex_digest();  // 64 lowercase hex digits; ends the hash

 private:
  void compress(const uint8_t* block);
  uint32_t state_[8];
  uint8_t block_[64];
  size_t filled_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string sha256_hex(std::string_view bytes);
// The hash of a file's bytes; throws InputError naming the file when it cannot be read.
std::string sha256_of_file(const std::string& path);

}  // namespace tandem
