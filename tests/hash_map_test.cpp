// shoal::hash_map: every operation, every promise variant, concurrent mixed stress with full verification, a full
// table, tombstones, resize, string / vector / cereal keys and values, blob reclamation.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <random>
#include <string>
#include <vector>

#include "shoal/containers/hash_map.hpp"
#include "shoal_test.hpp"

namespace {

using shoal::testing::all_ranks;
using shoal::testing::scaled;

int me() { return shoal::rank(); }
int np() { return shoal::size(); }

struct person {
  std::string name;
  std::vector<int> ages;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(name, ages);
  }
  friend bool operator==(const person&, const person&) = default;
};

TEST(HashMap, InsertFindEveryRankEveryKey) {
  const int n = scaled(200);
  shoal::hash_map<std::uint64_t, std::uint64_t> m(static_cast<std::size_t>(n * np() * 2));
  for (int i = 0; i < n; ++i) {
    const std::uint64_t k = static_cast<std::uint64_t>(me()) * 1000000 + i;
    EXPECT_TRUE(m.insert(k, k * 3));
    EXPECT_FALSE(m.insert(k, 7)) << "a second insert of a key reports 'already present'";
  }
  shoal::barrier();
  for (int r = 0; r < np(); ++r) {
    for (int i = 0; i < n; ++i) {
      const std::uint64_t k = static_cast<std::uint64_t>(r) * 1000000 + i;
      m.prefetch(k);  // a hint only, for a key of any owner on any path
      EXPECT_EQ(m.find(k), k * 3);
      EXPECT_EQ(m.find(k, shoal::promise::find), k * 3);
    }
  }
  m.prefetch(999999999);
  EXPECT_FALSE(m.find(999999999).has_value());
  EXPECT_FALSE(m.find(999999999, shoal::promise::find).has_value());
  EXPECT_EQ(m.size(), static_cast<std::size_t>(n * np()));
}

TEST(HashMap, InsertOrAssignReplaces) {
  shoal::hash_map<int, int> m(64 * static_cast<std::size_t>(np()));
  if (me() == 0) {
    EXPECT_TRUE(m.insert_or_assign(5, 1));
    EXPECT_FALSE(m.insert_or_assign(5, 2));
    EXPECT_FALSE(m.insert(5, 3));
  }
  shoal::barrier();
  EXPECT_EQ(m.find(5), 2);
  shoal::barrier();
}

// Each key is written by one rank only (k % ranks), so its last value is known; all ranks read all keys meanwhile
// and check that every value they see is whole (its key and writer match), then every key is verified.
struct tagged {
  std::uint64_t key;
  std::uint32_t writer;
  std::uint32_t seq;
};

TEST(HashMap, ConcurrentMixedStressVerified) {
  const int keys = scaled(400) * np();
  const int ops = scaled(1500);
  shoal::hash_map<std::uint64_t, tagged> m(static_cast<std::size_t>(keys) * 2);
  std::mt19937_64 rng(42 + static_cast<std::uint64_t>(me()));
  std::map<std::uint64_t, std::optional<std::uint32_t>> expected;  // my keys -> last seq, or erased
  int torn = 0;
  for (int i = 0; i < ops; ++i) {
    const auto k = static_cast<std::uint64_t>(rng() % static_cast<std::uint64_t>(keys));
    if (static_cast<int>(k % static_cast<std::uint64_t>(np())) == me()) {
      const auto seq = static_cast<std::uint32_t>(i);
      switch (rng() % 4) {
        case 0:
          if (m.insert(k, tagged{k, static_cast<std::uint32_t>(me()), seq})) expected[k] = seq;
          else { EXPECT_TRUE(expected[k].has_value()); }
          break;
        case 1:
        case 2:
          EXPECT_EQ(m.insert_or_assign(k, tagged{k, static_cast<std::uint32_t>(me()), seq}), !expected[k].has_value());
          expected[k] = seq;
          break;
        default: {
          const bool was = expected[k].has_value();
          EXPECT_EQ(m.erase(k), was);
          expected[k] = std::nullopt;
        }
      }
    } else if (auto v = m.find(k)) {
      torn += (v->key != k || v->writer != k % static_cast<std::uint64_t>(np()));
    }
  }
  EXPECT_EQ(torn, 0);
  shoal::barrier();
  for (const auto& [k, seq] : expected) {
    const auto v = m.find(k, shoal::promise::find);
    ASSERT_EQ(v.has_value(), seq.has_value()) << "key " << k;
    if (seq) { EXPECT_EQ(v->seq, *seq); }
  }
  std::size_t live = 0;
  for (const auto& [k, seq] : expected) live += seq.has_value();
  EXPECT_EQ(m.size(), shoal::allreduce(live, shoal::op::sum{}));
}

