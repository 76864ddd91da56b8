// The Prometheus metrics module: exact text exposition (0.0.4) for counters, gauges and
// histograms with labels, escaping, cumulative buckets with +Inf, naming rules, thread safety,
// the node_exporter textfile's atomic replacement, the results-store gauges, the Pushgateway's
// grouping path and request, and the HTTP exporter (served text, port in use, bad address).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/error.h"
#include "harness/metrics/http_exporter.h"
#include "harness/metrics/push_gateway.h"
#include "harness/metrics/registry.h"
#include "harness/metrics/store_metrics.h"
#include "harness/metrics/text_serializer.h"
#include "harness/metrics/textfile.h"
#include "harness/store/store.h"

namespace xnn::metrics {
namespace {
namespace fs = std::filesystem;

std::string serialize(const Registry& r) { return TextSerializer().Serialize(r.Collect()); }

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "xnn_metrics_test_XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A minimal HTTP/1.1 exchange over a raw socket (the test does not need an HTTP library).
std::string http_request(int port, const std::string& request) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(s);
    return "";
  }
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = send(s, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string response;
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(s, buf, sizeof(buf), 0);
    if (n <= 0) break;
    response.append(buf, static_cast<size_t>(n));
  }
  close(s);
  return response;
}

std::string http_get(int port, const std::string& path) {
  return http_request(port, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
}

// ---- exposition text ------------------------------------------------------------------------

TEST(TextSerializer, CountersAndGaugesWithLabelsExactText) {
  Registry r;
  auto& jobs = BuildCounter().Name("xnn_lab_jobs_total").Help("Jobs finished").Register(r);
  jobs.Add({{"outcome", "done"}, {"experiment", "quick"}}).Increment();
  jobs.Add({{"outcome", "done"}, {"experiment", "quick"}}).Increment(2);
  jobs.Add({{"outcome", "failed"}, {"experiment", "quick"}});
  auto& size = BuildGauge().Name("xnn_lab_model_size_bytes").Help("Model size").Register(r);
  size.Add({{"model", "cnn"}}).Set(96512);
  size.Add({{"model", "big"}}).Set(1.5e9);
  BuildGauge().Name("xnn_lab_up").Help("No labels").Register(r).Add({}).Set(0.25);
  EXPECT_EQ(serialize(r),
            "# HELP xnn_lab_jobs_total Jobs finished\n"
            "# TYPE xnn_lab_jobs_total counter\n"
            "xnn_lab_jobs_total{experiment=\"quick\",outcome=\"done\"} 3\n"
            "xnn_lab_jobs_total{experiment=\"quick\",outcome=\"failed\"} 0\n"
            "# HELP xnn_lab_model_size_bytes Model size\n"
            "# TYPE xnn_lab_model_size_bytes gauge\n"
            "xnn_lab_model_size_bytes{model=\"big\"} 1500000000\n"
            "xnn_lab_model_size_bytes{model=\"cnn\"} 96512\n"
            "# HELP xnn_lab_up No labels\n"
            "# TYPE xnn_lab_up gauge\n"
            "xnn_lab_up 0.25\n");
}

TEST(TextSerializer, ConstantLabelsAreMergedInNameOrder) {
  Registry r;
  auto& g = BuildGauge().Name("g").Help("h").Labels({{"b_const", "1"}}).Register(r);
  g.Add({{"a", "x"}, {"c", "y"}}).Set(2);
  EXPECT_EQ(serialize(r), "# HELP g h\n# TYPE g gauge\ng{a=\"x\",b_const=\"1\",c=\"y\"} 2\n");
}

TEST(TextSerializer, EscapesHelpAndLabelValues) {
  Registry r;
  auto& g = BuildGauge().Name("esc").Help("path C:\\models\nsecond \"line\"").Register(r);
  g.Add({{"model", "a\"b\\c\nd"}}).Set(1);
  EXPECT_EQ(serialize(r),
            "# HELP esc path C:\\\\models\\nsecond \"line\"\n"  // HELP: \ and newline only
            "# TYPE esc gauge\n"
            "esc{model=\"a\\\"b\\\\c\\nd\"} 1\n");
  EXPECT_EQ(EscapeLabelValue("plain-value_1.0"), "plain-value_1.0");
  EXPECT_EQ(EscapeHelp("a\\b"), "a\\\\b");
}

TEST(TextSerializer, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  Registry r;
  auto& h = BuildHistogram().Name("xnn_lab_job_seconds").Help("Job time").Register(r);
  auto& quick = h.Add({{"experiment", "quick"}}, Histogram::BucketBoundaries{0.1, 1, 10});
  for (double v : {0.05, 0.1, 0.5, 0.7, 3.0, 42.0}) quick.Observe(v);
  h.Add({{"experiment", "empty"}}, Histogram::BucketBoundaries{0.1, 1, 10});
  EXPECT_EQ(serialize(r),
            "# HELP xnn_lab_job_seconds Job time\n"
            "# TYPE xnn_lab_job_seconds histogram\n"
            "xnn_lab_job_seconds_bucket{experiment=\"empty\",le=\"0.1\"} 0\n"
            "xnn_lab_job_seconds_bucket{experiment=\"empty\",le=\"1\"} 0\n"
            "xnn_lab_job_seconds_bucket{experiment=\"empty\",le=\"10\"} 0\n"
            "xnn_lab_job_seconds_bucket{experiment=\"empty\",le=\"+Inf\"} 0\n"
            "xnn_lab_job_seconds_sum{experiment=\"empty\"} 0\n"
            "xnn_lab_job_seconds_count{experiment=\"empty\"} 0\n"
            "xnn_lab_job_seconds_bucket{experiment=\"quick\",le=\"0.1\"} 2\n"  // 0.1 <= 0.1: le is inclusive
            "xnn_lab_job_seconds_bucket{experiment=\"quick\",le=\"1\"} 4\n"
            "xnn_lab_job_seconds_bucket{experiment=\"quick\",le=\"10\"} 5\n"
            "xnn_lab_job_seconds_bucket{experiment=\"quick\",le=\"+Inf\"} 6\n"
            "xnn_lab_job_seconds_sum{experiment=\"quick\"} 46.35\n"
            "xnn_lab_job_seconds_count{experiment=\"quick\"} 6\n");
}

TEST(TextSerializer, HistogramWithoutLabelsAndHandBuiltFamilyGetInf) {
  Registry r;
  BuildHistogram().Name("d_seconds").Help("d").Register(r).Add({}, Histogram::BucketBoundaries{1}).Observe(2);
  EXPECT_EQ(serialize(r),
            "# HELP d_seconds d\n# TYPE d_seconds histogram\n"
            "d_seconds_bucket{le=\"1\"} 0\nd_seconds_bucket{le=\"+Inf\"} 1\nd_seconds_sum 2\nd_seconds_count 1\n");
  // A family assembled by hand without the +Inf bucket still gets one (equal to the count).
  MetricFamily f{"x_seconds", "x", MetricType::Histogram, {}};
  ClientMetric m;
  m.histogram.sample_count = 3;
  m.histogram.sample_sum = 1.5;
  m.histogram.bucket = {{1, 0.5}};
  f.metric.push_back(m);
  EXPECT_EQ(TextSerializer().Serialize({f}),
            "# HELP x_seconds x\n# TYPE x_seconds histogram\n"
            "x_seconds_bucket{le=\"0.5\"} 1\nx_seconds_bucket{le=\"+Inf\"} 3\nx_seconds_sum 1.5\nx_seconds_count 3\n");
}

TEST(TextSerializer, ValuesUseShortestRoundTripText) {
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(3), "3");
  EXPECT_EQ(FormatValue(-2.5), "-2.5");
  EXPECT_EQ(FormatValue(8.5e-05), "0.000085");
  EXPECT_EQ(FormatValue(0.0005), "0.0005");
  EXPECT_EQ(FormatValue(1e-7), "1e-07");
  EXPECT_EQ(FormatValue(1e21), "1e+21");
  EXPECT_EQ(FormatValue(123456789012.5), "123456789012.5");
  EXPECT_EQ(FormatValue(0.0), "0");
  EXPECT_EQ(FormatValue(-0.0), "-0");
  EXPECT_EQ(FormatValue(1733150103.123), "1733150103.123");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  const double v = 0.000123456789012345;
  EXPECT_EQ(std::stod(FormatValue(v)), v);
}

