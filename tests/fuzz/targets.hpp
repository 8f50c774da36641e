// tests/fuzz/targets.hpp — the fuzz targets: each feeds one input to one parser and checks that it either returns
// a well-formed result or throws the exception type the parser documents; anything else (another exception, a
// result that breaks the target's property, a crash, a hang) is a finding. Used by the seeded driver in CTest
// (tests/fuzz_test.cpp) and by the libFuzzer binaries (tests/fuzz/libfuzzer.cpp). No MPI calls.
//
//   target           parser                                         documented error    property checked on success
//   key_box          shoal::key_box::parse (ordered_map range text) shoal::usage_error  lo <= hi; printing and parsing
//                                                                                       again gives the same box;
//                                                                                       volume() exact or saturated
//   settings         parse_size, parse_flag, env_size / env_flag,   shoal::usage_error  the exact value (size: no
//                    parse_faults (environment settings)                                wrap-around), exact spellings
//   kv_trace         kv_trace::read_trace                           shoal::error        every line is PUT k v / GET k
//                                                                                       (decimal); write + read again
//                                                                                       is the same trace
//   ufx              contig::read_ufx_share (contig k-mer files)    std::runtime_error  ACGT canonical k-mers; shares
//                                                                                       of 2 and 3 ranks = whole file
//   reads            contig::read_share (FASTA/FASTQ, plain and     contig::reads_error fragments of >= k ACGT bases;
//                    gzip of the same bytes)                                            shares of 2, 3 ranks = whole;
//                                                                                       gzip = plain
//   reads_gzip       contig::read_share on (mutated) gzip bytes     contig::reads_error as reads
//   fasta            contig::read_fasta (--expected, --genome)      std::runtime_error  one sequence per '>' line
//   ordered_map_wire the ordered map's message codec (detail::      shoal::error        encoding the decoded message
//                    ordered_map::codec<int64, string>::decode)                         and decoding it again gives
//                                                                                       the same bytes
//   serialized_values shoal::byte_reader on a tuple (map, vector of  shoal::error        writing the value read and
//                    strings, variant, a user type with an optional,                    reading it again writes the
//                    bool): cereal types, the checked archive                           same bytes
//   flights_message  flights::parse_client_message (WebSocket)      none: an error      boxes in range, west <= east,
//                                                                   message, and its    south <= north; the error
//                                                                   JSON reply          reply is valid JSON
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "contig/fasta.hpp"
#include "contig/reads.hpp"
#include "contig/ufx.hpp"
#include "flights/protocol.hpp"
#include "kv_trace/trace.hpp"
#include "shoal/containers/detail/ordered_map/wire.hpp"
#include "shoal/containers/key_box.hpp"
#include "shoal/core/detail/faults.hpp"
#include "shoal/core/detail/size_parse.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/serialize.hpp"

