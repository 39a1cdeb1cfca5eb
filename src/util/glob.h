#pragma once
#include <string_view>

namespace tandem {

// Whether `text` matches `pattern`, a glob with * (any run of characters) and ? (any one).
bool glob_matches(std::string_view pattern, std::string_view text);

}  // namespace tandem