TEST(HashMap, FullTableRaisesAndIsNotAlreadyPresent) {
  const std::size_t capacity = 8 * static_cast<std::size_t>(np()) + 3;
  shoal::hash_map<int, int> m(capacity);
  if (me() == 0) {
    std::size_t stored = 0;
    int fulls = 0;
    for (int k = 0; stored < capacity && k < 100000; ++k) {
      try {
        EXPECT_TRUE(m.insert(k, k));
        ++stored;
      } catch (const shoal::container_full& e) {
        ++fulls;
        EXPECT_NE(std::string(e.what()).find("resize"), std::string::npos) << e.what();
      }
    }
    EXPECT_EQ(stored, capacity) << "every bucket is usable";
    EXPECT_THROW(m.insert(1000001, 1), shoal::container_full);
    EXPECT_FALSE(m.insert(0, 5)) << "a present key in a full table is 'already present', not full";
    EXPECT_FALSE(m.find(1000001).has_value());
    EXPECT_FALSE(m.find(1000001, shoal::promise::find).has_value());
  }
  shoal::barrier();
  EXPECT_EQ(m.size(), capacity);
}

// BCL's find scans the whole table on a miss; shoal stops at the first free bucket.
TEST(HashMap, MissCostsItsProbeLengthNotTheTable) {
  shoal::hash_map<std::uint64_t, int> m(std::size_t{1} << 14);
  for (int i = 0; i < 100; ++i) m.insert(static_cast<std::uint64_t>(me() * 1000 + i), i);
  shoal::barrier();
  const int misses = scaled(200);
  for (auto variant : {shoal::promise::any, shoal::promise::find}) {
    const auto before = m.probe_count();
    for (int i = 0; i < misses; ++i) EXPECT_FALSE(m.find(5000000 + static_cast<std::uint64_t>(i), variant));
    const double per_miss = static_cast<double>(m.probe_count() - before) / misses;
    EXPECT_LT(per_miss, 2.0) << "a miss probed " << per_miss << " buckets on average";
  }
  shoal::barrier();
}

// Rank 0 inserts keys 0, 1, ... (value value_of(k)) until all but np() of the capacity buckets are used, so that
// most keys sit away from their home bucket; every rank gets the keys inserted. Collective.
template <class ValueOf>
std::vector<int> fill_nearly_full(shoal::hash_map<int, int>& m, std::size_t capacity, ValueOf value_of) {
  std::vector<int> inserted;
  if (me() == 0) {
    for (int k = 0; inserted.size() < capacity - static_cast<std::size_t>(np()) && k < 10000; ++k) {
      try {
        m.insert(k, value_of(k));
        inserted.push_back(k);
      } catch (const shoal::container_full&) {
      }
    }
  }
  return shoal::broadcast(inserted);
}

TEST(HashMap, FindManyEqualsFindOnEveryKeyDisplacedErasedOrMissing) {
  // A nearly full table (home buckets shared, keys displaced), half the keys erased (tombstones on the probe
  // sequences), keys of every owner and absent ones: find_many must give what find(k, promise::find) gives, on
  // every path (its home-bucket reads are prefetched on shared memory and in flight at once elsewhere).
  const std::size_t capacity = 16 * static_cast<std::size_t>(np());
  shoal::hash_map<int, int> m(capacity);
  const std::vector<int> inserted = fill_nearly_full(m, capacity, [](int k) { return 3 * k; });
  if (me() == 0) {
    for (std::size_t i = 0; i < inserted.size(); i += 2) EXPECT_TRUE(m.erase(inserted[i]));
  }
  shoal::barrier();
  std::vector<int> keys = inserted;
  for (int k = 20000; k < 20040; ++k) keys.push_back(k);  // never inserted
  std::vector<std::optional<int>> got(keys.size());
  m.find_many(keys, got);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(got[i], m.find(keys[i], shoal::promise::find)) << keys[i];
    if (i < inserted.size() && i % 2 == 1) { EXPECT_EQ(got[i], 3 * keys[i]) << keys[i]; }
    else { EXPECT_FALSE(got[i].has_value()) << keys[i]; }
  }
  std::vector<std::optional<int>> none;
  m.find_many(std::span<const int>(), none);  // nothing to find
  std::vector<std::optional<int>> short_out(1);
  EXPECT_THROW(m.find_many(keys, short_out), shoal::usage_error);
  shoal::barrier();
}

