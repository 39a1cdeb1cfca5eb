#pragma once
#include <stdexcept>
#include <string>

namespace tandem {

// Bad input from the user: a model, tensor or option that cannot be used. The CLI prints it as
// `tandem: error: <subject>: <message>` and exits with status 2.
class InputError : public std::runtime_error {
 public:
  InputError(std::string subject, const std::string& message)
      : std::runtime_error(message), subject_(std::move(subject)) {}
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
  const std::string& subject() const { return subject_; }
  void set_subject(std::string subject) { subject_ = std::move(subject); }

 private:
  std::string subject_;
};

}  // namespace tandem
