#pragma once
#include <vector>

namespace tandem {

// The q-quantile (q in [0, 1]) of ascending `sorted`, interpolated between its neighbours; 0
// when empty.
double quantile_of_sorted(const std::vector<double>& sorted, double q);
// The same of unsorted samples.
double quantile(std::vector<double> samples, double q);
// quantile(samples, 0.5): the middle sample, or the mean of the middle two.
double median(std::vector<double> samples);

}  // namespace tandem
