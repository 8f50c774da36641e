// apps/contig/reads.hpp — reading sequencing reads for shoal-contig: FASTA or FASTQ, plain or gzip, several files,
// each rank its share.
//
// Formats (the first non-empty line decides, per file): FASTA (`>name`, then sequence lines, joined) or FASTQ in
// four-line records (`@name`, bases, `+[name]`, qualities of the same length). gzip files are recognised by their
// magic bytes, not their names. Bases are upper-cased; anything but A C G T (N, IUPAC codes, `-`, `.`, `*`) splits a
// read into fragments, and only fragments of at least k bases are kept, so no k-mer spans a non-ACGT base. CRLF line
// ends are accepted. A malformed file throws reads_error naming the file, the line and what was expected.
//
// Shares: gzip streams cannot be entered in the middle, so gzip file number j (counting gzip files only, in the order
// given) is read whole by rank j mod p. The bytes of the plain files, laid end to end, are cut into p equal ranges;
// a rank reads from the first record start at or after the beginning of its range to the first one at or after its
// end. A record start is a `>` line in FASTA; in FASTQ an `@` line two lines before a `+` line (a quality line may
// begin with `@`, but then the line two further on is bases, never `+`).
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fragments.hpp"

namespace contig {

/// A malformed or unreadable reads file.
struct reads_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace detail {

/// Sequential bytes of a file, plain (seekable) or gzip (from the start only), with the offset of what comes next.
class byte_source {
 public:
  explicit byte_source(const std::string& path) : path_(path) {
    file_ = std::fopen(path.c_str(), "rb");
    if (!file_) throw reads_error(path + ": cannot open for reading");
    unsigned char magic[2] = {0, 0};
    gzip_ = std::fread(magic, 1, 2, file_) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (gzip_) {
      std::fclose(file_);
      file_ = nullptr;
      gz_ = gzopen(path.c_str(), "rb");
      if (!gz_) throw reads_error(path + ": cannot open for reading (gzip)");
      gzbuffer(gz_, 1 << 18);
    } else {
      std::fseek(file_, 0, SEEK_SET);
    }
  }
  ~byte_source() {
    if (file_) std::fclose(file_);
    if (gz_) gzclose(gz_);
  }
  byte_source(const byte_source&) = delete;
  byte_source& operator=(const byte_source&) = delete;

  bool gzip() const { return gzip_; }

  /// Plain files only: the next read starts at `offset`.
  void seek(std::uint64_t offset) {
    if (fseeko(file_, static_cast<off_t>(offset), SEEK_SET) != 0) throw reads_error(path_ + ": cannot seek");
  }

  /// Up to n bytes; 0 at the end.
  std::size_t read(char* out, std::size_t n) {
    if (!gzip_) return std::fread(out, 1, n, file_);
    const int got = gzread(gz_, out, static_cast<unsigned>(n));
    int code = Z_OK;
    const char* why = gzerror(gz_, &code);
    if (got < 0 || (code != Z_OK && code != Z_STREAM_END)) {
      // A stream cut short ends the data with Z_BUF_ERROR ("unexpected end of file"), not with an error return.
      throw reads_error(path_ + (code == Z_BUF_ERROR ? ": truncated gzip data (" : ": corrupt gzip data (") + why +
                        "); expected a complete gzip stream");
    }
    return static_cast<std::size_t>(got);
  }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  gzFile gz_ = nullptr;
  bool gzip_ = false;
};

/// Lines of a byte_source, each with the offset of its first byte (in the uncompressed stream).
class line_reader {
 public:
  line_reader(byte_source& src, std::uint64_t offset) : src_(src), offset_(offset) {
    if (offset > 0) src_.seek(offset);
  }

