// xnn-lab conformance [DIR...]: the ONNX backend test suites, counted per folder, with a
// committed must-pass list that makes any regression fail.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "harness/conformance/conformance.h"
#include "harness/util/json.h"
#include "harness/cli/commands.h"

namespace xnn::cli {

void add_conformance_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("conformance", "Run ONNX backend conformance tests and count pass/fail/unsupported per folder");
  static std::vector<std::string> dirs;
  static std::string must_pass, write_passing, filter;
  static bool as_json = false, verbose = false;
  static int jobs = 2, timeout = 120;
  cmd->add_option("dirs", dirs, "Suite folders, folders of suites, or single tests (default: Debian's libonnx-testdata)");
  cmd->add_option("--must-pass", must_pass, "File listing suite/test ids that must pass; any that does not fails the run")
      ->check(CLI::ExistingFile);
  cmd->add_option("--write-passing", write_passing, "Write the ids of passing tests to this file");
  cmd->add_option("--filter", filter, "Only tests whose id contains this text");
  cmd->add_option("-j,--jobs", jobs, "Tests run at once (each in its own process)")->check(CLI::Range(1, 64));
  cmd->add_option("--timeout", timeout, "Seconds one test may take")->check(CLI::Range(1, 3600));
  cmd->add_flag("--json", as_json, "Print results as JSON");
  cmd->add_flag("-v,--verbose", verbose, "Print every test's outcome");
  cmd->callback([&exit_code] {
    if (dirs.empty()) dirs.push_back("/usr/share/libonnx-testdata/data");
    std::vector<conformance::Case> cases;
    for (const std::string& d : dirs) {
      for (auto& c : conformance::discover(d)) {
        if (filter.empty() || c.id().find(filter) != std::string::npos) cases.push_back(std::move(c));
      }
    }
    std::vector<conformance::Result> results(cases.size());
    std::atomic<size_t> next{0};
    std::vector<std::thread> workers;
    for (int j = 0; j < jobs; ++j) {
      workers.emplace_back([&] {
        for (size_t i = next++; i < cases.size(); i = next++) {
          results[i] = conformance::run_case_isolated(cases[i], conformance::Tolerance{}, timeout);
        }
      });
    }
    for (auto& w : workers) w.join();

    std::map<std::string, std::array<int, 3>> per_suite;
    std::set<std::string> passing;
    for (const auto& r : results) {
      per_suite[r.test.suite][static_cast<int>(r.outcome)]++;
      if (r.outcome == conformance::Outcome::kPass) passing.insert(r.test.id());
    }
    std::vector<std::string> regressions;
    if (!must_pass.empty()) {
      std::ifstream f(must_pass);
      std::string line;
      std::set<std::string> ran;
      for (const auto& r : results) ran.insert(r.test.id());
      while (std::getline(f, line)) {
        if (line.empty() || line[0] == '#') continue;
        if (ran.count(line) && !passing.count(line)) regressions.push_back(line);
      }
    }
    if (!write_passing.empty()) {
      std::ofstream f(write_passing);
      f << "# ONNX conformance tests that must pass (suite/test), written by xnn-lab conformance --write-passing\n";
      for (const std::string& id : passing) f << id << "\n";
    }
    if (as_json) {
      json::Writer w;
      w.begin_object().key("suites").begin_object();
      for (const auto& [suite, c] : per_suite) {
        w.key(suite).begin_object().field("pass", c[0]).field("fail", c[1]).field("unsupported", c[2]).end_object();
      }
      w.end_object().key("tests").begin_array();
      for (const auto& r : results) {
        w.begin_object().field("id", r.test.id()).field("outcome", conformance::outcome_name(r.outcome));
        w.field("detail", r.detail).field("seconds", r.seconds).end_object();
      }
      w.end_array().key("must_pass_failures").begin_array();
      for (const auto& id : regressions) w.value(id);
      w.end_array().end_object();
      std::printf("%s\n", w.str().c_str());
    } else {
      for (const auto& r : results) {
        if (verbose || r.outcome == conformance::Outcome::kFail) {
          std::string detail = r.detail.substr(0, r.detail.find('\n'));
          std::printf("%-11s %s  %s\n", conformance::outcome_name(r.outcome), r.test.id().c_str(), detail.c_str());
        }
      }
      int tp = 0, tf = 0, tu = 0;
      std::printf("\n%-20s %6s %6s %12s\n", "folder", "pass", "fail", "unsupported");
      for (const auto& [suite, c] : per_suite) {
        std::printf("%-20s %6d %6d %12d\n", suite.c_str(), c[0], c[1], c[2]);
        tp += c[0], tf += c[1], tu += c[2];
      }
      std::printf("%-20s %6d %6d %12d\n", "total", tp, tf, tu);
      for (const auto& id : regressions) std::printf("REGRESSION: %s is in the must-pass list but did not pass\n", id.c_str());
    }
    exit_code = regressions.empty() ? 0 : 1;
  });
}

}  // namespace xnn::cli
