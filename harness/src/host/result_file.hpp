// The --benchmark_out file. The host writes it itself rather than through Google Benchmark, which
// opens it only after every case is registered, writes it unchecked and leaves it cut off when
// the run ends early. Here the file is checked before any case runs, written and checked after
// every case (a run cut short keeps what it measured), and a JSON document is closed properly
// when the run is interrupted (SIGINT, SIGTERM, SIGHUP) or crashes, with a top-level
// "interrupted" key that says why and how far it got.
#pragma once

#include <cstddef>
#include <string>

namespace xfbench::host {

// Why `path` cannot be written ("the folder /x does not exist", "is a directory", "Permission
// denied"), or "". Tries a real open without truncating; a file it had to create is removed.
std::string output_problem(const std::string& path);

class ResultFile {
 public:
  // Creates or truncates `path`; throws InvalidArgument naming it and the reason. Installs the
  // signal handlers that close the document; only one ResultFile lives at a time.
  ResultFile(const std::string& path, bool json);
  ~ResultFile();  // closes a document still open as "ended early"
  ResultFile(const ResultFile&) = delete;
  ResultFile& operator=(const ResultFile&) = delete;

  // Appends `text` (the JSON reporter's output); the first failed write is remembered and said
  // once on stderr, and later text is dropped.
  void write(const std::string& text);
  // JSON only: what the reporter has written. `open` is true between the context's
  // `"benchmarks": [` and the final `]`; `done` of `total` cases goes into an early end's reason.
  void set_state(bool open, std::size_t done, std::size_t total);
  // Closes the file: "" or why the results are not (all) saved.
  std::string close();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::string error_;
};

}  // namespace xfbench::host
