#include "result_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "xfbench/error.hpp"

namespace fs = std::filesystem;

namespace xfbench::host {
namespace {

// What a signal handler needs, in plain storage: it may only call write(), signal() and raise().
struct Active {
  int fd = -1;
  bool json = false;
  std::atomic<bool> open{false};
  std::atomic<bool> writing{false};
  std::atomic<int> pending{0};
  std::atomic<std::size_t> done{0}, total{0};
  char path[512] = {};
};
Active g_active;

const int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGABRT:
      return "SIGABRT";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    default:
      return "a signal";
  }
}

// Async-signal-safe text building into a fixed buffer.
struct Line {
  char buf[1024];
  std::size_t n = 0;
  Line& operator<<(const char* s) {
    while (*s && n < sizeof buf) buf[n++] = *s++;
    return *this;
  }
  Line& operator<<(std::size_t v) {
    char digits[24];
    int k = 0;
    do digits[k++] = char('0' + v % 10), v /= 10;
    while (v && k < 24);
    while (k && n < sizeof buf) buf[n++] = digits[--k];
    return *this;
  }
};

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w, n -= std::size_t(w);
  }
}

// Closes the open JSON document with "interrupted": "<why> after N of M cases".
void close_document(const char* why) {
  if (g_active.fd < 0 || !g_active.json || !g_active.open.exchange(false)) return;
  Line l;
  l << "\n  ],\n  \"interrupted\": \"" << why << " after " << g_active.done.load() << " of "
    << g_active.total.load() << " cases\"\n}\n";
  write_all(g_active.fd, l.buf, l.n);
}

void die(int sig) {
  const bool crash = sig != SIGINT && sig != SIGTERM && sig != SIGHUP;
  Line why;
  why << (crash ? "crashed by " : "interrupted by ") << signal_name(sig);
  why.buf[why.n] = '\0';
  const bool had_document = g_active.fd >= 0 && g_active.json && g_active.open;
  close_document(why.buf);
  Line l;
  l << "\nxfbench: " << why.buf << " after " << g_active.done.load() << " of "
    << g_active.total.load() << " cases";
  if (had_document) l << "; " << g_active.path << " holds them";
  l << "\n";
  write_all(STDERR_FILENO, l.buf, l.n);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void on_signal(int sig) {
  if (g_active.writing) {  // the main thread is mid-write: it finishes the chunk, then dies
    g_active.pending = sig;
    return;
  }
  die(sig);
}

}  // namespace

std::string output_problem(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return "is a directory";
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::exists(parent, ec)) {
    return "the folder " + parent.string() + " does not exist";
  }
  if (!parent.empty() && !fs::is_directory(parent, ec)) return parent.string() + " is not a folder";
  const bool existed = fs::exists(path, ec);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return std::string(existed ? "cannot write it: " : "cannot create it: ") + std::strerror(errno);
  ::close(fd);
  if (!existed) ::unlink(path.c_str());
  return "";
}

ResultFile::ResultFile(const std::string& path, bool json) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    XF_THROW(InvalidArgument, "--benchmark_out=" + path + ": " + std::strerror(errno));
  }
  g_active.fd = fd_;
  g_active.json = json;
  std::strncpy(g_active.path, path.c_str(), sizeof g_active.path - 1);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : kSignals) sigaction(sig, &sa, nullptr);
}

ResultFile::~ResultFile() { close(); }

void ResultFile::write(const std::string& text) {
  if (fd_ < 0 || !error_.empty() || text.empty()) return;
  g_active.writing = true;
  const char* p = text.data();
  std::size_t n = text.size();
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      error_ = std::strerror(w < 0 ? errno : EIO);
      break;
    }
    p += w, n -= std::size_t(w);
  }
  g_active.writing = false;
  if (!error_.empty()) {
    g_active.open = false;  // a cut-off document cannot be closed sensibly
    std::fprintf(stderr, "xfbench: cannot write %s: %s; the results of this run are not saved\n",
                 path_.c_str(), error_.c_str());
  }
  if (int sig = g_active.pending.exchange(0)) die(sig);
}

void ResultFile::set_state(bool open, std::size_t done, std::size_t total) {
  g_active.done = done;
  g_active.total = total;
  g_active.open = open && error_.empty();
}

std::string ResultFile::close() {
  if (fd_ < 0) return error_;
  if (error_.empty() && g_active.open) {  // the run ended without the reporter's final "]"
    g_active.writing = true;
    close_document("ended early");
    g_active.writing = false;
  }
  for (int sig : kSignals) std::signal(sig, SIG_DFL);
  g_active.fd = -1;
  if (::close(fd_) != 0 && error_.empty()) error_ = std::strerror(errno);
  fd_ = -1;
  return error_;
}

}  // namespace xfbench::host
