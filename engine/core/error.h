// The engine's one exception type. Messages name the thing at fault (file, node, input) and what
// was expected, because they are shown to users as they are.
#pragma once
#include <stdexcept>
#include <string>

namespace xnn {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Raised for an op type or dtype the engine has no kernel for; the CLI maps it to its own
// exit code and the conformance runner counts it as "unsupported", not "failed".
class UnsupportedError : public Error {
 public:
  explicit UnsupportedError(const std::string& what) : Error(what) {}
};

// Shape inference needs an input's value that is only known at run time (data-dependent
// shapes); the session then runs the graph without a static plan.
class ValueNeededError : public Error {
 public:
  explicit ValueNeededError(const std::string& what) : Error(what) {}
};

#define XNN_CHECK(cond, msg)                      \
  do {                                            \
    if (!(cond)) throw ::xnn::Error(msg);         \
  } while (0)

}  // namespace xnn