TEST(TextSerializer, FamiliesWithoutSamplesAreLeftOut) {
  Registry r;
  BuildGauge().Name("never_set").Help("no samples").Register(r);
  BuildCounter().Name("c_total").Help("c").Register(r).Add({});
  EXPECT_EQ(serialize(r), "# HELP c_total c\n# TYPE c_total counter\nc_total 0\n");
}

// ---- registry rules ---------------------------------------------------------------------------

TEST(MetricsRegistry, EnforcesNamingRules) {
  Registry r;
  EXPECT_THROW(BuildCounter().Name("xnn_lab_jobs").Help("h").Register(r), std::invalid_argument);  // no _total
  EXPECT_THROW(BuildGauge().Name("xnn_lab_jobs_total").Help("h").Register(r), std::invalid_argument);
  EXPECT_THROW(BuildGauge().Name("9starts_with_digit").Help("h").Register(r), std::invalid_argument);
  EXPECT_THROW(BuildGauge().Name("has-dash").Help("h").Register(r), std::invalid_argument);
  EXPECT_THROW(BuildGauge().Name("").Help("h").Register(r), std::invalid_argument);
  EXPECT_THROW(BuildGauge().Name("g").Help("h").Labels({{"bad-label", "x"}}).Register(r), std::invalid_argument);
  auto& g = BuildGauge().Name("ok:recorded_rule").Help("h").Register(r);
  EXPECT_THROW(g.Add({{"le", "1"}}), std::invalid_argument);
  EXPECT_THROW(g.Add({{"__reserved", "1"}}), std::invalid_argument);
  EXPECT_THROW(g.Add({{"1x", "1"}}), std::invalid_argument);
  EXPECT_NO_THROW(g.Add({{"model", "any \"value\" at all\n"}}));
  EXPECT_TRUE(IsValidMetricName("xnn_lab:rate5m"));
  EXPECT_FALSE(IsValidLabelName("with:colon"));
}

