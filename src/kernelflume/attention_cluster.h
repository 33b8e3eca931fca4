// AttentionCluster: a weight node and the attention nodes it uses, started together on this
// machine -- what `tessera kernelflume generate` runs and what the tests and benchmarks use.
//
// Two ways to run the nodes:
//   in-process  each node is an AttentionNode object with its own transport in this process
//               (its work runs on that transport's progress thread) -- tests, `--transport
//               fake`, and ucx in one process;
//   processes   each node is a child process started from `node_command` plus
//               `--connect ADDR --id I --capacity-tokens C --page-tokens P --fingerprint F
//               --transport T` (the CLI passes `tessera kernelflume attn-node`); a child that
//               exits before joining fails Start with its exit code and last stderr line.
// Start returns once every node has joined (or fails naming what did not); AddNode starts one
// more while requests decode (KernelFlume's scale-out). KillNode simulates a node failure
// (destroys the in-process node / SIGKILLs the process). The destructor sends
// kShutdown, waits briefly for processes to exit and kills any that do not.
// Thread-safety: AddNode, KillNode, num_started and node_stats may be called from any thread
// (one lock); Start and the destructor from one.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/child_process.h"
#include "core/status.h"
#include "kernelflume/attention_node.h"
#include "kernelflume/weight_node.h"

namespace tessera::kernelflume {

struct AttentionClusterOptions {
  int num_nodes = 1;                      // 1..64
  std::string transport = "fake";         // "fake" | "ucx"
  bool processes = false;                 // nodes as child processes (ucx only)
  std::vector<std::string> node_command;  // argv prefix of an attention-node process
  int64_t capacity_tokens = 1 << 20;      // per node
  int32_t page_tokens = 256;
  double join_timeout_s = 60;
  WeightNodeOptions weight_node;
};

class AttentionCluster {
 public:
  static core::StatusOr<std::unique_ptr<AttentionCluster>> Start(
      const AttentionShape& shape, const std::string& fingerprint,
      const AttentionClusterOptions& options);
  ~AttentionCluster();

  WeightNode& weight_node() { return *weight_node_; }
  int num_nodes() const { return options_.num_nodes; }  // started by Start
  const AttentionClusterOptions& options() const { return options_; }
  int num_started() const;  // including AddNode's
  // Starts one more node (id = num_started()) while the weight node serves, and returns its id
  // once it has joined (a child that exits first fails naming its exit code).
  core::StatusOr<int> AddNode();
  // Simulates the failure of node `index` (0-based; = its id).
  void KillNode(int index);
  // Statistics of the in-process nodes (empty for processes).
  std::vector<AttentionNodeStats> node_stats() const;

 private:
  AttentionCluster(const AttentionClusterOptions& options, std::string fingerprint)
      : options_(options), fingerprint_(std::move(fingerprint)) {}
  core::Status CheckChildren() const;
  core::Status StartNode(int id);

  AttentionClusterOptions options_;
  std::string fingerprint_;
  std::set<int> killed_;             // children killed on purpose
  mutable std::recursive_mutex mu_;  // guards nodes_, children_, killed_
  std::unique_ptr<WeightNode> weight_node_;
  std::vector<std::unique_ptr<AttentionNode>> nodes_;          // in-process
  std::vector<std::unique_ptr<core::ChildProcess>> children_;  // processes
};

}  // namespace tessera::kernelflume
