#include "devices/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string_view>

namespace tandem {
namespace {

// Decimal prefixes for rates and counts; binary ones only where a vendor uses them (bytes).
const std::map<std::string, double, std::less<>>& decimal_prefixes() {
  static const std::map<std::string, double, std::less<>> prefixes = {
      {"", 1}, {"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}};
  return prefixes;
}

const std::map<std::string, double, std::less<>>& binary_prefixes() {
  static const std::map<std::string, double, std::less<>> prefixes = {
      {"Ki", 1024.0},
      {"Mi", 1024.0 * 1024},
      {"Gi", 1024.0 * 1024 * 1024},
      {"Ti", 1024.0 * 1024 * 1024 * 1024}};
  return prefixes;
}

// Every spelling of a unit of this quantity, with its factor to the base unit.
std::map<std::string, double, std::less<>> units_of(Quantity quantity) {
  std::map<std::string, double, std::less<>> units;
  auto add = [&](std::string_view base, double factor, bool binary) {
    for (const auto& [prefix, scale] : decimal_prefixes()) {
      units[prefix + std::string(base)] = scale * factor;
    }
    if (!binary) return;
    for (const auto& [prefix, scale] : binary_prefixes()) {
      units[prefix + std::string(base)] = scale * factor;
    }
  };
  switch (quantity) {
    case Quantity::kFlops:
      for (const char* base : {"FLOP/s", "FLOPS", "OP/s", "OPS"}) add(base, 1, false);
      break;
    case Quantity::kBytes: add("B", 1, true); break;
    case Quantity::kBandwidth:
      add("B/s", 1, true);
      add("b/s", 1.0 / 8, false);
      add("bit/s", 1.0 / 8, false);
      add("bps", 1.0 / 8, false);
      break;
    case Quantity::kSeconds:
      units = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"µs", 1e-6}, {"ns", 1e-9}};
      break;
    case Quantity::kPrice: units = {{"USD/h", 1}, {"$/h", 1}}; break;
    case Quantity::kCount: break;
  }
  return units;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

}  // namespace

std::optional<double> parse_quantity(const std::string& text, Quantity quantity,
                                     std::string& error) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double number = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(number)) {
    error = "'" + text + "' is not a number";
    return std::nullopt;
  }
  const std::string_view unit = trim(std::string_view(end));
  if (unit.empty()) return number;
  const auto units = units_of(quantity);
  const auto found = units.find(unit);
  if (found == units.end()) {
    error = "'" + text + "': unknown unit '" + std::string(unit) + "'";
    if (!units.empty()) {
      error += quantity == Quantity::kBandwidth ? " (use e.g. GB/s, GiB/s or Gb/s)"
               : quantity == Quantity::kBytes   ? " (use e.g. GB or GiB)"
               : quantity == Quantity::kFlops   ? " (use e.g. TFLOP/s or TOPS)"
               : quantity == Quantity::kSeconds ? " (use s, ms, us or ns)"
                                                : " (use USD/h)";
    }
    return std::nullopt;
  }
  return number * found->second;
}

std::string human_bytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int index = 0;
  while (bytes >= 1024 && index < 4) {
    bytes /= 1024;
    ++index;
  }
  char text[64];
  if (index == 0)
    std::snprintf(text, sizeof text, "%.0f B", bytes);
  else
    std::snprintf(text, sizeof text, "%.1f %s", bytes, kUnits[index]);
  return text;
}

}  // namespace tandem
