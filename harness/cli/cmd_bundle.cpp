// xnn-lab bundle create MANIFEST.yaml -o app.xnnb
// xnn-lab bundle inspect app.xnnb [--json] [--key-file KEY] [--device-class NAME]
// xnn-lab bundle run app.xnnb --input NAME=FILE.npy --output-dir DIR [--key-file KEY] [--device-class NAME]
//
// Model bundles (engine/bundle/): models plus a runtime policy in one versioned file; the
// manifest YAML is documented in configs/bundles/README.md.
#include <cstdio>
#include <filesystem>
#include <map>

#include "engine/bundle/bundle_file.h"
#include "engine/bundle/bundle_runtime.h"
#include "engine/bundle/bundle_variant.h"
#include "engine/runtime/npy.h"
#include "harness/cli/bundle_manifest_yaml.h"
#include "harness/cli/commands.h"
#include "harness/cli/key_option.h"
#include "harness/util/json.h"

namespace xnn::cli {
namespace {

DeviceInfo this_device(const std::string& device_class) {
  DeviceInfo d = detect_device();
  d.device_class = device_class;
  return d;
}

// Output names may contain characters that are not safe in file names ('/', ':').
std::string file_name_for(const std::string& name) {
  std::string s = name.empty() ? "output" : name;
  for (char& c : s) {
    if (c == '/' || c == '\\' || c == ':' || c == '\0') c = '_';
  }
  if (s == "." || s == "..") s = "_" + s;
  return s;
}

std::string short_hash(const std::string& sha) { return sha.substr(0, 12); }

void add_device_class_option(CLI::App* cmd, std::string& device_class) {
  cmd->add_option("--device-class", device_class,
                  "Device class name the host app would give (matches rules with when.device_class)");
}

// --- create -----------------------------------------------------------------------------------------

void add_create(CLI::App* bundle, int& exit_code) {
  auto* cmd = bundle->add_subcommand("create", "Build a bundle (.xnnb) from a manifest YAML (configs/bundles/README.md)");
  static std::string yaml_path, out_path;
  cmd->add_option("manifest", yaml_path, "Manifest YAML: name, version, models by path, policy rules")->required();
  cmd->add_option("-o,--output", out_path, "Bundle file to write (.xnnb)")->required();
  cmd->callback([&exit_code] {
    BundleSource src = read_bundle_yaml(yaml_path, utc_timestamp_now());
    write_bundle(out_path, src.manifest, src.models);
    // Read back what was written: the same checks a device will make.
    const BundleFile f = BundleFile::open(out_path);
    const BundleManifest& m = f.manifest();
    std::printf("wrote %s: bundle '%s' version %lld%s, %zu model(s), %zu rule(s), %llu bytes\n", out_path.c_str(),
                m.name.c_str(), static_cast<long long>(m.version), m.label.empty() ? "" : (" (" + m.label + ")").c_str(),
                m.models.size(), m.policy.size(), static_cast<unsigned long long>(f.file_size()));
    for (const BundleModel& model : m.models) {
      std::printf("  model %-16s %-24s %s%s %10llu bytes  sha256 %s\n", model.id.c_str(), model.file_name.c_str(),
                  model.format.c_str(), model.is_protected ? " (protected)" : "",
                  static_cast<unsigned long long>(model.size), short_hash(model.sha256).c_str());
    }
    exit_code = 0;
  });
}

// --- inspect ------------------------------------------------------------------------------------------

void write_inspect_json(const BundleFile& f, const DeviceInfo& device, const VariantSelection& sel) {
  const BundleManifest& m = f.manifest();
  json::Writer w;
  w.begin_object();
  w.field("path", f.path()).field("file_size", static_cast<int64_t>(f.file_size()));
  w.field("format_version", m.format_version).field("name", m.name).field("version", m.version);
  w.field("label", m.label).field("created_at", m.created_at).field("manifest_sha256", f.manifest_sha256());
  w.key("models").begin_array();
  for (size_t i = 0; i < m.models.size(); ++i) {
    const BundleModel& model = m.models[i];
    w.begin_object().field("id", model.id).field("file", model.file_name).field("format", model.format);
    w.field("protected", model.is_protected).field("offset", static_cast<int64_t>(model.offset));
    w.field("size", static_cast<int64_t>(model.size)).field("sha256", model.sha256);
    w.field("hash_verified", f.blob_problem(i).empty());
    if (!f.blob_problem(i).empty()) w.field("problem", f.blob_problem(i));
    w.end_object();
  }
  w.end_array();
  w.key("policy").begin_array();
  for (const PolicyRule& rule : m.policy) {
    w.begin_object().field("name", rule.name);
    w.key("when").begin_object();
    if (rule.when.isa) w.field("isa", std::string(bundle_isa_name(*rule.when.isa)));
    if (rule.when.min_cores > 0) w.field("min_cores", rule.when.min_cores);
    if (rule.when.min_memory_mib > 0) w.field("min_memory_mib", rule.when.min_memory_mib);
    if (!rule.when.device_class.empty()) w.field("device_class", rule.when.device_class);
    w.end_object();
    w.field("model", rule.model).key("threads");
    if (rule.threads.kind == ThreadsSpec::Kind::kCount) {
      w.value(rule.threads.count);
    } else {
      w.value(rule.threads.str());  // "all" / "half"
    }
    w.field("target", rule.target);
    w.end_object();
  }
  w.end_array();
  w.key("device").begin_object();
  w.field("avx2", device.avx2).field("avx512", device.avx512).field("neon", device.neon);
  w.field("logical_cores", device.logical_cores).field("memory_mib", device.memory_mib);
  w.field("device_class", device.device_class).end_object();
  w.key("selection").begin_object();
  w.field("chosen", sel.chosen.has_value());
  if (sel.chosen) {
    const PolicyRule& rule = m.policy[sel.chosen->rule_index];
    w.field("rule_index", sel.chosen->rule_index).field("rule_name", rule.name);
    w.field("model", sel.chosen->model_id).field("threads", sel.chosen->threads).field("target", sel.chosen->target);
  }
  w.key("rules").begin_array();
  for (const RuleOutcome& o : sel.outcomes) {
    w.begin_object().field("index", o.index).field("name", o.name);
    w.field("status", std::string(rule_status_name(o.status))).field("reason", o.reason).end_object();
  }
  w.end_array().end_object();
  w.end_object();
  std::printf("%s\n", w.str().c_str());
}

void print_inspect_text(const BundleFile& f, const DeviceInfo& device, const VariantSelection& sel) {
  const BundleManifest& m = f.manifest();
  std::printf("bundle   %s\n", f.path().c_str());
  std::printf("name     %s\nversion  %lld%s\ncreated  %s\n", m.name.c_str(), static_cast<long long>(m.version),
              m.label.empty() ? "" : ("  (" + m.label + ")").c_str(), m.created_at.c_str());
  std::printf("format   %lld, %llu bytes, manifest sha256 %s\n", static_cast<long long>(m.format_version),
              static_cast<unsigned long long>(f.file_size()), f.manifest_sha256().c_str());
  std::printf("\nmodels\n");
  for (size_t i = 0; i < m.models.size(); ++i) {
    const BundleModel& model = m.models[i];
    std::printf("  %-16s %-24s %s%s %10llu bytes  sha256 %s  %s\n", model.id.c_str(), model.file_name.c_str(),
                model.format.c_str(), model.is_protected ? " (protected)" : "", static_cast<unsigned long long>(model.size),
                short_hash(model.sha256).c_str(),
                f.blob_problem(i).empty() ? "hash verified" : ("HASH MISMATCH: " + f.blob_problem(i)).c_str());
  }
  std::printf("\npolicy (first usable rule wins)\n");
  for (size_t i = 0; i < m.policy.size(); ++i) {
    const PolicyRule& rule = m.policy[i];
    std::printf("  %zu. %-20s when %-40s model %-12s threads %-5s target %s\n", i + 1, rule.name.c_str(),
                rule.when.describe().c_str(), rule.model.c_str(), rule.threads.str().c_str(), rule.target.c_str());
  }
  std::printf("\nthis device: %s\n", device.describe().c_str());
  for (const RuleOutcome& o : sel.outcomes) {
    std::printf("  %zu. %-20s %-9s %s\n", o.index + 1, o.name.c_str(), std::string(rule_status_name(o.status)).c_str(),
                o.reason.c_str());
  }
  if (sel.chosen) {
    std::printf("picks rule %zu '%s': model %s, %d thread(s), target %s\n", sel.chosen->rule_index + 1,
                m.policy[sel.chosen->rule_index].name.c_str(), sel.chosen->model_id.c_str(), sel.chosen->threads,
                sel.chosen->target.c_str());
  } else {
    std::printf("picks nothing: no rule can run on this device\n");
  }
}

void add_inspect(CLI::App* bundle, int& exit_code) {
  auto* cmd = bundle->add_subcommand(
      "inspect", "Show a bundle's manifest, verify its hashes, and say which rule this device would pick and why");
  static std::string path, key_file, device_class;
  static bool as_json = false;
  cmd->add_option("bundle", path, "Bundle (.xnnb)")->required()->check(CLI::ExistingFile);
  cmd->add_flag("--json", as_json, "Print one JSON object");
  add_key_file_option(cmd, key_file);
  add_device_class_option(cmd, device_class);
  cmd->callback([&exit_code] {
    const BundleFile f = BundleFile::open(path);
    const DeviceInfo device = this_device(device_class);
    VariantOptions vo;
    vo.key = load_options_for(key_file).key;
    vo.sessions = 1;
    const VariantSelection sel = select_variant(f, device, vo);
    if (as_json) {
      write_inspect_json(f, device, sel);
    } else {
      print_inspect_text(f, device, sel);
    }
    exit_code = 0;
  });
}

// --- run ------------------------------------------------------------------------------------------------

void add_run(CLI::App* bundle, int& exit_code) {
  auto* cmd = bundle->add_subcommand(
      "run", "Run the model this device's policy picks on .npy inputs and write every output as .npy");
  static std::string path, out_dir, key_file, device_class;
  static std::vector<std::string> input_args;
  cmd->add_option("bundle", path, "Bundle (.xnnb)")->required()->check(CLI::ExistingFile);
  cmd->add_option("-i,--input", input_args,
                  "Input as [NAME=]FILE.npy; without NAME, inputs are taken in the model's input order")
      ->required();
  cmd->add_option("-d,--output-dir", out_dir, "Folder for <output name>.npy files")->required();
  add_key_file_option(cmd, key_file);
  add_device_class_option(cmd, device_class);
  cmd->callback([&exit_code] {
    BundleOptions options;
    options.key = load_options_for(key_file).key;
    options.device = this_device(device_class);
    options.sessions = 1;  // one request
    const auto rt = BundleRuntime::open(path, options);
    const std::vector<IoInfo> declared = rt->inputs();
    std::map<std::string, Tensor> inputs;
    size_t positional = 0;
    for (const std::string& arg : input_args) {
      const size_t eq = arg.find('=');
      std::string name, file;
      if (eq == std::string::npos) {
        if (positional >= declared.size()) {
          throw Error("too many --input values: the model has " + std::to_string(declared.size()) + " input(s)");
        }
        name = declared[positional++].name;
        file = arg;
      } else {
        name = arg.substr(0, eq);
        file = arg.substr(eq + 1);
      }
      if (inputs.count(name)) throw Error("input '" + name + "' given twice");
      inputs[name] = read_npy(file);
    }
    const BundleRunResult result = rt->run(inputs);
    const BundleStatus& s = *result.produced_by;
    std::printf("bundle '%s' version %lld%s: rule %zu '%s', model %s, %d thread(s), target %s\n", s.name.c_str(),
                static_cast<long long>(s.version), s.label.empty() ? "" : (" (" + s.label + ")").c_str(),
                s.rule_index + 1, s.rule_name.c_str(), s.model_id.c_str(), s.threads, s.target.c_str());
    for (const RuleOutcome& o : s.rules) {
      if (o.status == RuleOutcome::Status::kSkipped) {
        std::printf("  skipped rule %zu '%s': %s\n", o.index + 1, o.name.c_str(), o.reason.c_str());
      }
    }
    std::filesystem::create_directories(out_dir);
    for (size_t i = 0; i < result.outputs.size(); ++i) {
      const std::string out =
          (std::filesystem::path(out_dir) / (file_name_for(result.output_names[i]) + ".npy")).string();
      write_npy(out, result.outputs[i]);
      std::printf("%s: %s %s -> %s\n", result.output_names[i].c_str(),
                  std::string(dtype_name(result.outputs[i].dtype())).c_str(),
                  shape_str(result.outputs[i].shape()).c_str(), out.c_str());
    }
    exit_code = 0;
  });
}

}  // namespace

void add_bundle_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "bundle",
      "Model bundles: several model variants plus a runtime policy (which variant, threads and target per\n"
      "device class, with fallbacks) in one versioned file with content hashes. Apps update bundles without\n"
      "a release; protected models inside need --key-file, which is never stored in the bundle.");
  cmd->require_subcommand(1);
  add_create(cmd, exit_code);
  add_inspect(cmd, exit_code);
  add_run(cmd, exit_code);
}

}  // namespace xnn::cli