namespace shoal::testing::fuzz {

/// A property of a target broke (not derived from std::runtime_error: no target's documented error catches it).
struct finding : std::logic_error {
  using std::logic_error::logic_error;
};

inline void expect(bool ok, const std::string& what) {
  if (!ok) throw finding(what);
}

struct target {
  const char* name;
  std::vector<std::string> tokens;  // pieces of the format for the mutator
  std::function<void(const std::string&)> run;
  std::size_t cost = 1;  // inputs through files: the driver runs 1/cost of its iterations
};

namespace detail {

/// A scratch file of this process (removed at exit), in memory (/dev/shm) where there is one.
class scratch {
 public:
  explicit scratch(const std::string& suffix) : path_((directory() / ("shoal-fuzz-" + std::to_string(::getpid()) + suffix)).string()) {}
  ~scratch() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  const std::string& write(const std::string& bytes) {
    std::ofstream(path_, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path_;
  }
  const std::string& write_gzip(const std::string& bytes) {
    gzFile f = gzopen(path_.c_str(), "wb");
    expect(f != nullptr, "cannot write the scratch gzip file");
    if (!bytes.empty()) gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
    return path_;
  }

 private:
  static std::filesystem::path directory() {
    std::error_code ec;
    return std::filesystem::is_directory("/dev/shm", ec) ? std::filesystem::path("/dev/shm")
                                                         : std::filesystem::temp_directory_path();
  }
  std::string path_;
};

inline std::string text_of(const shoal::key_box& box) {
  std::string s;
  for (const auto& d : box.ranges()) {
    if (!s.empty()) s += '.';
    s += d.lo == d.hi ? std::to_string(d.lo) : "[" + std::to_string(d.lo) + "," + std::to_string(d.hi) + "]";
  }
  return s;
}

inline void key_box(const std::string& in) {
  shoal::key_box box;
  try {
    box = shoal::key_box::parse(in);
  } catch (const shoal::usage_error&) {
    return;
  }
  expect(box.dimensions() >= 1, "a parsed box has no dimension");
  for (const auto& d : box.ranges()) expect(d.lo <= d.hi, "a parsed interval has hi < lo");
  expect(shoal::key_box::parse(text_of(box)) == box, "printing and parsing again gives another box");
  unsigned __int128 volume = 1;  // the exact number of keys, saturated at 2^64 - 1
  for (const auto& d : box.ranges()) {
    const auto w = static_cast<unsigned __int128>(static_cast<__int128>(d.hi) - static_cast<__int128>(d.lo) + 1);
    volume = volume > UINT64_MAX ? volume : volume * w;
  }
  expect(box.volume() == (volume > UINT64_MAX ? UINT64_MAX : static_cast<std::uint64_t>(volume)), "volume() is wrong");
  try {
    box.check_for<std::tuple<int, int, int>>();
    const auto lo = box.lowest<std::tuple<int, int, int>>(), hi = box.highest<std::tuple<int, int, int>>();
    expect(!(hi < lo), "highest key below lowest");
    expect(box.contains(lo) && box.contains(hi), "a box does not contain its corners");
  } catch (const shoal::usage_error&) {
  }
}

// The size the text means, by a second reading of the documented grammar; nullopt when it is malformed or too
// large (parse_size must then throw).
inline std::optional<std::size_t> expected_size(std::string_view t) {
  std::size_t i = 0;
  unsigned __int128 v = 0;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
    v = v * 10 + static_cast<unsigned>(t[i] - '0');
    if (v > std::numeric_limits<std::size_t>::max()) return std::nullopt;
    ++i;
  }
  if (i == 0) return std::nullopt;
  std::string_view rest = t.substr(i);
  unsigned __int128 mult = 1;
  if (!rest.empty()) {
    const std::string_view units = "BKMGT";
    const auto u = units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(rest[0]))));
    if (u == std::string_view::npos) return std::nullopt;
    mult = static_cast<unsigned __int128>(1) << (10 * (u == 0 ? 0 : u));
    rest.remove_prefix(1);
    if (!(rest.empty() || rest == "iB" || rest == "ib" || rest == "B" || rest == "b")) return std::nullopt;
  }
  if (v * mult > std::numeric_limits<std::size_t>::max()) return std::nullopt;
  return static_cast<std::size_t>(v * mult);
}

// SHOAL_FAULTS: "", "off", "delay:<seed>" or "delay:<seed>:<1..1000>" (unsigned decimals without sign).
inline void faults(const std::string& in) {
  auto digits = [](std::string_view s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
  };
  bool valid = in.empty() || in == "off";
  if (!valid && in.rfind("delay:", 0) == 0) {
    const std::string_view rest = std::string_view(in).substr(6);
    const auto colon = rest.find(':');
    const auto seed = rest.substr(0, colon);
    const auto steps = colon == std::string_view::npos ? std::string_view("8") : rest.substr(colon + 1);
    auto trim = [](std::string_view s) { return s.substr(std::min(s.find_first_not_of('0'), s.size())); };
    const auto seed_digits = trim(seed), step_digits = trim(steps);
    valid = digits(seed) && digits(steps) &&
            (seed_digits.size() < 20 || (seed_digits.size() == 20 && seed_digits <= "18446744073709551615")) &&
            !step_digits.empty() && step_digits.size() <= 4 && std::stoi(std::string(step_digits)) <= 1000;
  }
  try {
    const auto f = shoal::detail::parse_faults(in);
    expect(valid, "parse_faults accepted \"" + in + "\"");
    expect(f.has_value() == !(in.empty() || in == "off"), "parse_faults: on/off wrong for \"" + in + "\"");
    if (f) expect(f->max_steps >= 1 && f->max_steps <= 1000, "parse_faults: steps out of range");
  } catch (const shoal::usage_error& e) {
    expect(!valid, "parse_faults rejected \"" + in + "\": " + e.what());
  }
}

