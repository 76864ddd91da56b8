#include "harness/metrics/push_gateway.h"

#include <httplib.h>

#include "engine/core/error.h"
#include "harness/metrics/text_serializer.h"

namespace xnn::metrics {

namespace {

std::string base64url(const std::string& in) {
  static const char* const kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i + 1 == in.size()) {
    const unsigned v = static_cast<unsigned char>(in[i]) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::string percent_encode(const std::string& in) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : in) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string segment(const std::string& name, const std::string& value) {
  if (value.empty() || value.find('/') != std::string::npos) {
    // The Pushgateway's form for values a path segment cannot carry; "=" is the empty value.
    return "/" + name + "@base64/" + (value.empty() ? std::string("=") : base64url(value));
  }
  return "/" + name + "/" + percent_encode(value);
}

}  // namespace

std::string Gateway::GroupingPath(const std::string& job, const Labels& labels) {
  std::string path = "/metrics" + segment("job", job);
  auto instance = labels.find("instance");
  if (instance != labels.end()) path += segment("instance", instance->second);
  for (const auto& [name, value] : labels) {
    if (name != "instance") path += segment(name, value);
  }
  return path;
}

Gateway::Gateway(const std::string& url, const std::string& job_name, const Labels& grouping_labels) {
  const size_t scheme_end = url.find("://");
  const std::string scheme = scheme_end == std::string::npos ? "" : url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https")
    throw Error("Pushgateway URL '" + url + "': expected http://HOST:PORT (or https://), e.g. http://127.0.0.1:9091");
  const size_t host_start = scheme_end + 3;
  const size_t path_start = url.find('/', host_start);
  const std::string host = url.substr(host_start, path_start == std::string::npos ? std::string::npos : path_start - host_start);
  if (host.empty() || host[0] == ':') throw Error("Pushgateway URL '" + url + "': no host");
  base_ = scheme + "://" + host;
  prefix_ = path_start == std::string::npos ? "" : url.substr(path_start);
  while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
  if (job_name.empty()) throw Error("Pushgateway: the job name is empty");
  for (const auto& [name, value] : grouping_labels) {
    if (!IsValidLabelName(name) || name == "job") throw Error("Pushgateway: invalid grouping label name '" + name + "'");
  }
  path_ = GroupingPath(job_name, grouping_labels);
}

Gateway::~Gateway() = default;

void Gateway::RegisterCollectable(const std::weak_ptr<Collectable>& collectable) { collectables_.push_back(collectable); }

std::string Gateway::GroupUrl() const { return base_ + prefix_ + path_; }

int Gateway::Push() { return send("PUT"); }
int Gateway::PushAdd() { return send("POST"); }
int Gateway::Delete() { return send("DELETE"); }

int Gateway::send(const char* method) {
  last_error_.clear();
  std::vector<MetricFamily> families;
  for (const auto& w : collectables_) {
    if (auto c = w.lock()) {
      for (MetricFamily& f : c->Collect()) families.push_back(std::move(f));
    }
  }
  const std::string body = TextSerializer().Serialize(families);
  httplib::Client client(base_);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(10, 0);
  client.set_write_timeout(10, 0);
  const std::string path = prefix_ + path_;
  const std::string m = method;
  httplib::Result res = m == "PUT"    ? client.Put(path.c_str(), body, kTextContentType)
                        : m == "POST" ? client.Post(path.c_str(), body, kTextContentType)
                                      : client.Delete(path.c_str());
  if (!res) {
    last_error_ = m + " " + GroupUrl() + ": " + httplib::to_string(res.error());
    return -1;
  }
  if (res->status < 200 || res->status > 299) {
    std::string detail = res->body;
    while (!detail.empty() && (detail.back() == '\n' || detail.back() == '\r')) detail.pop_back();
    last_error_ = m + " " + GroupUrl() + ": HTTP " + std::to_string(res->status) + (detail.empty() ? "" : ": " + detail);
  }
  return res->status;
}

}  // namespace xnn::metrics
