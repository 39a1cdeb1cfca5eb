#include "ir/spelling.h"

#include <algorithm>
#include <vector>

namespace tandem {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string_view nearest_spelling(std::string_view word,
                                  std::span<const std::string_view> candidates, size_t within) {
  std::string_view nearest;
  size_t best = within + 1;
  for (std::string_view candidate : candidates) {
    const size_t distance = edit_distance(word, candidate);
    if (distance < best) best = distance, nearest = candidate;
  }
  return nearest;
}

}  // namespace tandem