inline void settings(const std::string& in) {
  const auto want = expected_size(in);
  try {
    const auto got = shoal::detail::parse_size(in, "SHOAL_HEAP_SIZE");
    expect(want.has_value() && *want == got, "parse_size(\"" + in + "\") = " + std::to_string(got) + ", expected " +
                                                 (want ? std::to_string(*want) : std::string("an error")));
  } catch (const shoal::usage_error& e) {
    expect(!want.has_value(), "parse_size rejected a valid size: " + std::string(e.what()));
    expect(std::string(e.what()).find("SHOAL_HEAP_SIZE") != std::string::npos, "the error does not name the setting");
  }
  std::string lower;
  for (char c : in) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool yes = lower == "1" || lower == "on" || lower == "yes" || lower == "true";
  const bool no = lower == "0" || lower == "off" || lower == "no" || lower == "false";
  try {
    expect(shoal::detail::parse_flag(in, "SHOAL_VERBOSE") == yes && (yes || no), "parse_flag(\"" + in + "\") is wrong");
  } catch (const shoal::usage_error&) {
    expect(!yes && !no, "parse_flag rejected \"" + in + "\"");
  }
  // The same text through the environment (cut at its first NUL, as an environment variable would be).
  const std::string env = in.substr(0, in.find('\0'));
  ::setenv("SHOAL_FUZZ_SETTING", env.c_str(), 1);
  try {
    const auto got = shoal::detail::env_size("SHOAL_FUZZ_SETTING");
    expect(env.empty() ? !got : got == expected_size(env), "env_size disagrees with parse_size");
  } catch (const shoal::usage_error&) {
    expect(!env.empty() && !expected_size(env), "env_size rejected a valid size");
  }
  try {
    (void)shoal::detail::env_flag("SHOAL_FUZZ_SETTING");
  } catch (const shoal::usage_error&) {
  }
  faults(in);
}

// Digits only, and at most 2^64 - 1 (leading zeros allowed).
inline bool decimal(std::string_view s) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string_view::npos) return false;
  s.remove_prefix(std::min(s.find_first_not_of('0'), s.size()));
  return s.size() < 20 || (s.size() == 20 && s <= "18446744073709551615");
}

inline void kv_trace(const std::string& in) {
  std::vector<::kv_trace::request> trace;
  try {
    std::istringstream s(in);
    trace = ::kv_trace::read_trace(s, "fuzz");
  } catch (const shoal::error&) {
    return;
  }
  // Every line that was accepted is a comment, empty, or "PUT <decimal> <decimal>" / "GET <decimal>".
  std::istringstream lines(in);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    const bool put = f.size() == 3 && f[0] == "PUT" && decimal(f[1]) && decimal(f[2]);
    const bool get = f.size() == 2 && f[0] == "GET" && decimal(f[1]);
    expect(put || get, "read_trace accepted the line '" + line + "'");
  }
  std::ostringstream out;
  ::kv_trace::write_trace(out, trace, 0);
  std::istringstream again(out.str());
  const auto back = ::kv_trace::read_trace(again, "again");
  expect(back.size() == trace.size(), "write + read changed the number of requests");
  for (std::size_t i = 0; i < back.size(); ++i) {
    expect(back[i].kind == trace[i].kind && back[i].key == trace[i].key && back[i].value == trace[i].value &&
               back[i].expected == trace[i].expected,
           "write + read changed request " + std::to_string(i));
  }
}

inline void ufx(const std::string& in) {
  static scratch file(".ufx");
  const auto& path = file.write(in);
  std::vector<contig::ufx_record> whole;
  try {
    whole = contig::read_ufx_share(path, 0, 1);
  } catch (const std::runtime_error&) {
    return;
  }
  for (const auto& r : whole) {
    expect(r.kmer.find_first_not_of("ACGT") == std::string::npos, "a k-mer with a base other than ACGT");
    expect(contig::reverse_complement(r.kmer) >= r.kmer, "a k-mer not in canonical orientation");
  }
  for (int ranks : {2, 3}) {
    std::vector<contig::ufx_record> joined;
    for (int r = 0; r < ranks; ++r) {
      auto part = contig::read_ufx_share(path, r, ranks);
      joined.insert(joined.end(), part.begin(), part.end());
    }
    expect(joined.size() == whole.size(), "the shares of " + std::to_string(ranks) + " ranks hold " +
                                               std::to_string(joined.size()) + " records, the file " +
                                               std::to_string(whole.size()));
    for (std::size_t i = 0; i < whole.size(); ++i) {
      expect(joined[i].kmer == whole[i].kmer && joined[i].ext.left == whole[i].ext.left &&
                 joined[i].ext.right == whole[i].ext.right,
             "the shares disagree with the whole file at record " + std::to_string(i));
    }
  }
}

