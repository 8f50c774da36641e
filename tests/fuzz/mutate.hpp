// tests/fuzz/mutate.hpp — seeded mutations of valid inputs for the fuzz driver (fuzz_test.cpp): truncation, byte
// flips, binary bytes, huge and negative numbers in place of digits, empty lines, duplicated and deleted spans,
// tokens of the format, splices of two inputs, and inputs of random bytes. No MPI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::testing::fuzz {

class mutator {
 public:
  /// `tokens`: short strings of the input's format (delimiters, keywords) that mutations insert.
  mutator(std::uint64_t seed, std::vector<std::string> tokens) : rng_(seed), tokens_(std::move(tokens)) {}

  /// A random bytes input one time in eight, else `seed` (spliced with `other` sometimes) with 1-4 mutations.
  std::string next(const std::string& seed, const std::string& other) {
    if (pick(8) == 0) return random_bytes(pick(96));
    std::string s = seed;
    if (pick(6) == 0) s = s.substr(0, pick(s.size() + 1)) + other.substr(pick(other.size() + 1));
    const std::size_t n = 1 + pick(4);
    for (std::size_t i = 0; i < n; ++i) mutate(s);
    return s;
  }

 private:
  static constexpr std::string_view numbers[] = {"0", "-1", "-0", "+1", "99999999999999999999999999",
                                                 "18446744073709551616", "18446744073709551615", "9223372036854775808",
                                                 "-9223372036854775809", "4294967296", "1e308", "0x10", "00000000001"};

  std::size_t pick(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng_() % n); }

  std::string random_bytes(std::size_t n) {
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>(rng_());
    return s;
  }

  void mutate(std::string& s) {
    const std::size_t at = pick(s.size() + 1);
    switch (pick(10)) {
      case 0: s.resize(at); break;  // truncate
      case 1:
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << pick(8));  // flip a bit
        break;
      case 2: s.insert(at, random_bytes(1 + pick(4))); break;  // binary bytes
      case 3: {  // a number in place of a run of digits (or anywhere)
        std::size_t b = at;
        while (b < s.size() && (s[b] < '0' || s[b] > '9')) ++b;
        std::size_t e = b;
        while (e < s.size() && s[e] >= '0' && s[e] <= '9') ++e;
        s.replace(b < s.size() ? b : at, e - (b < s.size() ? b : at), numbers[pick(std::size(numbers))]);
        break;
      }
      case 4: s.insert(at, pick(2) ? "\n" : "\r\n"); break;  // an empty line, or a line cut in two
      case 5: {  // delete a span
        s.erase(at, pick(16));
        break;
      }
      case 6: {  // duplicate a span (or a whole line)
        const std::size_t len = pick(32);
        s.insert(at, s.substr(at, len));
        break;
      }
      case 7:
        if (!tokens_.empty()) s.insert(at, tokens_[pick(tokens_.size())]);
        break;
      case 8:
        if (!s.empty()) s[pick(s.size())] = static_cast<char>(rng_());  // any byte, NUL included
        break;
      default: {  // a long run of one character
        s.insert(at, std::string(1 + pick(5000), pick(2) ? 'A' : s.empty() ? '9' : s[pick(s.size())]));
      }
    }
  }

  std::mt19937_64 rng_;
  std::vector<std::string> tokens_;
};

}  // namespace shoal::testing::fuzz
