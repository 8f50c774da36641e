// shoal/am/team_scope.hpp — active messages sent on behalf of a team.
//
// Messages sent while a team_scope lives belong to its team: shoal::am::barrier(team) waits for them, and for the
// messages their handlers send, among the team's ranks only. A container on a team sends inside one, so that its
// quiescence barriers neither wait for other teams' traffic nor miss its own. Scopes nest (the innermost wins) and
// restore the previous team when they end. Local: no communication, two stores. Any rank, any time the active-message
// layer runs (a handler's own sends already belong to the team of the message it handles).
#pragma once

#include "shoal/am/detail/engine.hpp"
#include "shoal/core/team.hpp"

namespace shoal::am {

class team_scope {
 public:
  explicit team_scope(const shoal::team& t) : scope_(detail::get(), t.id()) {}
  team_scope(const team_scope&) = delete;
  team_scope& operator=(const team_scope&) = delete;

 private:
  detail::team_scope scope_;
};

}  // namespace shoal::am
