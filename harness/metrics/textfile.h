// node_exporter's textfile collector: node_exporter reads DIR/*.prom on every scrape, so a file
// must never be seen half-written. WriteTextfile writes DIR/<name>.tmp.<pid> (not matched by
// *.prom), fsyncs it, renames it over DIR/<name> (atomic within a file system) and fsyncs DIR.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "harness/metrics/registry.h"

namespace xnn::metrics {

inline constexpr char kTextfileName[] = "xnn_lab.prom";

// Serializes `families` (text format 0.0.4) into DIR/name. DIR must exist. Throws xnn::Error
// naming the file and the reason; the temporary file is removed on failure.
void WriteTextfile(const std::string& dir, const std::vector<MetricFamily>& families,
                   const std::string& name = kTextfileName);
// Collects `collectables` and writes them.
void WriteTextfile(const std::string& dir, const std::vector<std::shared_ptr<Collectable>>& collectables,
                   const std::string& name = kTextfileName);

}  // namespace xnn::metrics