TEST(HashMap, EraseLeavesTombstonesThatFindSkips) {
  // A nearly full table: most keys are displaced, so finds must walk past erased buckets.
  const std::size_t capacity = 8 * static_cast<std::size_t>(np());
  shoal::hash_map<int, int> m(capacity);
  const std::vector<int> inserted = fill_nearly_full(m, capacity, [](int k) { return k + 1; });
  if (me() == 0) {
    for (std::size_t i = 0; i < inserted.size(); i += 2) EXPECT_TRUE(m.erase(inserted[i]));
    for (std::size_t i = 0; i < inserted.size(); i += 2) EXPECT_FALSE(m.erase(inserted[i]));
  }
  shoal::barrier();
  for (std::size_t i = 0; i < inserted.size(); ++i) {
    const auto v = m.find(inserted[i]);
    const auto w = m.find(inserted[i], shoal::promise::find);
    EXPECT_EQ(v, w);
    if (i % 2 == 0) { EXPECT_FALSE(v.has_value()) << inserted[i]; }
    else { EXPECT_EQ(v, inserted[i] + 1) << inserted[i]; }
  }
  EXPECT_EQ(m.size(), inserted.size() / 2);
  // Tombstones are not reused until resize; resize drops them and keeps every live key.
  m.resize(capacity * 2);
  EXPECT_EQ(m.capacity(), capacity * 2);
  for (std::size_t i = 0; i < inserted.size(); ++i) {
    const auto v = m.find(inserted[i], shoal::promise::find);
    if (i % 2 == 0) { EXPECT_FALSE(v.has_value()); }
    else { EXPECT_EQ(v, inserted[i] + 1); }
  }
  EXPECT_EQ(m.size(), inserted.size() / 2);
  if (me() == 0) { EXPECT_TRUE(m.insert(inserted[0], 99)); }
  shoal::barrier();
  EXPECT_EQ(m.find(inserted[0]), 99);
  shoal::barrier();
}

TEST(HashMap, ResizeRehashesEverythingAndRefusesTooSmall) {
  const int n = scaled(300);
  shoal::hash_map<std::string, int> m(static_cast<std::size_t>(n * np()) * 2 + 7);
  for (int i = 0; i < n; ++i) m.insert("key-" + std::to_string(me()) + "-" + std::to_string(i), i);
  EXPECT_THROW(m.resize(10), shoal::usage_error);
  m.resize(static_cast<std::size_t>(n * np()) * 3);
  for (int r = 0; r < np(); ++r) {
    for (int i = 0; i < n; i += 7) EXPECT_EQ(m.find("key-" + std::to_string(r) + "-" + std::to_string(i)), i);
  }
  EXPECT_EQ(m.size(), static_cast<std::size_t>(n * np()));
}

TEST(HashMap, StringAndVectorKeysAndValues) {
  shoal::hash_map<std::string, std::vector<int>> m(256 * static_cast<std::size_t>(np()));
  const std::string mine = "rank" + std::to_string(me());
  EXPECT_TRUE(m.insert(mine, {me(), 1, 2, 3}));
  EXPECT_TRUE(m.insert(mine + std::string(100, 'x'), {}));
  EXPECT_FALSE(m.insert(mine, {9}));
  shoal::barrier();
  for (int r = 0; r < np(); ++r) {
    const std::string k = "rank" + std::to_string(r);
    EXPECT_EQ(m.find(k), (std::vector<int>{r, 1, 2, 3}));
    EXPECT_EQ(m.find(k, shoal::promise::find), (std::vector<int>{r, 1, 2, 3}));
    EXPECT_EQ(m.find(k + std::string(100, 'x')), std::vector<int>{});
  }
  EXPECT_FALSE(m.find("rank").has_value());
  shoal::barrier();
  // Every rank reassigns the key of its neighbour: the old blob belongs to another rank and goes back at reclaim.
  const std::string next = "rank" + std::to_string((me() + 1) % np());
  EXPECT_FALSE(m.insert_or_assign(next, std::vector<int>(50, me())));
  shoal::barrier();
  EXPECT_EQ(m.find(mine), std::vector<int>(50, (me() + np() - 1) % np()));
  shoal::barrier();
  EXPECT_TRUE(m.erase(next));
  shoal::barrier();
  EXPECT_FALSE(m.find(mine).has_value());
  EXPECT_EQ(m.size(), static_cast<std::size_t>(np()));
}

TEST(HashMap, ReplacedAndErasedBlobsAreFreed) {
  const auto baseline = shoal::heap_in_use();
  {
    shoal::hash_map<int, std::string> m(64 * static_cast<std::size_t>(np()));
    const int key = (me() + 1) % np();  // owned by anyone; written by a neighbour too
    m.insert_or_assign(me(), std::string(1000, 'a'));
    m.size();
    const auto after_one = shoal::heap_in_use();
    for (int i = 0; i < scaled(200); ++i) m.insert_or_assign(i % 2 ? me() : key + 1000, std::string(1000, 'b'));
    m.reclaim();
    EXPECT_LE(shoal::heap_in_use(), after_one + 2 * 1024) << "replaced value blobs are returned to the heap";
    m.erase(me());
    m.erase(key + 1000);
    m.reclaim();
    shoal::barrier();
  }
  EXPECT_EQ(shoal::heap_in_use(), baseline) << "nothing of the map remains after its destruction";
}

