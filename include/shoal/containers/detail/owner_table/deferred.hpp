// shoal/containers/detail/owner_table/deferred.hpp — futures of single-key operations that travel and complete
// together.
//
// A keyed operation with a future (dist_map's async_find / async_contains / async_erase, dist_multimap's async_find /
// async_count / async_erase, and their blocking forms) does not send a message of its own: its key joins the
// origin's open batch for its owner (at most one per owner), and its future is one element of that batch. The batch
// leaves as ONE message (a per_key_batch_op; to this rank itself: applied in place, no message) when
//   - it holds deferred_batch_keys keys;
//   - any other operation of the container is issued to that owner (so the owner still applies one origin's
//     operations in issue order);
//   - a future of one of the container's open batches is tested or waited on (every open batch leaves then);
//   - wait(), flush(), close() or the destructor runs.
// The owner's one reply completes every future of the batch in one handler: a when_all over n futures costs one
// allocation, one message each way and one wake-up per owner and batch, not per future. Consequences: a failure at
// the owner (the operation threw) fails every future of that batch with the same remote_error; and an async_erase
// to this rank's own shard is applied when its batch leaves (so local_size() sees it after a test of one of the
// futures, or after wait()), not at the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

#include "shoal/containers/detail/owner_table/replies.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/future.hpp"
#include "shoal/core/layer.hpp"

namespace shoal::detail {

/// Keys an open batch takes before it leaves on its own (a 4-byte key: 4 KiB, one eager MPI message).
inline constexpr std::size_t deferred_batch_keys = 1024;

/// An open batch as the table sees it, whatever its operation. `kind` names the batch's type (see deferred_batch).
struct deferred_base {
  virtual ~deferred_base() = default;
  /// Sends the batch (once); `self` is the owning pointer the table held.
  virtual void launch(std::shared_ptr<deferred_base> self) = 0;
  /// Fails every future of a batch that can no longer be sent.
  virtual void abandon(std::exception_ptr e) = 0;
  const void* kind = nullptr;
};

/// The futures of Single (a single-key operation, `wire` its result) issued by one origin to one owner, and their
/// keys. Table: the owner_table (launch_all, send_deferred); Convert: Single::wire -> R, as for a single call.
template <class Table, class Single, class K, class R, class Convert>
class deferred_batch final : public receiver<std::vector<typename Single::wire>>, public deferred_base {
  /// One future's state: testing it sends every open batch of the table.
  struct element final : layer::future_state<R> {
    deferred_batch* batch = nullptr;
    bool test() override {
      if (!this->done) batch->table_->launch_all();
      return this->done;
    }
  };

 public:
  static inline const char tag = 0;  // the address identifies this instantiation (deferred_base::kind)

  deferred_batch(Table* table, int owner) : table_(table), owner_(owner) { kind = &tag; }

  /// Adds `key`; returns its future (sharing the batch's allocation). `self`: the owning pointer of this batch.
  future<R> add(K key, const std::shared_ptr<deferred_base>& self) {
    keys_.push_back(std::move(key));
    element& e = elements_.emplace_back();
    e.batch = this;
    return future<R>(std::shared_ptr<layer::future_state<R>>(self, &e));
  }
  std::size_t size() const { return keys_.size(); }

  void launch(std::shared_ptr<deferred_base> self) override {
    table_->template send_deferred<Single>(owner_, std::static_pointer_cast<deferred_batch>(std::move(self)),
                                           std::move(keys_));
  }

  void arrive(std::vector<typename Single::wire>&& results, std::uint32_t) override {
    if (results.size() != elements_.size()) {
      fail(std::make_exception_ptr(error("shoal: a batch reply has the wrong number of results (corrupt stream)")));
      return;
    }
    std::size_t i = 0;
    for (element& e : elements_) {
      try {
        e.set_value(Convert{}(std::move(results[i++])));
      } catch (...) {
        e.set_error(std::current_exception());
      }
    }
  }
  void fail(std::exception_ptr e) override {
    for (element& el : elements_) el.set_error(e);
  }
  void abandon(std::exception_ptr e) override { fail(std::move(e)); }

 private:
  Table* table_;
  int owner_;
  std::vector<K> keys_;
  std::deque<element> elements_;  // a deque: the futures point into it while it grows
};

}  // namespace shoal::detail