TEST(MetricsRegistry, SameNameReturnsTheFamilyAndClashesThrow) {
  Registry r;
  auto& a = BuildGauge().Name("g").Help("h").Register(r);
  auto& b = BuildGauge().Name("g").Help("h").Register(r);
  EXPECT_EQ(&a, &b);
  EXPECT_THROW(BuildGauge().Name("g").Help("other help").Register(r), std::invalid_argument);
  EXPECT_THROW(BuildHistogram().Name("g").Help("h").Register(r), std::invalid_argument);
  auto& m1 = a.Add({{"k", "v"}});
  auto& m2 = a.Add({{"k", "v"}});
  EXPECT_EQ(&m1, &m2);
  EXPECT_TRUE(a.Has({{"k", "v"}}));
  a.Remove(&m1);
  EXPECT_FALSE(a.Has({{"k", "v"}}));
  EXPECT_THROW(Histogram({1, 1}), std::invalid_argument);
  EXPECT_THROW(Histogram({2, 1}), std::invalid_argument);
  EXPECT_THROW(Histogram({1, std::numeric_limits<double>::infinity()}), std::invalid_argument);
}

TEST(MetricsRegistry, CounterNeverGoesDownGaugeDoes) {
  Counter c;
  c.Increment(2);
  c.Increment(-5);
  c.Increment(std::nan(""));
  EXPECT_EQ(c.Value(), 2);
  Gauge g;
  g.Increment(3);
  g.Decrement();
  EXPECT_EQ(g.Value(), 2);
  g.Set(-7.5);
  EXPECT_EQ(g.Value(), -7.5);
  g.SetToCurrentTime();
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_NEAR(g.Value(), now, 5.0);
}

