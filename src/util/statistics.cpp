#include "util/statistics.h"

#include <algorithm>
#include <cmath>

namespace tandem {

double quantile_of_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double position = q * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (sorted[above] - sorted[below]) * (position - static_cast<double>(below));
}

double quantile(std::vector<double> samples, double q) {
  std::sort(samples.begin(), samples.end());
  return quantile_of_sorted(samples, q);
}

double median(std::vector<double> samples) { return quantile(std::move(samples), 0.5); }

}  // namespace tandem
