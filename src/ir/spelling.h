#pragma once
// "Did you mean": the names closest to a misspelt one, for error messages.
#include <cstddef>
#include <span>
#include <string_view>

namespace tandem {

// Insertions, deletions and substitutions turning `a` into `b`.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest `word`, when it is at most `within` edits away; empty otherwise.
std::string_view nearest_spelling(std::string_view word,
                                  std::span<const std::string_view> candidates, size_t within);

}  // namespace tandem
