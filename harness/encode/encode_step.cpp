#include "harness/encode/encode_step.h"

#include <filesystem>
#include <fstream>

#include "engine/core/error.h"
#include "harness/encode/encode_job.h"

namespace xnn::encode {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kKeys = {"bits", "bits_per_layer", "coder", "cluster", "keep_zero", "min_elements"};

// "exp.yaml:14:9" for a parameter's value: the file of the step's location, the value's line/column.
std::string where(const std::string& step_location, const YAML::Node& value) {
  const std::string file = step_location.substr(0, step_location.find(':'));
  const YAML::Mark m = value.Mark();
  if (m.is_null()) return step_location;
  return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

template <typename T>
T get(const YAML::Node& v, const std::string& key, const std::string& loc, const char* expected) {
  try {
    if (!v.IsScalar()) throw YAML::Exception(v.Mark(), "not a scalar");
    return v.as<T>();
  } catch (const YAML::Exception&) {
    throw Error(where(loc, v) + ": step 'encode': '" + key + "' must be " + expected);
  }
}

class EncodeStep : public Step {
 public:
  EncodeStep(EncodeOptions options, std::string description) : options_(std::move(options)), description_(std::move(description)) {}

  std::string describe() const override { return description_; }

  std::string apply(const std::string& input, const StepContext& ctx) const override {
    EncodeJob job;
    job.model_path = input;
    job.output_path = (fs::path(ctx.work_dir) / "encoded.xnn").string();
    job.options = options_;
    job.load_repetitions = 0;
    EncodeJobResult r;
    try {
      r = run_encode_job(job);
    } catch (const Error& e) {
      throw Error(ctx.location + ": step 'encode': " + e.what());
    }
    std::ofstream report(fs::path(ctx.work_dir) / "encode_report.json");
    report << to_json(r) << "\n";
    // The coded weights' figures go to the job's metrics (the runner adds size_bytes itself).
    const TensorEncodeReport& t = r.report.total;
    const double weights = static_cast<double>(t.numel);
    if (weights > 0) {
      ctx.record("encode.weights", weights, "count");
      ctx.record("encode.weight_bytes_before", static_cast<double>(t.bytes_before), "bytes");
      ctx.record("encode.weight_bytes_after", static_cast<double>(t.bytes_after), "bytes");
      ctx.record("encode.bits_per_weight", 8.0 * static_cast<double>(t.bytes_after) / weights, "bits");
      ctx.record("encode.entropy_bits_per_weight", t.entropy_bits / weights, "bits");
      ctx.record("encode.payload_bits_per_weight", t.coder_bits / weights, "bits");
      ctx.record("encode.zstd19_bits_per_weight", t.zstd_bits / weights, "bits");
      ctx.record("encode.xz9_bits_per_weight", t.xz_bits / weights, "bits");
    }
    ctx.record("encode.dense_file_bytes", static_cast<double>(r.dense_file_bytes), "bytes");
    return job.output_path;
  }

 private:
  EncodeOptions options_;
  std::string description_;
};

std::unique_ptr<Step> make_step(const YAML::Node& p, const std::string& loc) {
  check_step_params(p, "encode", loc, kKeys);
  EncodeOptions o;
  auto check_bits = [&](int bits, const YAML::Node& n, const std::string& key) {
    if (bits < 1 || bits > 8) throw Error(where(loc, n) + ": step 'encode': '" + key + "' must be 1..8 bits");
  };
  if (p && p["bits"]) {
    o.bits = get<int>(p["bits"], "bits", loc, "an integer (1..8)");
    check_bits(o.bits, p["bits"], "bits");
  }
  std::string d = "encode(bits=" + std::to_string(o.bits);
  if (p && p["bits_per_layer"]) {
    const YAML::Node m = p["bits_per_layer"];
    if (!m.IsMap()) throw Error(where(loc, m) + ": step 'encode': 'bits_per_layer' must be a mapping of name: bits");
    for (const auto& kv : m) {
      const std::string name = kv.first.as<std::string>();
      const int bits = get<int>(kv.second, "bits_per_layer." + name, loc, "an integer (1..8)");
      check_bits(bits, kv.second, "bits_per_layer." + name);
      o.bits_per_layer[name] = bits;
    }
    for (const auto& [name, bits] : o.bits_per_layer) d += "," + name + "=" + std::to_string(bits);
  }
  if (p && p["coder"]) {
    try {
      o.coder = coding::symbol_coder_from_name(get<std::string>(p["coder"], "coder", loc, "fixed, huffman or rans"));
    } catch (const Error& e) {
      throw Error(where(loc, p["coder"]) + ": step 'encode': " + e.what());
    }
  }
  d += std::string(",coder=") + coding::symbol_coder_name(o.coder);
  if (p && p["cluster"]) o.cluster = get<bool>(p["cluster"], "cluster", loc, "true or false");
  if (p && p["keep_zero"]) o.keep_zero = get<bool>(p["keep_zero"], "keep_zero", loc, "true or false");
  if (p && p["min_elements"]) {
    o.min_elements = get<int64_t>(p["min_elements"], "min_elements", loc, "an integer");
    if (o.min_elements < 1) throw Error(where(loc, p["min_elements"]) + ": step 'encode': 'min_elements' must be >= 1");
  }
  if (!o.cluster) d += ",cluster=false";
  if (!o.keep_zero) d += ",keep_zero=false";
  d += ",min_elements=" + std::to_string(o.min_elements) + ")";
  return std::make_unique<EncodeStep>(std::move(o), d);
}

}  // namespace

void register_encode_step(StepRegistry& r) {
  r.add("encode", "weight clustering (codebook) and entropy-coded weights (Huffman / rANS), saved as .xnn", make_step);
}

}  // namespace xnn::encode
