// The GEMM searches' choices kept in a file (XFBENCH_GEMM_PLANS=path in the environment): a
// process that finds a product there runs the kernel an earlier process chose instead of searching
// again, and adds its own searches to the file. Near-ties between cuBLASLt's candidates go either
// way from one search to the next, so two runs (a suite and a case alone, two builds, two drivers
// on one GPU) measure the same kernels only when they share their choices.
//
// One search a line, tab-separated: GPU name, cuBLASLt version, the plan's key (its description and
// options), the product as a person reads it (GemmDesc::describe()), the chosen candidate's index,
// the number of candidates, the chosen kernel's label (`python3 -m reports plans` shows them).
// A record applies only where all of GPU, version, key, candidate count and that candidate's label
// agree, so a file from another GPU, library or heuristic list searches again.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace xfbench::kernels::detail {

struct SearchRecord {
  std::string gpu;
  long cublaslt = 0;
  std::string key;
  std::string product;  // GemmDesc::describe(): "bf16 NN m=8192 n=1024 k=4096 out=bf16"
  int index = 0;
  int candidates = 0;
  std::string kernel;  // GemmAlgoInfo::label() of the chosen candidate
};

// Throws InvalidArgument naming `path` and the line of the first malformed record. Lines starting
// with '#' and empty lines are skipped.
std::vector<SearchRecord> parse_search_records(std::istream& in, const std::string& path);
void write_search_records(std::ostream& out, const std::vector<SearchRecord>& records);

// Replaces the record of the same GPU, version and key, or appends it.
void upsert_search_record(std::vector<SearchRecord>& records, const SearchRecord& r);
// The record of this GPU, version and key, or null.
const SearchRecord* find_search_record(const std::vector<SearchRecord>& records,
                                       const std::string& gpu, long cublaslt,
                                       const std::string& key);

// The file's records; none when it does not exist. Throws InvalidArgument when it cannot be read
// or is malformed.
std::vector<SearchRecord> read_search_file(const std::string& path);
// Writes all records through a temporary file renamed over `path` (a reader never sees half a
// file). Throws InvalidArgument naming the path and the system's reason.
void write_search_file(const std::string& path, const std::vector<SearchRecord>& records);

}  // namespace xfbench::kernels::detail
