// The seeded fuzz driver (docs/testing.md, "Fuzzing"): for every target of tests/fuzz/targets.hpp, each input of
// its seed corpus (tests/fuzz/corpus/<target>/: valid inputs and the regression inputs of past findings) and then
// SHOAL_FUZZ_ITERATIONS (default 2000; the reads targets half of that) mutations of them (tests/fuzz/mutate.hpp)
// seeded by SHOAL_FUZZ_SEED (default 1). A finding fails the test with the input escaped and written to
// fuzz-findings/<target>-<n>.bin in the working directory (add it to the target's corpus once fixed).
// Longer runs: SHOAL_FUZZ_ITERATIONS=200000 SHOAL_FUZZ_SEED=$RANDOM build/dev/tests/fuzz_test
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/mutate.hpp"
#include "fuzz/targets.hpp"

namespace {

using namespace shoal::testing::fuzz;
namespace fs = std::filesystem;

std::uint64_t setting(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v == nullptr || *v == '\0' ? fallback : shoal::detail::parse_size(v, name);
}

std::vector<std::string> corpus(const std::string& target) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(SHOAL_FUZZ_CORPUS) / target)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<std::string> out;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return out;
}

std::string escaped(const std::string& s) {
  std::string out;
  for (unsigned char c : s.substr(0, 400)) {
    if (c >= 0x20 && c < 0x7f && c != '\\') out += static_cast<char>(c);
    else if (c == '\n') out += "\\n";
    else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return s.size() > 400 ? out + "... (" + std::to_string(s.size()) + " bytes)" : out;
}

// Runs one input; on a finding, records it and returns false.
bool survives(const target& t, const std::string& input, std::size_t n) {
  std::string problem;
  try {
    t.run(input);
    return true;
  } catch (const finding& f) {
    problem = f.what();
  } catch (const std::exception& e) {
    problem = std::string("an exception the parser does not document: ") + e.what();
  }
  fs::create_directories("fuzz-findings");
  const auto file = "fuzz-findings/" + std::string(t.name) + "-" + std::to_string(n) + ".bin";
  std::ofstream(file, std::ios::binary).write(input.data(), static_cast<std::streamsize>(input.size()));
  ADD_FAILURE() << t.name << ": " << problem << "\n  input #" << n << ": \"" << escaped(input) << "\"\n  saved to "
                << file;
  return false;
}

class Fuzz : public ::testing::TestWithParam<std::string> {};

TEST_P(Fuzz, SeedsAndMutationsParseOrFailCleanly) {
  const target& t = *find_target(GetParam());
  const auto seeds = corpus(t.name);
  ASSERT_FALSE(seeds.empty()) << "no seed inputs in " << SHOAL_FUZZ_CORPUS << "/" << t.name;
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    if (!survives(t, seeds[i], i)) return;
  }
  const auto iterations = setting("SHOAL_FUZZ_ITERATIONS", 2000) / t.cost;
  mutator m(setting("SHOAL_FUZZ_SEED", 1) * 1000003 + std::hash<std::string>{}(t.name), t.tokens);
  for (std::uint64_t i = 0; i < iterations; ++i) {
    const auto& seed = seeds[i % seeds.size()];
    const auto& other = seeds[(i * 7 + 3) % seeds.size()];
    if (!survives(t, m.next(seed, other), seeds.size() + i)) return;
  }
}

// Findings of this driver, kept as tests of their own (their inputs are also in the corpus as regress-*).
TEST(FuzzFindings, SizeThatDoesNotFitIsRefusedNotWrapped) {
  EXPECT_THROW(shoal::detail::parse_size("42949618446744073709551615", "SHOAL_HEAP_SIZE"), shoal::usage_error);
  EXPECT_THROW(shoal::detail::parse_size("20000000T", "SHOAL_HEAP_SIZE"), shoal::usage_error);
  EXPECT_EQ(shoal::detail::parse_size("18446744073709551615", "X"), std::size_t{18446744073709551615ull});
  EXPECT_EQ(shoal::detail::parse_size("16777215T", "X"), std::size_t{16777215} << 40);
}

TEST(FuzzFindings, VolumeOfTheWidestIntervalSaturatesWithoutOverflow) {
  // libFuzzer + UBSan: hi - lo overflowed int64 for [-2^63, 2^63 - 1], and that interval's 2^64 keys counted as 0.
  EXPECT_EQ(shoal::key_box::parse("[-9223372036854775808,9223372036854775807].0").volume(), UINT64_MAX);
  EXPECT_EQ(shoal::key_box::parse("[-9223372036854775808,-1].[0,1]").volume(), UINT64_MAX);  // 2^63 * 2
  EXPECT_EQ(shoal::key_box::parse("[-9223372036854775808,-1]").volume(), std::uint64_t{1} << 63);
  EXPECT_EQ(shoal::key_box::parse("[-5,5].3.[1,2]").volume(), 22u);
}

TEST(FuzzFindings, TraceWithASignOrExtraFieldsIsRefused) {
  for (const char* text : {"PUT +1 11\n", "PUT -1 5\n", "PUT 1 5 6\n", "PUT 1 5\nGET 1 junk\n"}) {
    std::istringstream in(text);
    EXPECT_THROW(kv_trace::read_trace(in), shoal::error) << text;
  }
}

TEST(FuzzFindings, EmptyPlainReadsFileIsRefusedLikeAnEmptyGzipFile) {
  detail::scratch empty(".empty");
  EXPECT_THROW(contig::read_share({empty.write("")}, 5, 0, 1), contig::reads_error);
  EXPECT_THROW(contig::read_share({empty.write_gzip("")}, 5, 0, 1), contig::reads_error);
}

TEST(FuzzFindings, OrderedMapMessageWithABadBoolOrAHugeCountIsRefused) {
  // The ordered map's wire target: a bool byte of 104 was read as a bool (UBSan: not a valid value for type 'bool'),
  // and a vector of 2^60 strings was resized by cereal before its bytes were looked at (out of memory).
  using codec = shoal::detail::ordered_map::codec<std::int64_t, std::string>;
  const auto read = [](const std::string& name) {
    std::ifstream in(std::string(SHOAL_FUZZ_CORPUS) + "/ordered_map_wire/" + name, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  for (const auto& [name, what] : {std::pair{"regress-bool-of-value-104", "a bool of value 104"},
                                   std::pair{"regress-vector-of-2-to-the-60-strings",
                                             "1152921504606846976 elements announced"}}) {
    const std::string bytes = read(name);
    ASSERT_FALSE(bytes.empty()) << name;
    try {
      codec::decode(std::as_bytes(std::span(bytes.data(), bytes.size())));
      ADD_FAILURE() << name << ": decoded";
    } catch (const shoal::error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  }
}

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const auto& t : targets()) out.emplace_back(t.name);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Targets, Fuzz, ::testing::ValuesIn(names()), [](const auto& info) { return info.param; });

}  // namespace