constexpr std::size_t reads_k = 5;

inline bool same(const contig::read_fragments& a, const contig::read_fragments& b) {
  return a.bases == b.bases && a.ends == b.ends && a.reads == b.reads && a.read_bases == b.read_bases;
}

inline void append(contig::read_fragments& to, const contig::read_fragments& part) {
  const auto shift = to.bases.size();
  to.bases += part.bases;
  for (auto e : part.ends) to.ends.push_back(e + shift);
  to.reads += part.reads;
  to.read_bases += part.read_bases;
}

inline void check_fragments(const contig::read_fragments& f) {
  expect(f.bases.find_first_not_of("ACGT") == std::string::npos, "a fragment with a base other than ACGT");
  for (std::size_t i = 0; i < f.size(); ++i) expect(f[i].size() >= reads_k, "a fragment shorter than k");
}

inline void reads(const std::string& in) {
  static scratch plain(".reads"), gzip(".reads.gz");
  const auto& path = plain.write(in);
  std::optional<contig::read_fragments> whole;
  try {
    whole = contig::read_share({path}, reads_k, 0, 1);
  } catch (const contig::reads_error&) {
  }
  // The same bytes compressed must read the same (unless the plain bytes began with gzip's magic themselves).
  const bool magic = in.size() >= 2 && static_cast<unsigned char>(in[0]) == 0x1f && static_cast<unsigned char>(in[1]) == 0x8b;
  if (!magic) {
    std::optional<contig::read_fragments> zipped;
    try {
      zipped = contig::read_share({gzip.write_gzip(in)}, reads_k, 0, 1);
    } catch (const contig::reads_error&) {
    }
    expect(whole.has_value() == zipped.has_value(), whole ? "the gzip file was refused, the plain one read"
                                                          : "the plain file was refused, the gzip one read");
    if (whole) expect(same(*whole, *zipped), "gzip and plain files of the same bytes read differently");
  }
  if (!whole) return;
  check_fragments(*whole);
  if (magic) return;
  for (int ranks : {2, 3}) {
    contig::read_fragments joined;
    for (int r = 0; r < ranks; ++r) {
      try {
        append(joined, contig::read_share({path}, reads_k, r, ranks));
      } catch (const contig::reads_error& e) {
        expect(false, "rank " + std::to_string(r) + " of " + std::to_string(ranks) +
                          " refused a file that reads whole: " + e.what());
      }
    }
    expect(same(joined, *whole), "the shares of " + std::to_string(ranks) + " ranks differ from the whole file (" +
                                     std::to_string(joined.reads) + " reads vs " + std::to_string(whole->reads) + ")");
  }
}

inline void reads_gzip(const std::string& in) {
  static scratch file(".gz");
  try {
    check_fragments(contig::read_share({file.write(in)}, reads_k, 0, 1));
  } catch (const contig::reads_error&) {
  }
}

inline void fasta(const std::string& in) {
  static scratch file(".fa");
  std::vector<std::string> seqs;
  try {
    seqs = contig::read_fasta(file.write(in));
  } catch (const std::runtime_error&) {
    return;
  }
  std::size_t headers = 0;
  std::istringstream lines(in);
  for (std::string line; std::getline(lines, line);) headers += !line.empty() && line[0] == '>';
  expect(seqs.size() == headers, "one sequence per '>' line");
  for (const auto& s : seqs) expect(s.find('\n') == std::string::npos, "a sequence holds a line end");
}

/// The ordered map's messages travel between ranks of one job, so a malformed one means a bug or a corrupted buffer;
/// either way decoding must end in shoal::error, never in a read past the bytes or an invalid value. A message that
/// decodes must encode to bytes that decode to the same message (compared by encoding it once more).
inline void ordered_map_wire(const std::string& in) {
  using codec = shoal::detail::ordered_map::codec<std::int64_t, std::string>;
  codec::message_type m;
  try {
    m = codec::decode(std::as_bytes(std::span(in.data(), in.size())));
  } catch (const shoal::error&) {
    return;
  }
  std::vector<std::byte> first_buffer, second_buffer;
  const auto first = codec::encode(m, first_buffer);
  const auto again = codec::decode(first);  // must not throw: these bytes are an encoding
  const auto second = codec::encode(again, second_buffer);
  expect(std::equal(first.begin(), first.end(), second.begin(), second.end()),
         "a decoded message, encoded and decoded again, encodes differently");
}

