// Serialization and hashing: the rules every container and message shares.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <variant>
#include <vector>

#include <cereal/types/memory.hpp>
#include <cereal/types/polymorphic.hpp>

#include "shoal/core.hpp"

// A polymorphic type as cereal sends one: through a pointer to its base, registered by name (CEREAL_REGISTER_TYPE, at
// namespace scope; shoal's checked archive is registered with cereal, so it is bound to the type too).
namespace poly {
struct shape {
  virtual ~shape() = default;
  virtual int area() const = 0;
  template <class Archive>
  void serialize(Archive&) {}
};
struct square : shape {
  int side = 0;
  int area() const override { return side * side; }
  template <class Archive>
  void serialize(Archive& ar) {
    ar(cereal::base_class<shape>(this), side);
  }
};
}  // namespace poly
CEREAL_REGISTER_TYPE(poly::square)

namespace {

struct point {
  int x, y;
  friend bool operator==(const point&, const point&) = default;
};

struct person {
  std::string name;
  std::vector<int> ages;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(name, ages);
  }
  friend bool operator==(const person&, const person&) = default;
};

struct not_serializable {
  std::string s;
  int* p;
};

static_assert(shoal::serializable<int>);
static_assert(shoal::serializable<point>);
static_assert(shoal::serializable<std::string>);
static_assert(shoal::serializable<std::vector<double>>);
static_assert(shoal::serializable<std::map<std::string, std::vector<int>>>);
static_assert(shoal::serializable<std::tuple<int, std::string>>);
static_assert(shoal::serializable<person>);
static_assert(!shoal::serializable<not_serializable>);
static_assert(!shoal::serializable<int*>);

TEST(Serialize, RoundTripsInOrder) {
  std::vector<std::byte> buf;
  shoal::byte_writer w(buf);
  w.write(42);
  w.write(point{3, 4});
  w.write(std::string("shoal"));
  w.write(std::vector<double>{1.5, 2.5});
  w.write(std::map<std::string, std::vector<int>>{{"a", {1}}, {"b", {2, 3}}});
  w.write(person{"ada", {36, 37}});
  w.write(std::tuple<int, std::string>{7, "seven"});
  shoal::byte_reader r(buf);
  EXPECT_EQ(r.read<int>(), 42);
  EXPECT_EQ(r.read<point>(), (point{3, 4}));
  EXPECT_EQ(r.read<std::string>(), "shoal");
  EXPECT_EQ(r.read<std::vector<double>>(), (std::vector<double>{1.5, 2.5}));
  auto m = r.read<std::map<std::string, std::vector<int>>>();
  EXPECT_EQ(m.at("b"), (std::vector<int>{2, 3}));
  EXPECT_EQ(r.read<person>(), (person{"ada", {36, 37}}));
  EXPECT_EQ((r.read<std::tuple<int, std::string>>()), (std::tuple<int, std::string>{7, "seven"}));
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_THROW(r.read<int>(), shoal::error);
}

// Reading past the end (a plain value, or a vector whose length claims more than is left) is an error that says how
// many bytes were needed and how many were left; a plain value that does not fit leaves the reader where it was.
TEST(Serialize, TruncatedDataIsAClearError) {
  std::vector<std::byte> buf;
  shoal::byte_writer w(buf);
  w.write(std::vector<std::uint32_t>{1, 2, 3});
  buf.resize(buf.size() - 4);  // the vector's last element cut off
  shoal::byte_reader r(buf);
  try {
    r.read<std::vector<std::uint32_t>>();
    FAIL() << "a truncated vector was read";
  } catch (const shoal::error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated serialized data (needed 12 bytes, 8 left)"), std::string::npos)
        << e.what();
  }
  shoal::byte_reader small(std::span<const std::byte>(buf.data(), 2));
  EXPECT_THROW(small.read<std::uint32_t>(), shoal::error);
  EXPECT_EQ(small.remaining(), 2u);
}

/// The text of the shoal::error that read() throws ("no error" when it returns).
template <class Read>
std::string what_of(Read&& read) {
  try {
    read();
  } catch (const shoal::error& e) {
    return e.what();
  }
  return "no error";
}