TEST(MetricsRegistry, ThreadSafeUnderConcurrentUpdatesAndScrapes) {
  Registry r;
  auto& counters = BuildCounter().Name("hits_total").Help("h").Register(r);
  auto& gauges = BuildGauge().Name("level").Help("h").Register(r);
  auto& hists = BuildHistogram().Name("lat_seconds").Help("h").Register(r);
  constexpr int kThreads = 8, kIters = 20000;
  std::atomic<bool> stop{false};
  std::atomic<long> scrapes{0};
  std::thread scraper([&] {  // collects while the others write: every snapshot is consistent
    while (!stop) {
      for (const MetricFamily& f : r.Collect()) {
        for (const ClientMetric& m : f.metric) {
          if (f.type == MetricType::Histogram) {
            ASSERT_EQ(m.histogram.bucket.back().cumulative_count, m.histogram.sample_count);
            for (size_t i = 1; i < m.histogram.bucket.size(); ++i)
              ASSERT_LE(m.histogram.bucket[i - 1].cumulative_count, m.histogram.bucket[i].cumulative_count);
          }
        }
      }
      ++scrapes;
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        counters.Add({{"shared", "yes"}}).Increment();
        counters.Add({{"thread", std::to_string(t)}}).Increment(0.5);
        gauges.Add({}).Increment();
        hists.Add({}, Histogram::BucketBoundaries{0.001, 0.01}).Observe(i % 3 == 0 ? 0.0005 : 0.005);
      }
    });
  }
  for (auto& th : threads) th.join();
  stop = true;
  scraper.join();
  EXPECT_GT(scrapes.load(), 0);
  EXPECT_EQ(counters.Add({{"shared", "yes"}}).Value(), kThreads * kIters);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(counters.Add({{"thread", std::to_string(t)}}).Value(), kIters * 0.5);
  EXPECT_EQ(gauges.Add({}).Value(), kThreads * kIters);
  const ClientMetric h = hists.Add({}, Histogram::BucketBoundaries{0.001, 0.01}).Collect();
  EXPECT_EQ(h.histogram.sample_count, static_cast<uint64_t>(kThreads * kIters));
  const uint64_t small = static_cast<uint64_t>(kThreads) * ((kIters + 2) / 3);
  EXPECT_EQ(h.histogram.bucket[0].cumulative_count, small);
  EXPECT_EQ(h.histogram.bucket[1].cumulative_count, static_cast<uint64_t>(kThreads * kIters));
}

// ---- textfile ---------------------------------------------------------------------------------

TEST(MetricsTextfile, WritesAtomicallyAndLeavesNoTemporaryFile) {
  TempDir dir;
  Registry r;
  auto& g = BuildGauge().Name("xnn_lab_value").Help("v").Register(r);
  g.Add({}).Set(1);
  WriteTextfile(dir.path(), r.Collect());
  const std::string path = dir.path() + "/xnn_lab.prom";
  EXPECT_EQ(read_file(path), "# HELP xnn_lab_value v\n# TYPE xnn_lab_value gauge\nxnn_lab_value 1\n");

  // A reader polling the file while it is rewritten sees one complete version or the other,
  // never a half-written file (rename replaces it in one step).
  auto& big = BuildGauge().Name("xnn_lab_padding").Help("makes the file large").Register(r);
  for (int i = 0; i < 2000; ++i) big.Add({{"i", std::to_string(i)}}).Set(i);
  const std::string text_a = TextSerializer().Serialize(r.Collect());
  WriteTextfile(dir.path(), r.Collect());
  g.Add({}).Set(2);
  const std::string text_b = TextSerializer().Serialize(r.Collect());
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0}, reads{0};
  std::thread reader([&] {
    while (!stop) {
      const std::string seen = read_file(path);
      if (seen != text_a && seen != text_b) ++torn;
      ++reads;
    }
  });
  for (int i = 0; i < 60; ++i) {
    g.Add({}).Set(i % 2 ? 1 : 2);
    WriteTextfile(dir.path(), r.Collect());
  }
  stop = true;
  reader.join();
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(torn.load(), 0);
  for (const auto& e : fs::directory_iterator(dir.path())) EXPECT_EQ(e.path().filename(), "xnn_lab.prom");

  EXPECT_THROW(WriteTextfile(dir.path() + "/missing", r.Collect()), Error);
  EXPECT_THROW(WriteTextfile(dir.path(), r.Collect(), "not_prom.txt"), Error);
}

// ---- results store gauges ---------------------------------------------------------------------

