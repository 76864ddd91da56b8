#include "harness/conformance/conformance.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "engine/onnx/onnx_import.h"
#include "engine/onnx/onnx_tensor.h"
#include "engine/runtime/session.h"

namespace xnn::conformance {
namespace fs = std::filesystem;

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kPass: return "pass";
    case Outcome::kFail: return "fail";
    case Outcome::kUnsupported: return "unsupported";
  }
  return "?";
}

namespace {

bool is_case_dir(const fs::path& p) { return fs::is_regular_file(p / "model.onnx"); }

void add_suite(const fs::path& suite, std::vector<Case>& out) {
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(suite)) {
    if (e.is_directory() && is_case_dir(e.path())) dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& d : dirs) out.push_back(Case{suite.filename().string(), d.filename().string(), d.string()});
}

// Compares one output; returns an empty string when equal within tolerance.
std::string compare(const std::string& name, const Tensor& expected, const Tensor& got, const Tolerance& tol) {
  if (expected.dtype() != got.dtype()) {
    return "output '" + name + "': dtype " + std::string(dtype_name(got.dtype())) + ", expected " +
           std::string(dtype_name(expected.dtype()));
  }
  if (expected.shape() != got.shape()) {
    return "output '" + name + "': shape " + shape_str(got.shape()) + ", expected " + shape_str(expected.shape());
  }
  const int64_t n = expected.numel();
  for (int64_t i = 0; i < n; ++i) {
    const double e = expected.scalar_as_double(i), g = got.scalar_as_double(i);
    if (std::isnan(e) && std::isnan(g)) continue;
    if (std::isinf(e) && e == g) continue;
    if (!(std::fabs(e - g) <= tol.atol + tol.rtol * std::fabs(e))) {
      std::ostringstream msg;
      msg << "output '" << name << "'[" << i << "] = " << g << ", expected " << e << " (rtol " << tol.rtol
          << ", atol " << tol.atol << ")";
      return msg.str();
    }
  }
  return {};
}

std::vector<fs::path> sorted_pb(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, fs::path>> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    if (f.rfind(prefix, 0) == 0 && e.path().extension() == ".pb") {
      files.emplace_back(std::atoi(f.c_str() + prefix.size()), e.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<fs::path> out;
  for (auto& [i, p] : files) out.push_back(p);
  return out;
}

}  // namespace

std::vector<Case> discover(const std::string& path) {
  std::vector<Case> out;
  const fs::path p(path);
  if (!fs::is_directory(p)) throw Error(path + ": not a folder of conformance tests");
  if (is_case_dir(p)) {
    out.push_back(Case{p.parent_path().filename().string(), p.filename().string(), p.string()});
    return out;
  }
  bool has_cases = false;
  for (const auto& e : fs::directory_iterator(p)) has_cases = has_cases || (e.is_directory() && is_case_dir(e.path()));
  if (has_cases) {
    add_suite(p, out);
    return out;
  }
  std::vector<fs::path> suites;
  for (const auto& e : fs::directory_iterator(p)) {
    if (e.is_directory()) suites.push_back(e.path());
  }
  std::sort(suites.begin(), suites.end());
  for (const fs::path& s : suites) add_suite(s, out);
  return out;
}

Result run_case(const Case& c, const Tolerance& tol) {
  Result r;
  r.test = c;
  const auto start = std::chrono::steady_clock::now();
  try {
    auto model = std::make_shared<Model>(import_onnx_file(c.dir + "/model.onnx"));
    Session session(model);
    std::vector<fs::path> sets;
    for (const auto& e : fs::directory_iterator(c.dir)) {
      if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
    }
    std::sort(sets.begin(), sets.end());
    if (sets.empty()) throw Error(c.dir + ": no test_data_set_* folder");
    for (const fs::path& set : sets) {
      std::map<std::string, Tensor> inputs;
      const auto input_files = sorted_pb(set, "input_");
      // Files are positional: input_k feeds the k-th runtime input.
      for (size_t k = 0; k < input_files.size() && k < session.inputs().size(); ++k) {
        inputs[session.inputs()[k].name] = load_onnx_tensor_file(input_files[k].string());
      }
      std::vector<Tensor> outs = session.run(inputs);
      const auto output_files = sorted_pb(set, "output_");
      if (output_files.size() != outs.size()) {
        throw Error(set.string() + ": " + std::to_string(output_files.size()) + " expected outputs, model produced " +
                    std::to_string(outs.size()));
      }
      for (size_t k = 0; k < outs.size(); ++k) {
        const Tensor expected = load_onnx_tensor_file(output_files[k].string());
        const std::string diff = compare(session.outputs()[k].name, expected, outs[k], tol);
        if (!diff.empty()) throw Error(set.filename().string() + ": " + diff);
      }
    }
    r.outcome = Outcome::kPass;
  } catch (const UnsupportedError& e) {
    r.outcome = Outcome::kUnsupported;
    r.detail = e.what();
  } catch (const std::exception& e) {
    r.outcome = Outcome::kFail;
    r.detail = e.what();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

Result run_case_isolated(const Case& c, const Tolerance& tol, int timeout_seconds) {
  int fds[2];
  if (pipe(fds) != 0) return run_case(c, tol);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return run_case(c, tol);
  }
  if (pid == 0) {
    close(fds[0]);
    alarm(static_cast<unsigned>(timeout_seconds));
    const Result r = run_case(c, tol);
    const std::string msg = std::to_string(static_cast<int>(r.outcome)) + "\n" + r.detail;
    size_t off = 0;
    while (off < msg.size()) {
      const ssize_t w = write(fds[1], msg.data() + off, msg.size() - off);
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string msg;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) msg.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  Result r;
  r.test = c;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFSIGNALED(status)) {
    r.outcome = Outcome::kFail;
    r.detail = WTERMSIG(status) == SIGALRM ? "timed out after " + std::to_string(timeout_seconds) + " s"
                                            : "crashed with signal " + std::to_string(WTERMSIG(status));
    return r;
  }
  const size_t nl = msg.find('\n');
  if (nl == std::string::npos) {
    r.outcome = Outcome::kFail;
    r.detail = "child exited without a result";
    return r;
  }
  r.outcome = static_cast<Outcome>(std::atoi(msg.substr(0, nl).c_str()));
  r.detail = msg.substr(nl + 1);
  return r;
}

}  // namespace xnn::conformance