// Bytes that no writer produced (a corrupted or malformed message): a bool byte other than 0 or 1, a length so large
// that length × element size wraps around, a vector of strings whose length claims more elements than bytes are left.
// Each is a shoal::error naming what is wrong, before anything is allocated for it (found by the ordered map's wire
// fuzz target: a bool of value 104 read as a bool, and a vector of 2^60 strings resized by cereal).
TEST(Serialize, MalformedDataIsAClearError) {
  auto bytes_of = [](std::initializer_list<std::uint64_t> words) {
    std::vector<std::byte> b(words.size() * 8);
    std::memcpy(b.data(), std::data(words), b.size());
    return b;
  };
  const std::vector<std::byte> two{std::byte{2}};
  EXPECT_NE(what_of([&] { shoal::byte_reader(two).read<bool>(); }).find("malformed serialized data (a bool of value 2)"),
            std::string::npos);
  const auto wraps = bytes_of({std::uint64_t{1} << 62, 0});
  EXPECT_NE(what_of([&] { shoal::byte_reader(wraps).read<std::vector<std::uint32_t>>(); })
                .find("malformed serialized data (4611686018427387904 elements of 4 bytes announced)"),
            std::string::npos);
  const auto many = bytes_of({std::uint64_t{1} << 60, 3, 0});
  EXPECT_NE(what_of([&] { shoal::byte_reader(many).read<std::vector<std::string>>(); })
                .find("truncated serialized data (1152921504606846976 elements announced, 16 bytes left)"),
            std::string::npos);
  // What the writer produces reads back: vectors of strings, of bools, of vectors.
  std::vector<std::byte> buf;
  shoal::byte_writer w(buf);
  const std::vector<std::string> words{"", "a", std::string(300, 'z')};
  const std::vector<bool> flags{true, false, true};
  const std::vector<std::vector<std::string>> nested{{"x"}, {}, {"y", "zz"}};
  w.write(words);
  w.write(flags);
  w.write(nested);
  shoal::byte_reader r(buf);
  EXPECT_EQ(r.read<std::vector<std::string>>(), words);
  EXPECT_EQ(r.read<std::vector<bool>>(), flags);
  EXPECT_EQ((r.read<std::vector<std::vector<std::string>>>()), nested);
  EXPECT_EQ(r.remaining(), 0u);
}

// The same inside types cereal writes (tuples, maps, sets, user types): a string or vector whose length claims more
// bytes than are left, and a map whose count does, are shoal::errors before anything is allocated for them (cereal's
// own binary archive resized a string to 2^40 bytes, zero-filled, before finding them missing); so are a bool byte
// other than 0 or 1 and a variant index out of range; a container of empty elements, which take no bytes, still
// reads; and what the writer produces reads back.
struct nothing {
  template <class Archive>
  void serialize(Archive&) {}
  friend bool operator==(const nothing&, const nothing&) = default;
};

/// `b` with the 8-byte size at offset `at` replaced by `size`.
std::vector<std::byte> with_size_at(std::vector<std::byte> b, std::size_t at, std::uint64_t size) {
  std::memcpy(b.data() + at, &size, sizeof size);
  return b;
}

TEST(Serialize, MalformedSizesInsideCerealTypesAreClearErrors) {
  using tuple_type = std::tuple<std::string, int>;
  const auto tuple_bytes = shoal::to_bytes(tuple_type{"abc", 7});  // [length][abc][7]
  const auto huge_string = with_size_at(tuple_bytes, 0, std::uint64_t{1} << 40);
  EXPECT_NE(what_of([&] { shoal::from_bytes<tuple_type>(huge_string); })
                .find("truncated serialized data (1099511627776 elements announced, 7 bytes left)"),
            std::string::npos);
  using map_type = std::map<int, std::string>;
  const auto map_bytes = shoal::to_bytes(map_type{{1, "x"}, {2, "yy"}});  // [count][key][length][bytes]...
  EXPECT_NE(what_of([&] { shoal::from_bytes<map_type>(with_size_at(map_bytes, 0, std::uint64_t{1} << 62)); })
                .find("elements announced"),
            std::string::npos);
  EXPECT_NE(what_of([&] { shoal::from_bytes<map_type>(with_size_at(map_bytes, 12, 100000)); })
                .find("truncated serialized data (100000 elements announced, 15 bytes left)"),
            std::string::npos);
  // A size within what empty elements may take (checked_input_archive::empty_elements_allowed): its bytes are missing.
  EXPECT_NE(what_of([&] { shoal::from_bytes<map_type>(with_size_at(map_bytes, 12, 1000)); })
                .find("truncated serialized data (needed 1000 bytes, 15 left)"),
            std::string::npos);
  const auto person_bytes = shoal::to_bytes(person{"ann", {1, 2}});  // [length][ann][count][ints]
  EXPECT_NE(what_of([&] { shoal::from_bytes<person>(with_size_at(person_bytes, 11, std::uint64_t{1} << 61)); })
                .find("elements announced"),
            std::string::npos);
  // Cut short: the missing bytes are a shoal::error too (cereal's archive threw its own exception type).
  const std::vector<std::byte> cut(map_bytes.begin(), map_bytes.end() - 1);
  EXPECT_NE(what_of([&] { shoal::from_bytes<map_type>(cut); }).find("truncated serialized data"), std::string::npos);
  // A bool inside a tuple from a byte of 2, and a variant's index out of range (cereal's own check: its exception
  // leaves as a shoal::error).
  auto flag_bytes = shoal::to_bytes(std::tuple<int, bool>{1, true});
  flag_bytes.back() = std::byte{2};
  EXPECT_NE(what_of([&] { shoal::from_bytes<std::tuple<int, bool>>(flag_bytes); })
                .find("malformed serialized data (a bool of value 2)"),
            std::string::npos);
  using variant_type = std::tuple<std::variant<int, std::string>>;
  auto variant_bytes = shoal::to_bytes(variant_type{5});  // [int32 index][int]
  variant_bytes[0] = std::byte{7};
  EXPECT_NE(what_of([&] { shoal::from_bytes<variant_type>(variant_bytes); }).find("malformed serialized data ("),
            std::string::npos);
  // Empty elements take no bytes: a tuple holding a vector of 1,000 of them reads back.
  const std::tuple<std::vector<nothing>, int> empties{std::vector<nothing>(1000), 5};
  EXPECT_EQ((shoal::from_bytes<std::tuple<std::vector<nothing>, int>>(shoal::to_bytes(empties))), empties);
  // Round trips.
  EXPECT_EQ(shoal::from_bytes<tuple_type>(tuple_bytes), (tuple_type{"abc", 7}));
  EXPECT_EQ(shoal::from_bytes<map_type>(map_bytes), (map_type{{1, "x"}, {2, "yy"}}));
  EXPECT_EQ(shoal::from_bytes<person>(person_bytes), (person{"ann", {1, 2}}));
}

