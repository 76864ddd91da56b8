// Command-line overrides (KEY.PATH=VALUE) applied to the YAML tree before validation, and the
// did-you-mean helper.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "harness/config/experiment_config.h"

namespace xnn::config {
namespace {

bool is_index(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::string entries(size_t n) {
  if (n == 0) return "no entries";
  return std::to_string(n) + (n == 1 ? " entry" : " entries");
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

Override parse_override(const std::string& text) {
  const std::string where = "override '" + text + "': ";
  const size_t eq = text.find('=');
  if (eq == std::string::npos) throw Error(where + "expected KEY.PATH=VALUE, e.g. metrics.latency.runs=50");
  const std::string key = text.substr(0, eq);
  if (key.empty()) throw Error(where + "the key path before '=' is empty");
  Override ov;
  ov.text = text;
  size_t start = 0;
  while (true) {
    const size_t dot = key.find('.', start);
    std::string seg = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (seg.empty()) throw Error(where + "empty key in the path '" + key + "'");
    if (is_index(seg)) {  // "01" and "1" are the same index
      size_t idx = 0;
      const auto r = std::from_chars(seg.data(), seg.data() + seg.size(), idx);
      if (r.ec == std::errc()) seg = std::to_string(idx);
    }
    ov.path.push_back(seg);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  try {
    ov.value = YAML::Load(text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw Error(where + "the value is not valid YAML (" + e.msg + "); quote it: " + key + "='...'");
  }
  return ov;
}

void apply_override(YAML::Node& root, const Override& ov) {
  const std::string where = "override '" + ov.text + "': ";
  // yaml-cpp nodes are handles: `a = b` on an existing handle overwrites the node it refers to,
  // so walking uses reset() and a fresh handle per step.
  YAML::Node cur;
  cur.reset(root);
  std::string walked;  // the key path so far, for messages
  for (size_t i = 0; i < ov.path.size(); ++i) {
    const std::string& seg = ov.path[i];
    const bool last = i + 1 == ov.path.size();
    const std::string here = walked.empty() ? "the top level" : walked;
    if (cur.IsDefined() && cur.IsSequence()) {
      if (!is_index(seg)) {
        if (cur.size() == 0) throw Error(where + here + " is an empty list; it has no '" + seg + "'");
        throw Error(where + here + " is a list; expected an index (0.." + std::to_string(cur.size() - 1) + "), got '" +
                    seg + "'");
      }
      size_t idx = 0;
      const auto r = std::from_chars(seg.data(), seg.data() + seg.size(), idx);
      if (r.ec != std::errc() || idx >= cur.size()) throw Error(where + here + " has " + entries(cur.size()));
      YAML::Node next = cur[idx];
      if (last) {
        next = ov.value;  // replaces the element in place
      } else {
        cur.reset(next);
      }
    } else if (!cur.IsDefined() || cur.IsNull() || cur.IsMap()) {
      if (!cur.IsMap() && is_index(seg) && i > 0) throw Error(where + here + " has " + entries(0));
      if (last) {
        cur[seg] = ov.value;
      } else {
        YAML::Node next = cur[seg];
        cur.reset(next);
      }
    } else {
      throw Error(where + here + " is a single value ('" + cur.Scalar() + "'), not a map or a list");
    }
    walked += (walked.empty() ? "" : ".") + seg;
  }
}

size_t edit_distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string w = lower(word);
  const size_t allowed = w.size() <= 3 ? 1 : std::max<size_t>(2, w.size() / 3);
  std::string best;
  size_t best_d = allowed + 1;
  for (const std::string& c : candidates) {
    if (c == word) continue;
    const size_t d = edit_distance(w, lower(c));
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

}  // namespace xnn::config