TEST(MetricsStore, LatestResultsBecomeGaugesInBaseUnits) {
  TempDir dir;
  const std::string db = dir.path() + "/results.db";
  {
    Store store(db);
    store.ensure_experiment("quick", "quick.yaml");
    store.ensure_target(TargetRecord{0, "cpu-1t", "cpu", false, "{}"});
    RunRecord run;
    run.experiment = "quick";
    run.git_commit = "0123abcd";
    const std::string run_id = store.create_run(run);
    auto record = [&](const std::string& id, const std::string& variant, double median_ms, double top1) {
      JobRecord j;
      j.id = id;
      j.run_id = run_id;
      j.experiment = "quick";
      j.model = "cnn";
      j.variant = variant;
      j.target = "cpu-1t";
      store.start_job(j);
      JobResult res;
      res.metrics = {{"latency_ms_median", median_ms, "ms"},
                     {"latency_ms_p90", median_ms * 2, "ms"},
                     {"size_bytes", 96512, "bytes"},
                     {"top1", top1, "ratio"},
                     {"peak_rss_bytes", std::nan(""), "bytes"}};
      store.finish_job(id, res);
    };
    record("job-fp32", "fp32", 0.085, 0.8995);
    record("job-opt", "xnn \"opt\"", 0.25, 0.9);
  }
  Registry own;
  StoreCollector collector(db, own);
  const std::string text = TextSerializer().Serialize(collector.Collect());
  EXPECT_NE(text.find("# TYPE xnn_lab_latency_median_seconds gauge\n"), std::string::npos) << text;
  EXPECT_NE(text.find("xnn_lab_latency_median_seconds{experiment=\"quick\",model=\"cnn\",target=\"cpu-1t\",variant=\"fp32\"} 0.000085\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("xnn_lab_latency_p90_seconds{experiment=\"quick\",model=\"cnn\",target=\"cpu-1t\",variant=\"xnn \\\"opt\\\"\"} 0.0005\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("xnn_lab_model_size_bytes{experiment=\"quick\",model=\"cnn\",target=\"cpu-1t\",variant=\"fp32\"} 96512\n"),
            std::string::npos);
  EXPECT_NE(text.find("xnn_lab_accuracy_top1_ratio{experiment=\"quick\",model=\"cnn\",target=\"cpu-1t\",variant=\"fp32\"} 0.8995\n"),
            std::string::npos);
  EXPECT_NE(text.find("xnn_lab_target_info{kind=\"cpu\",simulated=\"false\",target=\"cpu-1t\"} 1\n"), std::string::npos);
  EXPECT_EQ(text.find("xnn_lab_peak_rss_bytes"), std::string::npos);  // NaN: left out
  EXPECT_EQ(text.find("0123abcd"), std::string::npos);                // never a commit
  EXPECT_EQ(text.find("run_id"), std::string::npos);
  // The timestamp is the job's finished_at.
  const size_t ts = text.find("xnn_lab_last_result_timestamp_seconds{experiment=\"quick\",model=\"cnn\",target=\"cpu-1t\",variant=\"fp32\"} ");
  ASSERT_NE(ts, std::string::npos);
  const double when = std::stod(text.substr(text.find("} ", ts) + 2));
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_NEAR(when, now, 120);
  EXPECT_EQ(own.Collect()[0].metric[0].counter.value, 0);

  // Read-only: the exporter's reads leave the file alone; a missing file is a counted error.
  StoreCollector missing(dir.path() + "/nope.db", own);
  std::string error;
  missing.set_error_handler([&](const std::string& m) { error = m; });
  EXPECT_TRUE(missing.Collect().empty());
  EXPECT_FALSE(fs::exists(dir.path() + "/nope.db"));
  EXPECT_NE(error.find("no such results database"), std::string::npos) << error;
  EXPECT_EQ(own.Collect()[0].metric[0].counter.value, 1);
}

TEST(MetricsStore, ReadsWhileAWriterHoldsItsTransaction) {
  TempDir dir;
  const std::string db = dir.path() + "/results.db";
  Store writer(db);
  writer.ensure_target(TargetRecord{0, "cpu", "cpu", false, "{}"});
  Registry own;
  StoreCollector collector(db, own);
  std::vector<MetricFamily> during;
  const auto start = std::chrono::steady_clock::now();
  writer.write_transaction([&] {
    writer.ensure_target(TargetRecord{0, "npu", "simulated-npu", true, "{}"});
    during = collector.Collect();  // WAL: the reader sees the last commit and does not wait
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  const std::string text = TextSerializer().Serialize(during);
  EXPECT_NE(text.find("target=\"cpu\""), std::string::npos) << text;
  EXPECT_EQ(text.find("target=\"npu\""), std::string::npos) << text;
  EXPECT_EQ(own.Collect()[0].metric[0].counter.value, 0);
}

TEST(MetricsStore, ReadOnlyStoreWritesNothingAndNeedsWal) {
  TempDir dir;
  const std::string db = dir.path() + "/results.db";
  { Store create(db); }
  StoreOptions ro;
  ro.read_only = true;
  {
    Store reader(db, ro);
    EXPECT_TRUE(reader.list_targets().empty());
    EXPECT_ANY_THROW(reader.ensure_target(TargetRecord{0, "cpu", "cpu", false, "{}"}));
  }
  {  // leaving WAL needs every other connection closed
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "PRAGMA journal_mode=DELETE", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(raw);
  }
  try {
    Store again(db, ro);
    ADD_FAILURE() << "a rollback-journal database was opened read-only";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not in WAL journal mode"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Store(dir.path() + "/absent.db", ro), Error);
  EXPECT_FALSE(fs::exists(dir.path() + "/absent.db"));
}

TEST(MetricsStore, ParsesStoreTimestamps) {
  EXPECT_DOUBLE_EQ(ParseUtcIso("1970-01-01T00:00:01.500Z"), 1.5);
  EXPECT_DOUBLE_EQ(ParseUtcIso("2026-12-02T14:15:03.000Z"), 1796220903.0);
  EXPECT_TRUE(std::isnan(ParseUtcIso("2026-12-02 14:15:03")));
  EXPECT_TRUE(std::isnan(ParseUtcIso("")));
}

// ---- Pushgateway ------------------------------------------------------------------------------

TEST(MetricsPushGateway, GroupingPathEncodesValues) {
  EXPECT_EQ(Gateway::GroupingPath("xnn-lab", {{"instance", "box1"}}), "/metrics/job/xnn-lab/instance/box1");
  EXPECT_EQ(Gateway::GroupingPath("xnn-lab", {{"instance", "box1"}, {"experiment", "quick start"}}),
            "/metrics/job/xnn-lab/instance/box1/experiment/quick%20start");
  EXPECT_EQ(Gateway::GroupingPath("xnn-lab", {{"instance", "a/b"}}), "/metrics/job/xnn-lab/instance@base64/YS9i");
  EXPECT_EQ(Gateway::GroupingPath("xnn-lab", {{"instance", ""}}), "/metrics/job/xnn-lab/instance@base64/=");
  EXPECT_THROW(Gateway("127.0.0.1:9091", "xnn-lab"), Error);
  EXPECT_THROW(Gateway("http://127.0.0.1:9091", ""), Error);
  EXPECT_EQ(Gateway("http://gw:9091/prefix/", "j", {{"instance", "i"}}).GroupUrl(),
            "http://gw:9091/prefix/metrics/job/j/instance/i");
}

// A one-request HTTP server on a loopback port that records what it received.
class OneShotServer {
 public:
  explicit OneShotServer(int status) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    listen(fd_, 1);
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, status] {
      const int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      size_t need = std::string::npos;
      while (need == std::string::npos || request_.size() < need) {
        const ssize_t n = recv(c, buf, sizeof(buf), 0);
        if (n <= 0) break;
        request_.append(buf, static_cast<size_t>(n));
        const size_t end = request_.find("\r\n\r\n");
        if (end != std::string::npos && need == std::string::npos) {
          const size_t cl = request_.find("Content-Length: ");
          need = end + 4 + (cl != std::string::npos && cl < end ? std::stoul(request_.substr(cl + 16)) : 0);
        }
      }
      const std::string reply = "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope";
      send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      close(c);
    });
  }
  ~OneShotServer() {
    shutdown(fd_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    close(fd_);
  }
  int port() const { return port_; }
  std::string request() {
    if (thread_.joinable()) thread_.join();
    return request_;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::string request_;
};

TEST(MetricsPushGateway, PushAddPostsTheTextFormatToTheGroup) {
  auto registry = std::make_shared<Registry>();
  BuildGauge().Name(kLastSuccessTimestampSeconds).Help("t").Register(*registry).Add({{"experiment", "q"}}).Set(1700000000);
  OneShotServer server(200);
  Gateway gw("http://127.0.0.1:" + std::to_string(server.port()), "xnn-lab", {{"instance", "box"}, {"experiment", "q"}});
  gw.RegisterCollectable(registry);
  EXPECT_EQ(gw.PushAdd(), 200) << gw.LastError();
  const std::string req = server.request();
  EXPECT_EQ(req.rfind("POST /metrics/job/xnn-lab/instance/box/experiment/q HTTP/1.1\r\n", 0), 0u) << req;
  EXPECT_NE(req.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"), std::string::npos) << req;
  EXPECT_NE(req.find("\r\n\r\n# HELP xnn_lab_last_success_timestamp_seconds t\n# TYPE xnn_lab_last_success_timestamp_seconds gauge\n"
                     "xnn_lab_last_success_timestamp_seconds{experiment=\"q\"} 1700000000\n"),
            std::string::npos)
      << req;

  OneShotServer refusing(400);
  Gateway gw2("http://127.0.0.1:" + std::to_string(refusing.port()), "xnn-lab");
  gw2.RegisterCollectable(registry);
  EXPECT_EQ(gw2.Push(), 400);
  EXPECT_EQ(refusing.request().rfind("PUT /metrics/job/xnn-lab HTTP/1.1", 0), 0u);
  EXPECT_NE(gw2.LastError().find("HTTP 400: nope"), std::string::npos) << gw2.LastError();

  // Nothing listening: -1 and the reason.
  const int closed_port = [] {
    OneShotServer s(200);
    return s.port();
  }();
  Gateway gw3("http://127.0.0.1:" + std::to_string(closed_port), "xnn-lab");
  EXPECT_EQ(gw3.PushAdd(), -1);
  EXPECT_FALSE(gw3.LastError().empty());
}

// ---- HTTP exporter ----------------------------------------------------------------------------

TEST(MetricsExposer, ServesTheTextFormatAndCountsScrapes) {
  auto registry = std::make_shared<Registry>();
  BuildGauge().Name("xnn_lab_test_value").Help("v").Register(*registry).Add({{"model", "cnn"}}).Set(42);
  Exposer exposer("127.0.0.1:0");
  exposer.RegisterCollectable(registry);
  const int port = exposer.GetListeningPorts().at(0);
  ASSERT_GT(port, 0);
  EXPECT_EQ(exposer.Url(), "http://127.0.0.1:" + std::to_string(port) + "/metrics");
  const std::string first = http_get(port, "/metrics");
  EXPECT_EQ(first.rfind("HTTP/1.1 200", 0), 0u) << first;
  EXPECT_NE(first.find("Content-Type: text/plain; version=0.0.4; charset=utf-8"), std::string::npos) << first;
  EXPECT_NE(first.find("\nxnn_lab_test_value{model=\"cnn\"} 42\n"), std::string::npos) << first;
  EXPECT_NE(first.find("\nxnn_lab_exporter_scrapes_total 1\n"), std::string::npos) << first;
  const std::string second = http_get(port, "/metrics");
  EXPECT_NE(second.find("\nxnn_lab_exporter_scrapes_total 2\n"), std::string::npos) << second;
  EXPECT_NE(second.find("xnn_lab_exporter_scrape_duration_seconds_count 1\n"), std::string::npos) << second;
  EXPECT_EQ(http_get(port, "/nothing").rfind("HTTP/1.1 404", 0), 0u);

  // The same port again: a clear error, not a silently shared port.
  try {
    Exposer again("127.0.0.1:" + std::to_string(port));
    ADD_FAILURE() << "second exporter on port " << port << " did not fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("address already in use"), std::string::npos) << e.what();
  }
  exposer.Stop();
  EXPECT_FALSE(exposer.IsRunning());
  EXPECT_EQ(http_get(port, "/metrics"), "");  // nothing listens any more
}

TEST(MetricsExposer, RejectsBadListenAddresses) {
  EXPECT_THROW(ParseListenAddress("9464"), Error);
  EXPECT_THROW(ParseListenAddress("127.0.0.1:"), Error);
  EXPECT_THROW(ParseListenAddress("127.0.0.1:http"), Error);
  EXPECT_THROW(ParseListenAddress("127.0.0.1:70000"), Error);
  EXPECT_THROW(ParseListenAddress("::1:9464"), Error);
  EXPECT_EQ(ParseListenAddress("[::1]:9464").host, "::1");
  EXPECT_EQ(ParseListenAddress(":9464").host, "0.0.0.0");
  EXPECT_EQ(ParseListenAddress("localhost:0").port, 0);
  try {
    Exposer bad("no.such.host.invalid:9464");
    ADD_FAILURE() << "unknown host accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown host 'no.such.host.invalid'"), std::string::npos) << e.what();
  }
  try {
    Exposer foreign("192.0.2.1:0");  // TEST-NET-1: an address no interface here has
    ADD_FAILURE() << "foreign address accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot listen on 192.0.2.1:0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace xnn::metrics
