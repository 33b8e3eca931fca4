// Self-launch under MPI: `tessera zellige profile --ranks 2 ...` typed at a shell re-runs
// itself as `mpiexec -np 2 tessera zellige profile --ranks 2 ...`, so users need not type
// mpirun. Inside an MPI job (OMPI_COMM_WORLD_SIZE set) nothing is relaunched.
//
// Launcher flags: --oversubscribe, shared-memory transport (btl self,vader; large messages
// copied once with cross-memory attach (process_vm_readv) when a probe shows this machine
// allows it, else through shared-memory FIFOs, since containers often forbid it), --bind-to
// core when the ranks fit the machine's cores, else --bind-to none. As root it sets
// OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM), which OpenMPI requires to start at all. Not thread-safe (call
// from main's thread).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/status.h"

namespace tessera::cli {

// Records main's argv (call once, first thing in main).
void SetProgramArgs(int argc, char** argv);

// True when this process is a rank of an MPI job started by mpirun/mpiexec.
bool InsideMpiJob();

// If not InsideMpiJob(), replaces this process by mpiexec running the same command line with
// `ranks` ranks (does not return on success); returns an error if exec fails. Inside a job
// it returns Ok and the caller checks the world size.
core::Status RelaunchUnderMpi(int ranks);

// The common frame of an MPI subcommand: RelaunchUnderMpi(ranks); start MPI; check the world
// has `ranks` ranks; op timeout; one BLAS thread per rank; run body on every rank; a
// communication failure (DeadlineExceeded, Unavailable) aborts the whole job so no rank hangs.
core::Status RunMpiJob(int ranks, double op_timeout_s,
                       const std::function<core::Status(comm::Communicator& world)>& body);

}  // namespace tessera::cli