TEST(Serialize, PolymorphicPointersReadThroughTheCheckedArchive) {
  static_assert(shoal::serializable<std::shared_ptr<poly::shape>>);
  auto sq = std::make_shared<poly::square>();
  sq->side = 7;
  const auto bytes = shoal::to_bytes(std::shared_ptr<poly::shape>(sq));  // [id][name length][name][id][...][side]
  const auto back = shoal::from_bytes<std::shared_ptr<poly::shape>>(bytes);
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->area(), 49);
  EXPECT_NE(dynamic_cast<const poly::square*>(back.get()), nullptr);
  // A name no type was registered under, a name's length past the end, the data cut short: each a shoal::error.
  auto renamed = bytes;
  const auto name_at = std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()).find("poly::square");
  ASSERT_NE(name_at, std::string_view::npos);
  renamed[name_at] = std::byte{'q'};
  EXPECT_NE(what_of([&] { shoal::from_bytes<std::shared_ptr<poly::shape>>(renamed); })
                .find("malformed serialized data (Trying to load an unregistered polymorphic type (qoly::square)"),
            std::string::npos);
  const auto long_name = with_size_at(bytes, name_at - sizeof(std::uint64_t), std::uint64_t{1} << 40);
  EXPECT_NE(what_of([&] { shoal::from_bytes<std::shared_ptr<poly::shape>>(long_name); })
                .find("elements announced"),
            std::string::npos);
  const std::vector<std::byte> cut(bytes.begin(), bytes.end() - 2);
  EXPECT_NE(what_of([&] { shoal::from_bytes<std::shared_ptr<poly::shape>>(cut); }).find("truncated serialized data"),
            std::string::npos);
}

TEST(Hash, SameOnEveryRankAndSeeded) {
  const auto h = shoal::hash_value(std::string("kmer"));
  auto all = shoal::allgather(h);
  for (auto v : all) EXPECT_EQ(v, h);
  EXPECT_NE(shoal::hash_value(std::uint64_t{1}, 1), shoal::hash_value(std::uint64_t{1}, 2));
  EXPECT_EQ(shoal::hash_value(std::string("abc")), shoal::hash_value(std::string_view("abc")));
  EXPECT_EQ(shoal::hash_value(person{"x", {1}}), shoal::hash_value(person{"x", {1}}));
}

TEST(Hash, IsXxh3AsTheLibraryComputesIt) {
  // shoal compiles XXH3 inline (core/hash.hpp); these values are libxxhash's own XXH3_64bits_withSeed (0.8.1, a
  // program linked against the shared library). XXH3's output is fixed since xxHash 0.8.0: where keys live must not
  // change with how the hash is compiled.
  EXPECT_EQ(shoal::hash_value(std::uint64_t{42}, 7), 0xb117e48ca46dc725ull);
  EXPECT_EQ(shoal::hash_value(std::uint32_t{42}), 0x2132b64814a1ad5dull);
  EXPECT_EQ(shoal::hash_value(std::string("kmer")), 0x08abaf8f260807bbull);
}

}  // namespace
