#pragma once

namespace tandem {

// The "schema_version" of every verb's --json output (docs/JSON.md): raised when a key is
// renamed or removed, or changes type or unit, so that scripts can tell.
inline constexpr int kJsonSchemaVersion = 1;

}  // namespace tandem