  /// The next line without its end (\n or \r\n); false at the end of the file.
  bool next(std::string& line, std::uint64_t& line_offset) {
    line.clear();
    line_offset = offset_;
    bool any = false;
    for (;;) {
      if (pos_ == len_) {
        len_ = src_.read(buf_.data(), buf_.size());
        pos_ = 0;
        if (len_ == 0) break;
      }
      any = true;
      const char* start = buf_.data() + pos_;
      const auto* nl = static_cast<const char*>(std::memchr(start, '\n', len_ - pos_));
      const std::size_t take = nl ? static_cast<std::size_t>(nl - start) : len_ - pos_;
      line.append(start, take);
      pos_ += take;
      offset_ += take;
      if (nl) {
        ++pos_;
        ++offset_;
        break;
      }
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return any;
  }

 private:
  byte_source& src_;
  std::uint64_t offset_;
  std::vector<char> buf_ = std::vector<char>(1 << 20);
  std::size_t pos_ = 0, len_ = 0;
};

/// 1-based number of the line that starts at `offset` (error path only: reads the file again).
inline std::uint64_t line_number_at(const std::string& path, std::uint64_t offset) {
  byte_source src(path);
  line_reader lines(src, 0);
  std::string line;
  std::uint64_t at = 0, number = 0;
  while (lines.next(line, at) && at < offset) ++number;
  return number + 1;
}

enum class format { fasta, fastq };

inline std::string shown(std::string_view line) {
  return "'" + std::string(line.substr(0, 60)) + (line.size() > 60 ? "...'" : "'");
}

/// Reads the records from the first that starts at or after `begin` to the first that starts at or after `end`
/// (UINT64_MAX: to the end of the file) into `out`.
class record_parser {
 public:
  record_parser(std::string path, std::size_t k, read_fragments& out) : path_(std::move(path)), k_(k), out_(out) {}

  void parse(std::uint64_t begin, std::uint64_t end) {
    byte_source src(path_);
    const format f = detect(src);
    if (begin > 0 && src.gzip()) throw reads_error(path_ + ": a gzip file cannot be entered in the middle");
    // Both neighbours compute the same record start for a boundary, so every record is read by exactly one rank,
    // and a malformed one between a boundary and the next record start is still read (and reported).
    const std::uint64_t start = begin == 0 ? 0 : record_start(f, begin);
    const std::uint64_t stop = end == UINT64_MAX ? UINT64_MAX : record_start(f, end);
    if (start >= stop) return;
    byte_source body(path_);
    line_reader lines(body, start);
    if (f == format::fasta) parse_fasta(lines, stop);
    else parse_fastq(lines, stop);
  }

 private:
  [[noreturn]] void fail(std::uint64_t offset, const std::string& expected, std::string_view found) const {
    throw reads_error(path_ + ": line " + std::to_string(line_number_at(path_, offset)) + ": expected " + expected +
                      ", found " + (found.empty() ? std::string("an empty line") : shown(found)));
  }

  format detect(byte_source& src) const {
    line_reader lines(src, 0);
    std::string line;
    std::uint64_t at = 0;
    while (lines.next(line, at)) {
      if (line.empty()) continue;
      if (line[0] == '>') return format::fasta;
      if (line[0] == '@') return format::fastq;
      fail(at, "a FASTA header ('>') or a FASTQ header ('@') as the first line", line);
    }
    throw reads_error(path_ + ": empty file (expected FASTA or FASTQ reads)");
  }

  // The offset of the first record that starts at or after `begin` (plain files), UINT64_MAX if none.
  std::uint64_t record_start(format f, std::uint64_t begin) const {
    byte_source src(path_);
    line_reader lines(src, begin - 1);  // a line starts at `begin` iff byte begin-1 ends one
    std::string line;
    std::uint64_t at = 0;
    if (!lines.next(line, at)) return UINT64_MAX;  // the rest of the line that holds byte begin-1
    std::vector<std::pair<std::string, std::uint64_t>> window;
    while (lines.next(line, at)) {
      if (f == format::fasta) {
        if (!line.empty() && line[0] == '>') return at;
        continue;
      }
      window.emplace_back(line, at);
      if (window.size() == 3) {
        if (!window[0].first.empty() && window[0].first[0] == '@' && !window[2].first.empty() &&
            window[2].first[0] == '+') {
          return window[0].second;
        }
        window.erase(window.begin());
      }
    }
    return UINT64_MAX;
  }

  void parse_fasta(line_reader& lines, std::uint64_t end) {
    std::string line, seq;
    std::uint64_t at = 0;
    bool open = false;
    while (lines.next(line, at)) {
      if (!line.empty() && line[0] == '>') {
        if (open) add_read(seq);
        if (at >= end) return;
        seq.clear();
        open = true;
      } else if (line.empty()) {
        continue;
      } else if (!open) {
        fail(at, "a FASTA header line starting with '>'", line);
      } else {
        check_bases(line, at);
        seq += line;
      }
    }
    if (open) add_read(seq);
  }