/// A user type that cereal serializes (as a value of a container or a message argument would be).
struct fuzz_record {
  std::string name;
  std::vector<std::int32_t> ids;
  std::optional<double> weight;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(name, ids, weight);
  }
};
using serialized_value = std::tuple<std::map<std::int32_t, std::string>, std::vector<std::string>,
                                    std::variant<std::int64_t, std::string>, fuzz_record, bool>;

/// Every stored value and message argument that is not plain bytes goes through shoal::byte_reader, and cereal's
/// types through its checked archive: bytes that no writer produced must end in shoal::error, never in a read past
/// the bytes, an allocation of whatever a size says or an invalid value. A value that reads must write bytes that
/// read back to a value that writes the same bytes (a map's duplicate keys collapse, so the first writing may differ
/// from the input).
inline void serialized_values(const std::string& in) {
  serialized_value v;
  try {
    v = shoal::byte_reader(std::as_bytes(std::span(in.data(), in.size()))).read<serialized_value>();
  } catch (const shoal::error&) {
    return;
  }
  const auto first = shoal::to_bytes(v);
  const auto second = shoal::to_bytes(shoal::from_bytes<serialized_value>(first));  // must not throw
  expect(first == second, "a value read, written and read again writes different bytes");
}

inline void flights_message(const std::string& in) {
  const auto msg = flights::parse_client_message(in);
  if (const auto* e = std::get_if<flights::protocol_error>(&msg)) {
    const auto reply = nlohmann::json::parse(flights::error_message(e->message), nullptr, false);
    expect(!reply.is_discarded() && reply["type"] == "error", "the error reply is not the JSON error message");
  } else if (const auto* q = std::get_if<flights::query_request>(&msg)) {
    for (const auto* b : {&q->dep, &q->arr}) {
      expect(b->lon0 >= -180 && b->lon1 <= 180 && b->lat0 >= -90 && b->lat1 <= 90, "a box out of range");
      expect(b->lon0 <= b->lon1 && b->lat0 <= b->lat1, "an empty box accepted");
    }
    expect(q->every_ms == 0 || (q->every_ms >= 100 && q->every_ms <= 60000), "every_ms out of its limits");
  }
}

}  // namespace detail

inline const std::vector<target>& targets() {
  static const std::vector<target> all = {
      {"key_box", {"[", "]", ",", ".", " ", "-", "[1,", "9223372036854775807"}, detail::key_box},
      {"settings", {"K", "M", "G", "T", "B", "iB", "on", "off", "yes", "TRUE", " ", "\t", "delay:", ":"}, detail::settings},
      {"kv_trace", {"PUT ", "GET ", "#", " ", "\t", "\n", "-", "+"}, detail::kv_trace},
      {"ufx", {"\t", " ", "\n", "#", "\r", "A", "C", "G", "T", "X", "F", "N"}, detail::ufx},
      {"reads", {">", "@", "+", "\n", "\r\n", "N", "acgt", "-", ".", "*", "\x1f\x8b"}, detail::reads, 2},
      {"reads_gzip", {"\x1f\x8b", "\x08", "\0\0\0\0"}, detail::reads_gzip, 2},
      {"fasta", {">", "\n", "\r\n", "ACGT"}, detail::fasta},
      {"flights_message",
       {"{", "}", "[", "]", ",", ":", "\"type\"", "\"query\"", "\"stop\"", "\"dep\"", "\"arr\"", "\"every_ms\"",
        "\"id\"", "null", "1e400", "-181", "\\u0000", "\\ud800"},
       detail::flights_message},
      {"ordered_map_wire", {std::string(1, '\0'), "\x01", "\x05", "\xff\xff\xff\xff", std::string(8, '\0')},
       detail::ordered_map_wire},
      {"serialized_values", {std::string(1, '\0'), "\x01", "\x02", "\xff\xff\xff\xff", std::string(8, '\0')},
       detail::serialized_values},
  };
  return all;
}

inline const target* find_target(std::string_view name) {
  for (const auto& t : targets()) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

}  // namespace shoal::testing::fuzz