TEST(HashMap, FixedInlineStringsAndCerealTypes) {
  shoal::hash_map<shoal::fixed<std::string, 8>, shoal::fixed<person, 64>> m(64 * static_cast<std::size_t>(np()));
  static_assert(std::is_same_v<decltype(m)::key_type, std::string>);
  const person p{"ada", {me(), 37}};
  EXPECT_TRUE(m.insert("r" + std::to_string(me()), p));
  EXPECT_THROW(m.insert("a key longer than eight", p), shoal::usage_error);
  EXPECT_THROW(m.insert("short", person{std::string(100, 'n'), {}}), shoal::usage_error);
  shoal::barrier();
  for (int r = 0; r < np(); ++r) EXPECT_EQ(m.find("r" + std::to_string(r)), (person{"ada", {r, 37}}));
  EXPECT_EQ(m.size(), static_cast<std::size_t>(np())) << "a rejected value leaves no bucket behind";
  shoal::hash_map<int, person> blobs(16 * static_cast<std::size_t>(np()));
  blobs.insert(me(), p);
  shoal::barrier();
  EXPECT_EQ(blobs.find(0, shoal::promise::find), (person{"ada", {0, 37}}));
  shoal::barrier();
}

TEST(HashMap, ExplicitBlobStoresEvenATriviallyCopyableValueOutOfLine) {
  // shoal::blob<T> (containers/storage.hpp) chooses the variable-length representation even where T would be inline.
  using map_type = shoal::hash_map<int, shoal::blob<std::uint64_t>>;
  static_assert(std::is_same_v<map_type::mapped_type, std::uint64_t>);
  static_assert(map_type::uses_blobs);
  static_assert(!shoal::hash_map<int, std::uint64_t>::uses_blobs);
  const auto baseline = shoal::heap_in_use();
  {
    map_type m(16 * static_cast<std::size_t>(np()));
    const auto before = shoal::heap_in_use();
    EXPECT_TRUE(m.insert(me(), 1000 + static_cast<std::uint64_t>(me())));
    EXPECT_GT(shoal::heap_in_use(), before) << "the value went into a blob in this rank's heap";
    shoal::barrier();
    for (int r = 0; r < np(); ++r) {
      EXPECT_EQ(m.find(r), std::optional<std::uint64_t>(1000 + static_cast<std::uint64_t>(r)));
    }
    EXPECT_EQ(m.size(), static_cast<std::size_t>(np()));
  }
  EXPECT_EQ(shoal::heap_in_use(), baseline);
}

TEST(HashMap, LocalInsertMatchesAtomicInsert) {
  const int n = scaled(200);
  shoal::hash_map<std::uint64_t, std::uint64_t> atomic(static_cast<std::size_t>(n * np()) * 2);
  shoal::hash_map<std::uint64_t, std::uint64_t> local(static_cast<std::size_t>(n * np()) * 2);
  std::uint64_t foreign = 0;
  for (std::uint64_t k = 0; k < static_cast<std::uint64_t>(n * np()); ++k) {
    if (k % static_cast<std::uint64_t>(np()) == static_cast<std::uint64_t>(me())) atomic.insert(k, k + 1);
    if (local.owner(k) == me()) {
      EXPECT_TRUE(local.local_insert(k, k + 1));
      EXPECT_FALSE(local.local_insert(k, 0));  // present: the value stays k + 1
      if (k % 2 == 1) {
        EXPECT_FALSE(local.local_insert_or_assign(k, k + 2));  // replaced
        EXPECT_FALSE(local.local_insert_or_assign(k, k + 1));  // and back
      }
    } else {
      foreign = k;
    }
  }
  if (np() > 1) {
    EXPECT_THROW(local.local_insert(foreign, 1), shoal::usage_error);
    EXPECT_THROW(local.local_insert_or_assign(foreign, 1), shoal::usage_error);
  }
  shoal::barrier();
  for (std::uint64_t k = 0; k < static_cast<std::uint64_t>(n * np()) + 10; ++k) {
    EXPECT_EQ(atomic.find(k), local.find(k));
    EXPECT_EQ(atomic.find(k, shoal::promise::find), local.find(k, shoal::promise::find));
  }
  EXPECT_EQ(atomic.size(), local.size());
}

}  // namespace