  void parse_fastq(line_reader& lines, std::uint64_t end) {
    std::string header, seq, plus, qual;
    std::uint64_t at = 0, seq_at = 0, plus_at = 0, qual_at = 0;
    while (lines.next(header, at)) {
      if (header.empty()) continue;
      if (at >= end) return;
      if (header[0] != '@') fail(at, "a FASTQ header line starting with '@'", header);
      if (!lines.next(seq, seq_at)) fail(seq_at, "a line of bases after the FASTQ header", "");
      check_bases(seq, seq_at);
      if (!lines.next(plus, plus_at) || plus.empty() || plus[0] != '+') {
        fail(plus_at, "a '+' separator line (FASTQ records are four lines: @name, bases, +, qualities)", plus);
      }
      if (!lines.next(qual, qual_at) || qual.size() != seq.size()) {
        fail(qual_at, "a quality line of " + std::to_string(seq.size()) + " characters (as many as bases), got " +
                          std::to_string(qual.size()),
             qual);
      }
      add_read(seq);
    }
  }

  void check_bases(std::string_view line, std::uint64_t at) const {
    for (char c : line) {
      const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '-' || c == '.' || c == '*';
      if (!ok) fail(at, "a line of bases (letters; anything but ACGT splits the read)", line);
    }
  }

  // Splits a read at every non-ACGT base and keeps the fragments of at least k bases.
  void add_read(std::string_view seq) {
    ++out_.reads;
    out_.read_bases += seq.size();
    std::size_t run = 0;
    auto close_run = [&] {
      if (run >= k_) out_.ends.push_back(out_.bases.size());
      else out_.bases.resize(out_.bases.size() - run);
      run = 0;
    };
    for (char c : seq) {
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
      if (c == 'A' || c == 'C' || c == 'G' || c == 'T') {
        out_.bases.push_back(c);
        ++run;
      } else {
        close_run();
      }
    }
    close_run();
  }

  std::string path_;
  std::size_t k_;
  read_fragments& out_;
};

inline std::uint64_t file_size(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw reads_error(path + ": cannot open for reading");
  fseeko(f, 0, SEEK_END);
  const auto size = static_cast<std::uint64_t>(ftello(f));
  std::fclose(f);
  return size;
}

inline bool is_gzip(const std::string& path) { return byte_source(path).gzip(); }

}  // namespace detail

/// This rank's share of the reads of `paths` (see the header comment), as ACGT fragments of at least k bases.
inline read_fragments read_share(const std::vector<std::string>& paths, std::size_t k, int rank, int ranks) {
  read_fragments out;
  const auto p = static_cast<std::uint64_t>(ranks), r = static_cast<std::uint64_t>(rank);
  std::vector<std::uint64_t> plain_sizes(paths.size(), 0);
  std::uint64_t plain_total = 0, gzip_index = 0;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (detail::is_gzip(paths[i])) {
      if (gzip_index++ % p == r) detail::record_parser(paths[i], k, out).parse(0, UINT64_MAX);
    } else {
      plain_sizes[i] = detail::file_size(paths[i]);
      // An empty file is refused as the parser refuses an empty gzip stream (every rank sees the size).
      if (plain_sizes[i] == 0) detail::record_parser(paths[i], k, out).parse(0, UINT64_MAX);
      plain_total += plain_sizes[i];
    }
  }
  // This rank's range of the plain bytes laid end to end, cut into per-file ranges.
  const std::uint64_t begin = plain_total * r / p, end = plain_total * (r + 1) / p;
  std::uint64_t file_start = 0;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (plain_sizes[i] == 0) continue;
    const std::uint64_t file_end = file_start + plain_sizes[i];
    const std::uint64_t from = std::max(begin, file_start), to = std::min(end, file_end);
    if (from < to) {
      detail::record_parser(paths[i], k, out).parse(from - file_start, to == file_end ? UINT64_MAX : to - file_start);
    }
    file_start = file_end;
  }
  return out;
}

}  // namespace contig
