#include "report/table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace tandem {
namespace {

bool looks_numeric(const std::string& cell) {
  return !cell.empty() && (std::isdigit(static_cast<unsigned char>(cell[0])) ||
                           ((cell[0] == '-' || cell[0] == '.') && cell.size() > 1 &&
                            std::isdigit(static_cast<unsigned char>(cell[1]))));
}

}  // namespace

std::string Table::render() const {
  std::vector<size_t> widths(header_.size(), 0);
  for (size_t c = 0; c < header_.size(); ++c) widths[c] = header_[c].size();
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size() && c < widths.size(); ++c)
      widths[c] = std::max(widths[c], row[c].size());
  }
  size_t total = 0;
  for (size_t w : widths) total += w + 2;
  std::string out;
  auto emit = [&](const std::vector<std::string>& row, bool header) {
    for (size_t c = 0; c < widths.size(); ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      const std::string pad(widths[c] - cell.size(), ' ');
      const bool right = !header && c > 0 && looks_numeric(cell);
      out += right ? pad + cell : cell + pad;
      out += c + 1 < widths.size() ? "  " : "";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
  };
  emit(header_, true);
  out += std::string(total > 2 ? total - 2 : 0, '-') + '\n';
  for (const auto& row : rows_) {
    if (row.empty()) {
      out += std::string(total > 2 ? total - 2 : 0, '-') + '\n';
    } else {
      emit(row, false);
    }
  }
  return out;
}

std::string si(double value) {
  static const char* kPrefixes[] = {"", " k", " M", " G", " T", " P"};
  int index = 0;
  while (std::abs(value) >= 1000 && index < 5) {
    value /= 1000;
    ++index;
  }
  const int decimals = std::abs(value) >= 100 || index == 0 ? 0 : std::abs(value) >= 10 ? 1 : 2;
  return format("%.*f%s", decimals, value, kPrefixes[index]);
}

std::string seconds_text(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  // The unit of the value as rounded: 999.7 us is "1 ms", not "1e+03 us".
  seconds = std::strtod(format("%.3g", seconds).c_str(), nullptr);
  if (seconds >= 1) return format("%.3g s", seconds);
  if (seconds >= 1e-3) return format("%.3g ms", seconds * 1e3);
  return format("%.3g us", seconds * 1e6);
}

std::string format(const char* pattern, ...) {
  va_list args;
  va_start(args, pattern);
  va_list measure;
  va_copy(measure, args);
  const int length = std::max(std::vsnprintf(nullptr, 0, pattern, measure), 0);
  va_end(measure);
  std::string out(static_cast<size_t>(length) + 1, '\0');
  std::vsnprintf(out.data(), out.size(), pattern, args);
  va_end(args);
  out.resize(static_cast<size_t>(length));
  return out;
}

}  // namespace tandem
