#pragma once
#include <string>
#include <vector>

#include "devices/units.h"  // human_bytes

namespace tandem {

// A plain-text table for terminals: a header row, aligned columns (numbers to the right),
// and optional separator rows.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  void add_separator() { rows_.emplace_back(); }
  std::string render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// "1.23 G", "456 M", "12.0 k": three significant digits with an SI prefix.
std::string si(double value);
// "1.23 s", "45.6 ms", "789 us": three significant digits; "-" for an infinite time.
std::string seconds_text(double seconds);
// printf-style formatting into a std::string of any length.
std::string format(const char* pattern, ...) __attribute__((format(printf, 1, 2)));

}  // namespace tandem
