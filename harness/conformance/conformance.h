// Runs ONNX backend conformance tests (the layout of onnx/backend/test/data and Debian's
// libonnx-testdata): <suite>/<test>/model.onnx with test_data_set_*/{input,output}_N.pb.
// Each case runs in a forked child with a time limit, so a crash or hang in one case is
// recorded as a failure and the sweep goes on.
#pragma once
#include <string>
#include <vector>

namespace xnn::conformance {

struct Case {
  std::string suite;  // folder name, e.g. "node"
  std::string name;   // test folder name, e.g. "test_abs"
  std::string dir;    // full path of the test folder
  std::string id() const { return suite + "/" + name; }
};

enum class Outcome { kPass, kFail, kUnsupported };
const char* outcome_name(Outcome o);

struct Result {
  Case test;
  Outcome outcome = Outcome::kFail;
  std::string detail;  // first failure or unsupported reason
  double seconds = 0;
};

// `path` is a suite folder (contains test_* folders), a folder of suites, or one test folder.
std::vector<Case> discover(const std::string& path);

struct Tolerance {
  double rtol = 1e-3;  // ONNX backend test defaults
  double atol = 1e-7;
};

// Runs every test_data_set of one case in-process. Throws nothing: errors become results.
Result run_case(const Case& c, const Tolerance& tol = {});
// Same, isolated in a forked child with a time limit in seconds.
Result run_case_isolated(const Case& c, const Tolerance& tol, int timeout_seconds);

}  // namespace xnn::conformance
