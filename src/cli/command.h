// Shared pieces of the tessera command line: each system registers its subcommands on
// the root CLI11 app; a subcommand's action returns a Status that main() turns into an
// exit code: 0 OK, 1 user error (one line on stderr), 2 internal error.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::cli {

// The action the parsed subcommand asked for; main() runs it after parsing.
using Action = std::function<core::Status()>;

// Parses repeated `--option key=value` flags into a map (InvalidArgument naming a bad one).
core::StatusOr<std::map<std::string, std::string>> ParseKeyValues(
    const std::vector<std::string>& kvs);

// Adds every system's subcommands (zellige, compass, xema, kernelflume, elaswave, tarot); main()
// and the option tests use it.
void AddAllCommands(CLI::App& root, Action* action);

// Adds `tessera zellige ...`; stores the chosen action in *action.
void AddZelligeCommands(CLI::App& root, Action* action);
// Adds `tessera zellige bench-planner` under the zellige subcommand.
void AddZelligeBenchPlanner(CLI::App* zellige, Action* action);
// Adds `tessera zellige run` (executes a plan's attention under MPI) under zellige.
void AddZelligeRun(CLI::App* zellige, Action* action);
// Adds `tessera zellige profile`, `validate` and `compare` (hardware profiler; MPI).
void AddZelligeProfile(CLI::App* zellige, Action* action);
void AddZelligeValidate(CLI::App* zellige, Action* action);
void AddZelligeCompare(CLI::App* zellige, Action* action);

// Adds `tessera compass ...` (TP communication/computation overlap).
void AddCompassCommands(CLI::App& root, Action* action);
// Adds `tessera compass topo` (a topology's links, rings and modeled collectives).
void AddCompassTopo(CLI::App* compass, Action* action);
void AddCompassPlan(CLI::App* compass, Action* action);
void AddCompassGrid(CLI::App* compass, Action* action);
// Adds `tessera compass links` (emulated links and collectives measured on MPI ranks).
void AddCompassLinks(CLI::App* compass, Action* action);
void AddCompassBench(CLI::App* compass, Action* action);
void AddCompassProfile(CLI::App* compass, Action* action);
void AddCompassRun(CLI::App* compass, Action* action);
// Adds `tessera xema ...` (memory-planned diffusion serving).
void AddXemaCommands(CLI::App& root, Action* action);
// Add `tessera xema intervals`, `layout` and `allocsim` (memory traces) under xema.
void AddXemaIntervals(CLI::App* xema, Action* action);
void AddXemaLayout(CLI::App* xema, Action* action);
void AddXemaAllocsim(CLI::App* xema, Action* action);
void AddXemaTrace(CLI::App* xema, Action* action);
void AddXemaCheck(CLI::App* xema, Action* action);
void AddXemaMitigate(CLI::App* xema, Action* action);
void AddXemaBench(CLI::App* xema, Action* action);
// Add `tessera xema serve` (the HTTP server) and `loadgen` (open-loop load against it).
void AddXemaServe(CLI::App* xema, Action* action);
void AddXemaLoadgen(CLI::App* xema, Action* action);
void AddXemaAbuse(CLI::App* xema, Action* action);
void AddXemaPlan(CLI::App* xema, Action* action);
void AddXemaDeployed(CLI::App* xema, Action* action);

// Adds `tessera kernelflume ...` (disaggregated core attention for LLM decoding).
void AddKernelFlumeCommands(CLI::App& root, Action* action);
void AddKernelFlumeGenerate(CLI::App* kernelflume, Action* action);
void AddKernelFlumeAttnNode(CLI::App* kernelflume, Action* action);
void AddKernelFlumeLoadModel(CLI::App* kernelflume, Action* action);
void AddKernelFlumeServe(CLI::App* kernelflume, Action* action);
void AddKernelFlumeAbuse(CLI::App* kernelflume, Action* action);
void AddKernelFlumeCost(CLI::App* kernelflume, Action* action);
// Adds the `tessera kernelflume trace` group: `trace gen` and `trace stats`.
void AddKernelFlumeTrace(CLI::App* kernelflume, Action* action);
// `tessera kernelflume simulate`: the fleet simulator (kernelflume/fleet_sim.h).
void AddKernelFlumeSimulate(CLI::App* kernelflume, Action* action);
// `tessera kernelflume replay`: a scaled trace on real processes against the engine simulator.
void AddKernelFlumeReplay(CLI::App* kernelflume, Action* action);
void AddKernelFlumeBenchElastic(CLI::App* bench, Action* action);
// Add benchmarks under the `tessera kernelflume bench` group (commands.cc makes the group).
void AddKernelFlumeBenchPipeline(CLI::App* bench, Action* action);
void AddKernelFlumeBenchScale(CLI::App* bench, Action* action);

// Adds `tessera elaswave ...` (elastic training that survives losing ranks).
void AddElasWaveCommands(CLI::App& root, Action* action);
void AddElasWaveRun(CLI::App* elaswave, Action* action);
void AddElasWaveBench(CLI::App* elaswave, Action* action);
void AddElasWaveCommBench(CLI::App* elaswave, Action* action);
void AddElasWavePlan(CLI::App* elaswave, Action* action);
// `elaswave worker` and `elaswave coordinator`: the processes `run` starts; `elaswave
// comm-bench-peer`: those `comm-bench` starts.
void AddElasWaveProcesses(CLI::App* elaswave, Action* action);

// Adds `tessera tarot ...` (training-free referring-expression segmentation).
void AddTarotCommands(CLI::App& root, Action* action);
void AddTarotScenes(CLI::App* tarot, Action* action);
void AddTarotRun(CLI::App* tarot, Action* action);
void AddTarotBench(CLI::App* tarot, Action* action);

}  // namespace tessera::cli
