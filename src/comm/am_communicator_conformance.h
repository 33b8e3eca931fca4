// Elastic checks for AmCommunicator (am_communicator.h), test support only. Each check builds
// its own worlds -- one transport from `factory` and one AmWorld per rank, ranks
// being threads of this process -- so the same checks run on the "fake" and the "ucx"
// transport (am_communicator_test.cc). A peer "dies" by AmWorld::KillForTest (its transport is
// destroyed without a goodbye; its peers see the failure as they would a killed process).
//
// Waits are bounded by kAmCommHangGuardS, used only to turn a hang into a failure: no check
// bounds how fast anything happens. A check returns OK or Internal listing what failed, with
// the rank (thread) that saw it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/am_communicator.h"
#include "comm/am_world.h"

namespace tessera::comm::testing {

inline constexpr double kAmCommHangGuardS = 60.0;

using AmTransportFactory = std::function<StatusOr<std::unique_ptr<AmTransport>>()>;

// A world over a transport from `factory`, listening on 127.0.0.1 (any port).
StatusOr<std::shared_ptr<AmWorld>> MakeAmWorld(const AmTransportFactory& factory, int id,
                                               AmAddressBook book = {});
// One world per id in `ids` (each with the full address book), connected full mesh.
StatusOr<std::vector<std::shared_ptr<AmWorld>>> MakeConnectedAmWorlds(
    const AmTransportFactory& factory, const std::vector<int>& ids);
// Runs fn(i) for i in [0, n) on one thread each, joins them, returns each status.
std::vector<Status> RunOnThreads(int n, const std::function<Status(int)>& fn);
// OK, or Internal joining the failures as "thread i: ...".
Status AllOk(const std::vector<Status>& results);
// Every Communicator conformance check of conformance.h, in order, on `comm` (collective).
Status RunConformance(Communicator& comm, uint64_t seed);

// A member that dies while the others wait -- in collectives and in a receive from a LIVE
// member -- makes every survivor fail with Unavailable naming its world id; the communicator is
// broken; the survivors Reconfigure (new order, epoch + 1) and pass every conformance check.
Status CheckDeathFailsEveryWaiterThenSurvivorsReconfigure(const AmTransportFactory& factory);
// After a death, sub-communicators without the dead member keep working; those with it fail.
Status CheckGroupsWithoutTheDeadKeepWorking(const AmTransportFactory& factory);
// MarkDead (a hung peer) fails the waiters the same way and naming the reason; frames the
// hung peer sends later are dropped; the others reconfigure without it.
Status CheckMarkDeadFailsWaiters(const AmTransportFactory& factory);
// A frame of an older epoch is dropped (counted), one of a newer epoch waits for Reconfigure.
Status CheckEpochFiltering(const AmTransportFactory& factory);
// Reconfigure refuses a stale epoch (naming both epochs) and bad member lists, and the
// communicator stays usable; a second live communicator with the same members needs its own
// group id.
Status CheckReconfigureRefusals(const AmTransportFactory& factory);
// A joiner connects itself (AmWorld::Join); a Reconfigure that adds it works.
Status CheckJoinerIsAdmitted(const AmTransportFactory& factory);
// A member that closes its world (goodbye) is not dead: finished operations stay good, groups
// without it keep working, a receive from it fails with Unavailable "left".
Status CheckGracefulLeave(const AmTransportFactory& factory);
// After a death: RebuildPartial (real reconnects), then RebuildFull (fresh transports, new
// addresses exchanged), each followed by correct collectives.
Status CheckRebuildBaselines(const AmTransportFactory& factory);

struct NamedAmCommCheck {
  std::string name;
  std::function<Status(const AmTransportFactory&)> fn;
};
std::vector<NamedAmCommCheck> AmCommElasticChecks();

}  // namespace tessera::comm::testing
