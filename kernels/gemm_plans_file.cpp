// The GEMM searches' file (gemm_plans_file.hpp): parsing, writing, and its records' lookup.
#include "kernels/gemm_plans_file.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "xfbench/error.hpp"

namespace xfbench::kernels::detail {
namespace {

constexpr int kFields = 7;

// A whole decimal number in [lo, hi], or false.
bool parse_number(const std::string& s, long lo, long hi, long& out) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  out = std::stol(s);
  return out >= lo && out <= hi;
}

}  // namespace

std::vector<SearchRecord> parse_search_records(std::istream& in, const std::string& path) {
  std::vector<SearchRecord> records;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    auto bad = [&](const std::string& why) {
      XF_THROW(InvalidArgument, "XFBENCH_GEMM_PLANS file " + path + ", line " +
                                    std::to_string(number) + ": " + why +
                                    " (remove the line or the file: its products are searched "
                                    "again)");
    };
    std::vector<std::string> f;
    std::size_t start = 0;
    for (std::size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1)
      f.push_back(line.substr(start, tab - start));
    f.push_back(line.substr(start));
    if (f.size() != kFields)
      bad("expected " + std::to_string(kFields) +
          " tab-separated fields (GPU, cuBLASLt version, key, product, index, candidates, "
          "kernel), found " +
          std::to_string(f.size()));
    SearchRecord r;
    long version = 0, index = 0, candidates = 0;
    if (f[0].empty() || f[2].empty() || f[3].empty() || f[6].empty())
      bad("an empty GPU, key, product or kernel");
    if (!parse_number(f[1], 1, 1L << 40, version)) bad("cuBLASLt version '" + f[1] + "'");
    if (!parse_number(f[5], 1, 1 << 20, candidates)) bad("candidate count '" + f[5] + "'");
    if (!parse_number(f[4], 0, candidates - 1, index))
      bad("index '" + f[4] + "' is not one of " + std::to_string(candidates) + " candidates");
    r.gpu = f[0];
    r.cublaslt = version;
    r.key = f[2];
    r.product = f[3];
    r.index = int(index);
    r.candidates = int(candidates);
    r.kernel = f[6];
    upsert_search_record(records, r);
  }
  return records;
}

void write_search_records(std::ostream& out, const std::vector<SearchRecord>& records) {
  out << "# xfbench GEMM searches (XFBENCH_GEMM_PLANS): GPU, cuBLASLt version, plan key, product, "
         "chosen candidate, candidates, kernel\n";
  for (const SearchRecord& r : records)
    out << r.gpu << '\t' << r.cublaslt << '\t' << r.key << '\t' << r.product << '\t' << r.index
        << '\t' << r.candidates << '\t' << r.kernel << '\n';
}

void upsert_search_record(std::vector<SearchRecord>& records, const SearchRecord& r) {
  for (SearchRecord& old : records)
    if (old.gpu == r.gpu && old.cublaslt == r.cublaslt && old.key == r.key) {
      old = r;
      return;
    }
  records.push_back(r);
}

const SearchRecord* find_search_record(const std::vector<SearchRecord>& records,
                                       const std::string& gpu, long cublaslt,
                                       const std::string& key) {
  for (const SearchRecord& r : records)
    if (r.gpu == gpu && r.cublaslt == cublaslt && r.key == key) return &r;
  return nullptr;
}

std::vector<SearchRecord> read_search_file(const std::string& path) {
  auto cannot = [&](const std::string& why) {
    XF_THROW(InvalidArgument, "XFBENCH_GEMM_PLANS file " + path + " cannot be read: " + why);
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};  // the first run writes it
    cannot(std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) cannot("it is a directory");
  std::ifstream in(path);
  if (!in) cannot(std::strerror(errno));
  return parse_search_records(in, path);
}

void write_search_file(const std::string& path, const std::vector<SearchRecord>& records) {
  std::ostringstream text;
  write_search_records(text, records);
  const std::string body = text.str();
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  auto fail = [&](int err) {
    std::remove(tmp.c_str());
    XF_THROW(InvalidArgument,
             "XFBENCH_GEMM_PLANS file " + path + " cannot be written: " + std::strerror(err));
  };
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) fail(errno);
  const bool written = std::fwrite(body.data(), 1, body.size(), f) == body.size();
  const int write_err = errno;
  if (std::fclose(f) != 0 || !written) fail(written ? errno : write_err);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail(errno);
}

}  // namespace xfbench::kernels::detail
