#pragma once
#include <optional>
#include <string>

namespace tandem {

// What a figure measures; each has a base unit that plain numbers are read in.
enum class Quantity {
  kFlops,      // operations per second ("989 TFLOP/s", "624 TOPS")
  kBytes,      // bytes ("80 GB", "32 GiB")
  kBandwidth,  // bytes per second ("25 GB/s", "200 Gb/s" = 25 GB/s)
  kSeconds,    // seconds ("5 us", "0.5 µs", "10 ms")
  kPrice,      // US dollars per hour ("2.5 USD/h")
  kCount,      // a plain number (tile edges)
};

// Reads "<number> [unit]" in the given quantity; a plain number is in the base unit. Returns
// nullopt and sets `error` when the text is no number or the unit does not fit the quantity.
std::optional<double> parse_quantity(const std::string& text, Quantity quantity,
                                     std::string& error);

// A byte count for people: "1.2 MiB", "340 KiB", "12 B".
std::string human_bytes(double bytes);

}  // namespace tandem
